"""`ecgw serve` with an unreachable metering database stops at start with a clear message, password hidden."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_serve_refuses_to_start_without_its_database(tmp_path: Path) -> None:
    # Several workers (the default on a multi-core machine) and the privacy audit on: the check runs once,
    # before any worker starts.
    config = {"server": {"port": 1, "workers": 2}, "database_url": "postgresql://ops:hunter2@127.0.0.1:1/metering",
              "sessions": {"sqlite_path": str(tmp_path / "s.sqlite3")}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--config", str(tmp_path / "c.yaml")],
                          cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 1
    assert "cannot use the metering database at postgresql://ops:***@127.0.0.1:1/metering" in output
    assert "hunter2" not in output and "Traceback" not in output
