"""Where the benchmark data lives: ``$ECGW_ACEBENCH_DIR``, else ``<repo>/../shared/acebench``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_VAR = "ECGW_ACEBENCH_DIR"


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def acebench_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    configured = env.get(ENV_VAR)
    return Path(configured) if configured else repo_root().parent / "shared" / "acebench"


def suite_dir() -> Path:
    """The project's own small suite, ``<repo>/eval_suite``."""
    return repo_root() / "eval_suite"
