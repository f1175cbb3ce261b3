"""A real ``ecgw serve`` killed with -9 while its database would not take a write: every receipt its clients hold
still has its audit record (the receipt's row, and the call's with its sealed body) once it is started again, the
trail verifies, and every request that completed has its metering (its settlement mark and its records)."""

from __future__ import annotations

import secrets
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from accounting.database import make_engine
from accounting.store import UsageStore
from benchmarks.contenders import free_port
from gateway.state.keys import Keys
from privacy.audit import ChainSigner, verify_trail
from privacy.audit.receipts import parse
from tests.fakes.model_server import ModelServer
from tests.processes import serve, wait_healthy

MAIL = "Write to dave.kowalski@example.com about invoice 4471, then copy erin.blake@example.org."


@contextmanager
def _writes_refused(path: Path) -> Iterator[None]:
    """Another connection holds SQLite's write lock: the gateway's writers keep their records, retrying."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _ask(base: str, n: int, stream: bool) -> tuple[str, list[str]]:
    body = {"model": "ecgw/cloud-only", "stream": stream, "messages": [{"role": "user", "content": f"{MAIL} ({n})"}]}
    headers = {"X-Session-Id": f"kill-{n % 3}"}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, headers=headers, timeout=30) as response:
        answer = response.read().decode()
    assert response.status_code == 200, answer
    assert not stream or "data: [DONE]" in answer
    return response.headers["x-ecgw-request-id"], response.headers["x-ecgw-egress-receipt"].split(",")


def _missing(database: Path, receipts: list[str]) -> dict[str, list[str]]:
    """The receipts whose row, and the calls whose row, the audit does not hold."""
    with make_engine(f"sqlite:///{database}").connect() as conn:
        tables = {row[0] for row in conn.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))}
        tokens = ({row[0] for row in conn.execute(text("SELECT token FROM privacy_receipt"))}
                  if "privacy_receipt" in tables else set())
        calls = {row[0] for row in conn.execute(text("SELECT id FROM privacy_call"))} if "privacy_call" in tables else set()
    return {"receipts": [t for t in receipts if t not in tokens],
            "calls": [c for c in (parse(t)[1]["call"] for t in receipts) if c not in calls]}


def test_a_gateway_killed_with_9_keeps_every_receipted_record_and_the_metering_of_finished_requests(
        tmp_path: Path, edge: ModelServer, cloud: ModelServer) -> None:
    master = secrets.token_bytes(32)
    (tmp_path / "ecgw.key").write_text(master.hex() + "\n")
    (tmp_path / "ecgw.key").chmod(0o600)
    database, port = tmp_path / "gw.sqlite3", free_port()
    config: dict[str, Any] = {
        "server": {"port": port, "workers": 1},
        "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},  # type: ignore[attr-defined]
        "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1", "api_key_env": None},  # type: ignore[attr-defined]
        "sessions": {"sqlite_path": str(tmp_path / "sessions.sqlite3")},
        "database_url": f"sqlite:///{database}",
        "privacy": {"layers": {"ner": False}, "audit_spill_path": str(tmp_path / "audit-spill.jsonl")},
        "accounting": {"spill_path": str(tmp_path / "usage-spill.jsonl")},
        "secrets": {"key_file": str(tmp_path / "ecgw.key")},
    }
    base = f"http://127.0.0.1:{port}"
    process = serve(config, tmp_path / "gw.yaml")
    try:
        wait_healthy(base, process, timeout_s=300)  # a loaded CI machine starts a gateway slowly
        _ask(base, -1, False)  # the schema exists and the first checkpoint is signed
        with _writes_refused(database):
            answered = [_ask(base, n, stream=n % 2 == 1) for n in range(6)]
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        receipts = [token for _, tokens in answered for token in tokens]
        assert len(receipts) == 6
        assert _missing(database, receipts) == {"receipts": receipts,
                                                "calls": [parse(t)[1]["call"] for t in receipts]}
        process = serve(config, tmp_path / "gw.yaml")  # the same machine starts it again
        wait_healthy(base, process, timeout_s=300)  # a loaded CI machine starts a gateway slowly
        process.send_signal(signal.SIGTERM)  # a clean stop writes what the start took from the journals
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _missing(database, receipts) == {"receipts": [], "calls": []}
    report = verify_trail(make_engine(f"sqlite:///{database}"), ChainSigner(Keys(master, "test").derive("audit-sign")).public)
    assert report.intact, report.breaks
    store = UsageStore.from_url(f"sqlite:///{database}")
    try:
        settled = store.settlement([request_id for request_id, _ in answered])
    finally:
        store.dispose()
    assert {rid: (expected, stored) for rid, (expected, stored) in settled.items()} == {
        rid: (1, 1) for rid, _ in answered}
    assert not [p.name for p in tmp_path.glob("*.journal.*")], "a clean stop leaves no journal behind"
