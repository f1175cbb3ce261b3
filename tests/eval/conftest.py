"""Fixtures for eval/: the benchmark data (read in place, never copied) and the project's own suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.paths import acebench_dir, suite_dir


@pytest.fixture(scope="session")
def acebench() -> Path:
    path = acebench_dir()
    if not (path / "tasks").is_dir():
        pytest.skip(f"AceBench data not found at {path}; set ECGW_ACEBENCH_DIR")
    return path


@pytest.fixture(scope="session")
def suite() -> Path:
    return suite_dir()
