"""`make lint`'s import contracts have teeth: a module that reaches for the cloud transport, or a lower layer
that imports a higher one, or a circle between modules (even through an import inside a function), breaks them.
Checked on a copy of the packages, never on the tree itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gateway", "router", "privacy", "accounting", "eval")


def _lint_with(tmp_path: Path, module: str, source: str, *, append: bool = False) -> subprocess.CompletedProcess[str]:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if module:
        before = (tmp_path / module).read_text(encoding="utf-8") if append else ""
        (tmp_path / module).write_text(before + source, encoding="utf-8")
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint)], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint_with(tmp_path, "", "")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("module", "source", "broken"), [
    ("gateway/surfaces/sneaky.py", "from gateway.egress.transports.cloud import LiteLLMUpstream\n",
     "gateway.surfaces is not allowed to import gateway.egress.transports.cloud"),
    ("router/sneaky.py", "import litellm\n", "router is not allowed to import litellm"),
    ("privacy/sneaky.py", "from gateway.routes.health import authenticate\n", "privacy is not allowed to import gateway"),
    ("eval/sneaky.py", "from router.channels import CloudChannel\n", "eval is not allowed to import router"),
])
def test_a_forbidden_import_breaks_lint(tmp_path: Path, module: str, source: str, broken: str) -> None:
    result = _lint_with(tmp_path, module, source)
    assert result.returncode != 0
    assert broken in result.stdout, result.stdout


@pytest.mark.parametrize(("module", "source", "broken"), [
    # the circle the audit once hid: tables → (a function's import) → the audit side → … → tables
    ("privacy/audit/tables.py", "\n\ndef _later() -> None:\n    from privacy.audit.audited import AuditedUnits\n",
     "privacy.audit.tables is not allowed to import privacy.audit.audited"),
    ("privacy/audit/migrations.py", "\n\ndef _today() -> None:\n    from privacy.audit.store import AuditStore\n",
     "privacy.audit.migrations is not allowed to import privacy.audit.store"),
    ("router/channels.py", "\nfrom router.step import Step\n", "router.channels is not allowed to import router.step"),
    # the pools know the Upstream protocol they hold, not the channels that call them (once a types-only circle)
    ("router/upstreams.py", "\n\ndef _up() -> None:\n    from router.channels import CloudChannel\n",
     "router.upstreams is not allowed to import router.channels"),
    ("privacy/detect/units.py", "\n\ndef _up() -> None:\n    from privacy.protector import PrivacyProtector\n",
     "privacy.detect is not allowed to import privacy.protector"),
    # detection below the core and the audit, even for a module the core's layers do not name
    ("privacy/detect/labels.py", "\n\ndef _up() -> None:\n    from privacy.vault import Vault\n",
     "privacy.detect is not allowed to import privacy.vault"),
    ("privacy/detect/ner.py", "\n\ndef _up() -> None:\n    from privacy.audit.store import AuditStore\n",
     "privacy.detect is not allowed to import privacy.audit"),
    # the last check's own layers: how a body is read knows nothing of the verdict
    ("privacy/lastcheck/leaves.py", "\n\ndef _up() -> None:\n    from privacy.lastcheck.verdict import LastCheck\n",
     "privacy.lastcheck.leaves is not allowed to import privacy.lastcheck.verdict"),
    # no circle anywhere: the one gateway/ had (the supervisor's reload importing the app's builders, the app
    # importing the reloader), and one between two modules of a package no other contract names
    ("gateway/live/reload.py", "\n\ndef _builders() -> None:\n    from gateway.app import create_app\n",
     "No cycles are allowed in gateway"),
    # gateway/ points one way: the sessions below the live configuration, even inside a function
    ("gateway/state/sessions.py", "\n\ndef _up() -> None:\n    from gateway.live.snapshot import Snapshot\n",
     "gateway.state is not allowed to import gateway.live"),
    ("accounting/usage.py", "\n\ndef _up() -> None:\n    from accounting.writer import StoreMeter\n",
     "No cycles are allowed in accounting"),
])
def test_a_planted_circle_breaks_lint(tmp_path: Path, module: str, source: str, broken: str) -> None:
    result = _lint_with(tmp_path, module, source, append=True)
    assert result.returncode != 0
    assert broken in " ".join(result.stdout.split()), result.stdout
