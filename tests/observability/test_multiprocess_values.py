"""A serve that ends in its own process leaves the metrics as it found them: multiprocess mode (several workers)
is the serve's, not the process's."""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, values

from gateway.cli.main import main
from gateway.telemetry.metrics import MULTIPROC_ENV


def test_a_refused_multi_worker_serve_leaves_in_process_metrics_working(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    before = values.ValueClass
    config = tmp_path / "c.yaml"
    config.write_text(f"server: {{workers: 2}}\nsessions: {{sqlite_path: {tmp_path / 's.sqlite3'}}}\n"
                      f"database_url: sqlite:///{tmp_path / 'm.sqlite3'}\nsecrets: {{key_env: ECGW_TEST_NO_KEY}}\n")
    monkeypatch.delenv("ECGW_TEST_NO_KEY", raising=False)
    assert main(["serve", "--config", str(config)]) == 2  # refused after entering multiprocess mode
    assert "secrets.key_env" in capsys.readouterr().err
    assert values.ValueClass is before and MULTIPROC_ENV not in os.environ
    counter = Counter("after_serve", "a metric made after the serve", registry=CollectorRegistry())
    counter.inc()  # with the mode left on: FileNotFoundError (its directory was removed)
    assert counter._value.get() == 1  # noqa: SLF001
