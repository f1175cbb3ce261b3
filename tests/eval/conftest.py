"""Fixtures for eval/: the benchmark data (read in place, never copied) and the project's own suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.paths import suite_dir
from tests.real_parts import acebench_data


@pytest.fixture(scope="session")
def acebench() -> Path:
    return acebench_data()


@pytest.fixture(scope="session")
def suite() -> Path:
    return suite_dir()
