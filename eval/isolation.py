"""Per-run isolation: the run's workspace mounted at ``/tmp_workspace`` in a mount namespace of its own.

AceBench's prompts, warm-up lines and graders name ``/tmp_workspace``. With a private mount namespace per
process tree (``unshare --mount`` + ``mount --bind <run dir> /tmp_workspace``) every run sees *its* workspace at
that path, so runs go in parallel without seeing each other and nothing is rewritten: the agent's ``exec``
commands, the task's warm-up services and the grader all run inside the run's namespace. (The harness's own
``read``/``write``/``edit``/``ls`` tools run in the harness process and map ``/tmp_workspace`` to the run's
directory, which is the same files.)

Needs: root (or ``CAP_SYS_ADMIN``), ``unshare`` from util-linux, and an existing mount point ``/tmp_workspace``
(created empty on first use when it is missing). In a container without ``--privileged`` / ``CAP_SYS_ADMIN``,
or without root, namespaces are unavailable and the harness falls back to **path rewriting**: the workspace is
an ordinary directory and every ``/tmp_workspace`` in tool paths, commands and warm-up lines is rewritten to
it; graders get the real directory as ``workspace_path``. Parallel runs are still separate directories, but a
grader or a script that hard-codes ``/tmp_workspace`` inside a file it reads will not find its files — for the
benchmark's own tasks use namespaces or the official Docker harness (``ecgw eval acebench``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from eval.tools import DEFAULT_ALIAS

Mode = Literal["auto", "namespace", "rewrite"]

# sh -c SCRIPT root alias cwd argv...: bind the run's directory over the alias in this (new) mount namespace,
# enter the working directory, then become the command (exec: same pid, so process-group signals still reach it)
_ENTER = 'mount --bind "$0" "$1" || exit 125; cd "$2" || exit 125; shift 2; exec "$@"'


class Isolation(Protocol):
    @property
    def name(self) -> str: ...

    def wrap(self, argv: list[str], *, root: Path, cwd: str) -> list[str]:
        """``argv`` as a command that sees ``root`` at the alias and starts in ``cwd`` (a path as the run sees it)."""
        ...


@dataclass(frozen=True)
class MountNamespace:
    alias: str = DEFAULT_ALIAS
    unshare: str = "unshare"
    name: str = "mount-namespace"

    def wrap(self, argv: list[str], *, root: Path, cwd: str) -> list[str]:
        return [self.unshare, "--mount", "--propagation", "private", "--", "sh", "-c", _ENTER, str(root),
                self.alias, cwd, *argv]


@dataclass(frozen=True)
class PathRewriting:
    """The fallback: no wrapping; ``eval.tools.Workspace`` rewrites the alias to the run's directory."""

    name: str = "path-rewriting"

    def wrap(self, argv: list[str], *, root: Path, cwd: str) -> list[str]:
        return argv


_probe_lock = threading.Lock()
_probed: dict[str, str | None] = {}


def namespace_problem(alias: str = DEFAULT_ALIAS) -> str | None:
    """None when a private mount namespace with a bind mount over ``alias`` works here; else why not (once per
    process and alias)."""
    with _probe_lock:
        if alias not in _probed:
            _probed[alias] = _probe(alias)
        return _probed[alias]


def _probe(alias: str) -> str | None:
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    mount_point = Path(alias)
    if not mount_point.is_dir():
        try:
            mount_point.mkdir(parents=True, exist_ok=True)  # the mount point; stays empty outside namespaces
        except OSError as exc:
            return f"mount point {alias} is missing and cannot be created ({exc.strerror or exc})"
    with tempfile.TemporaryDirectory(prefix="ecgw-ns-probe-") as tmp:
        (Path(tmp) / "probe").write_text("ok", encoding="utf-8")
        command = MountNamespace(alias).wrap(["cat", f"{alias}/probe"], root=Path(tmp), cwd="/")
        try:
            done = subprocess.run(command, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unshare --mount failed ({exc})"
    if done.returncode != 0 or done.stdout != b"ok":
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return (f"unshare --mount + mount --bind failed (exit {done.returncode}: "
                f"{detail[-1] if detail else 'no message'}); needs root or CAP_SYS_ADMIN")
    return None


def choose(mode: Mode, alias: str = DEFAULT_ALIAS) -> tuple[Isolation, str | None]:
    """The isolation for ``mode``, and why namespaces are not used when they are not (``auto`` falls back;
    ``namespace`` raises when they are unavailable)."""
    if mode == "rewrite":
        return PathRewriting(), "path rewriting requested"
    problem = namespace_problem(alias)
    if problem is None:
        return MountNamespace(alias), None
    if mode == "namespace":
        raise RuntimeError(f"per-run mount namespaces are unavailable: {problem}")
    return PathRewriting(), problem
