"""The agent's tools — ``read``, ``write``, ``edit``, ``exec``, ``ls`` — with OpenClaw's semantics, confined to
one run's workspace.

The task prompts and graders speak of ``/tmp_workspace``. When the run has its own mount namespace the
workspace *is* mounted there and ``alias == root``; otherwise (the fallback) the workspace is an ordinary
directory and every path and command that mentions ``/tmp_workspace`` is rewritten to that directory.

Semantics (OpenClaw / pi-coding-agent): ``read`` returns lines from a 1-based ``offset`` up to ``limit`` lines
(2000 by default, 50 KB at most) and says how to continue; ``write`` creates parent folders and overwrites;
``edit`` replaces one exact, unique occurrence of ``oldText``; ``exec`` runs a shell command in the workspace
and returns combined output (tail-truncated) with the exit code when it is not 0; ``ls`` lists a folder,
folders with a trailing ``/``. Parameter aliases ``file_path``, ``old_string``/``new_string`` and ``cmd`` are
accepted. Errors come back as error results for the model, never as exceptions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_ALIAS = "/tmp_workspace"
Wrap = Callable[[list[str], str], list[str]]  # (argv, working directory as the run sees it) → argv to execute
MAX_LINES = 2000
MAX_BYTES = 50 * 1024
LS_LIMIT = 500


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False


class ToolError(Exception):
    pass


def _spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


TOOL_SPECS: list[dict[str, Any]] = [
    _spec("read", "Read a text file. Output is truncated to 2000 lines or 50KB; use offset/limit for more.",
          {"path": {"type": "string", "description": "Path of the file (relative or absolute)"},
           "offset": {"type": "integer", "description": "Line number to start from (1-indexed)"},
           "limit": {"type": "integer", "description": "Maximum number of lines to read"}}, ["path"]),
    _spec("write", "Write content to a file, creating parent folders; overwrites an existing file.",
          {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
    _spec("edit", "Replace one exact occurrence of oldText with newText in a file; oldText must be unique.",
          {"path": {"type": "string"}, "oldText": {"type": "string"}, "newText": {"type": "string"}},
          ["path", "oldText", "newText"]),
    _spec("exec", "Run a shell command in the workspace; returns stdout and stderr.",
          {"command": {"type": "string"}, "workdir": {"type": "string"},
           "timeout": {"type": "number", "description": "Seconds before the command is killed"}}, ["command"]),
    _spec("ls", "List a directory (folders end with '/').",
          {"path": {"type": "string"}, "limit": {"type": "integer"}}, []),
]


def _first(args: Mapping[str, Any], *names: str, required: bool = True) -> Any:
    for name in names:
        if name in args and args[name] is not None:
            return args[name]
    if required:
        raise ToolError(f"missing required argument: {names[0]}")
    return None


def _truncate_tail(text: str) -> str:
    lines = text.splitlines()
    note = ""
    if len(lines) > MAX_LINES:
        note = f"[output truncated: showing the last {MAX_LINES} of {len(lines)} lines]\n"
        lines = lines[-MAX_LINES:]
    out = "\n".join(lines)
    if len(out.encode()) > MAX_BYTES:
        out = out.encode()[-MAX_BYTES:].decode(errors="ignore")
        note = f"[output truncated to the last {MAX_BYTES} bytes]\n"
    return note + out


class Workspace:
    """One run's workspace: ``root`` on disk, known to the agent as ``alias``."""

    def __init__(self, root: Path, *, alias: str = DEFAULT_ALIAS, exec_timeout_s: float = 120.0,
                 env: Mapping[str, str] | None = None, wrap: Wrap | None = None) -> None:
        """``wrap(argv, cwd)``: run commands in the run's mount namespace, where the workspace *is* at ``alias``
        (``eval.isolation``); commands are then not rewritten. Without it every ``alias`` in a command is
        rewritten to ``root`` (the fallback)."""
        self.root = root.resolve()
        self.alias = alias.rstrip("/")
        self.exec_timeout_s = exec_timeout_s
        self.env = dict(os.environ if env is None else env)
        self.wrap = wrap
        self._tools: dict[str, Callable[[Mapping[str, Any]], str]] = {
            "read": self.read, "write": self.write, "edit": self.edit, "exec": self.exec, "ls": self.ls}

    @property
    def translated(self) -> bool:
        return str(self.root) != self.alias

    def translate(self, text: str) -> str:
        return text.replace(self.alias, str(self.root)) if self.translated else text

    def resolve(self, path: str) -> Path:
        raw = Path(self.translate(os.path.expanduser(path)))
        target = (raw if raw.is_absolute() else self.root / raw).resolve()
        if target != self.root and self.root not in target.parents:
            raise ToolError(f"path {path!r} is outside the workspace {self.alias}")
        return target

    def shown(self, path: Path) -> str:
        return self.alias + str(path)[len(str(self.root)):] if self.translated else str(path)

    def shell(self, command: str, cwd: Path | None = None) -> list[str]:
        """``bash -c command`` as this run executes it: inside its namespace, or with the alias rewritten."""
        if self.wrap is None:
            return ["bash", "-c", self.translate(command)]
        return self.wrap(["bash", "-c", command], self.shown(cwd or self.root))

    # the tools ---------------------------------------------------------------------------------------------

    def call(self, name: str, arguments: str | Mapping[str, Any]) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(f"Tool {name} not found. Available tools: {', '.join(self._tools)}", True)
        try:
            args = json.loads(arguments or "{}") if isinstance(arguments, str) else dict(arguments)
            if not isinstance(args, dict):
                raise ToolError("arguments must be a JSON object")
            return ToolResult(tool(args))
        except json.JSONDecodeError as exc:
            return ToolResult(f"Invalid JSON arguments for {name}: {exc}", True)
        except ToolError as exc:
            return ToolResult(str(exc), True)
        except OSError as exc:
            return ToolResult(f"{name} failed: {exc.strerror or exc}", True)
        except UnicodeDecodeError:
            return ToolResult(f"{name} failed: the file is not UTF-8 text", True)
        except (ValueError, TypeError) as exc:  # e.g. "offset": "ten": the model can correct itself
            return ToolResult(f"Invalid arguments for {name}: {exc}", True)

    def read(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(str(_first(args, "path", "file_path")))
        if not path.is_file():
            raise ToolError(f"File not found: {self.shown(path)}")
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        offset = max(int(_first(args, "offset", required=False) or 1), 1)
        limit = min(int(_first(args, "limit", required=False) or MAX_LINES), MAX_LINES)
        if offset > max(len(lines), 1):
            raise ToolError(f"Offset {offset} is beyond end of file ({len(lines)} lines total)")
        chunk = lines[offset - 1: offset - 1 + limit]
        out: list[str] = []
        size = 0
        for line in chunk:
            size += len(line.encode()) + 1
            if size > MAX_BYTES:
                break
            out.append(line)
        end = offset - 1 + len(out)
        text = "\n".join(out)
        if end < len(lines):
            text += f"\n\n[{len(lines) - end} more lines in file. Use offset={end + 1} to continue]"
        return text

    def write(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(str(_first(args, "path", "file_path")))
        content = str(_first(args, "content"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return f"Successfully wrote {len(content.encode())} bytes to {self.shown(path)}"

    def edit(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(str(_first(args, "path", "file_path")))
        old = str(_first(args, "oldText", "old_string", "old_str"))
        new = str(_first(args, "newText", "new_string", "new_str"))
        if not path.is_file():
            raise ToolError(f"File not found: {self.shown(path)}")
        text = path.read_text(encoding="utf-8")
        count = text.count(old) if old else 0
        if count == 0:
            raise ToolError(f"Could not find the exact text in {self.shown(path)}. The old text must match "
                            "exactly including all whitespace and newlines.")
        if count > 1:
            raise ToolError(f"Found {count} occurrences of the text in {self.shown(path)}. The text must be "
                            "unique. Please provide more context to make it unique.")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        return f"Successfully replaced text in {self.shown(path)}."

    def exec(self, args: Mapping[str, Any]) -> str:
        command = str(_first(args, "command", "cmd"))
        workdir_arg = _first(args, "workdir", "cwd", required=False)
        workdir = self.resolve(str(workdir_arg)) if workdir_arg else self.root
        # The model may ask for less time than the harness allows, never more.
        timeout = min(float(_first(args, "timeout", required=False) or self.exec_timeout_s), self.exec_timeout_s)
        # Output goes to a file, not a pipe: a background child (`server &`) would hold a pipe open until the
        # timeout. The command has its own process group: on timeout the whole group goes.
        with tempfile.TemporaryFile() as sink:
            process = subprocess.Popen(self.shell(command, workdir), cwd=workdir, env=self.env, stdout=sink,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                raise ToolError(f"Command timed out after {timeout:g} seconds") from None
            sink.seek(0)
            stdout = sink.read()
        done = subprocess.CompletedProcess(process.args, process.returncode, stdout, b"")
        output = _truncate_tail((done.stdout + done.stderr).decode(errors="replace")).rstrip("\n")
        if self.translated:
            output = output.replace(str(self.root), self.alias)
        if done.returncode != 0:
            output = (output + "\n\n" if output else "") + f"Command exited with code {done.returncode}"
            raise ToolError(output)
        return output or "(no output)"

    def ls(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(str(_first(args, "path", "file_path", required=False) or "."))
        if not path.is_dir():
            raise ToolError(f"Not a directory: {self.shown(path)}")
        limit = int(_first(args, "limit", required=False) or LS_LIMIT)
        entries = sorted(path.iterdir(), key=lambda p: p.name.lower())
        names = [p.name + ("/" if p.is_dir() else "") for p in entries[:limit]]
        if not names:
            return "(empty directory)"
        more = f"\n\n[{len(entries) - limit} more entries]" if len(entries) > limit else ""
        return "\n".join(names) + more


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
