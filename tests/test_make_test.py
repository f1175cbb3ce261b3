"""`make test` runs `make lint` and `make typecheck` before the suite, so ruff, the import contracts and
mypy --strict cannot lapse while the tests stay green."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_lints_and_typechecks_before_the_suite() -> None:
    plan = subprocess.run(["make", "-n", "-o", ".venv/.installed", "test"], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, check=True).stdout.splitlines()
    steps = [next(i for i, line in enumerate(plan) if needle in line)
             for needle in ("ruff check", "lint-imports", "mypy", "scripts/test.sh")]
    assert steps == sorted(steps), plan
