"""What the tamper-evident trail costs a cloud call: on the request path, the body's bytes serialised once, their
SHA-256, the receipt's claims (the body's placeholders counted by type) and its Ed25519 signature, and the hand-off
to the audit writer; off it, on the writer thread, chaining the receipt (its row and chain entry in one locked
transaction, SQLite file), alone and in a batch.

    python -m benchmarks.receipts      # appends its section to benchmarks/RESULTS.md (part of `make bench`)
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from accounting.database import make_engine
from benchmarks.results import append
from benchmarks.workload import FIRST, LAST, small_request, trajectory
from privacy.audit import AuditStore, AuditWriter, ChainSigner, ReceiptIssuer, body_bytes, placeholder_counts
from privacy.audit.receipts import CallReceipts

TARGET_MS = 0.3


def placeholders(body: dict[str, Any]) -> dict[str, str]:
    """The placeholders a scrub of ``body`` leaves, one per distinct email address, phone number and name of the
    workload's people (a patterns-only scrub of the agent step leaves 468): what the receipt counts by type."""
    text = body_bytes(body).decode()
    kinds = {"EMAIL_ADDRESS": r"[\w.]+@[\w.-]+\.\w+", "PHONE_NUMBER": r"\+1 \d{3}-555-\d{4}",
             "PERSON": rf"\b(?:{'|'.join(FIRST)}) (?:{'|'.join(LAST)})\b"}
    return {f"[{kind}_{n:03d}]": value for kind, pattern in kinds.items()
            for n, value in enumerate(sorted(set(re.findall(pattern, text))), 1)}


def _request_path_us(store: AuditStore, body: dict[str, Any], calls: int,
                     rounds: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """µs per cloud call, ``body_bytes``, the placeholders counted, one receipt issued (what the protector and the
    door do): the wall
    time of each call; and per round, the mean wall time, this thread's CPU time, the writer thread's CPU time. The
    CPU time is the request path's own: on a shared machine the wall time also holds waits for the cores, and for
    the GIL while the writer thread chains the receipts issued before (its CPU time, the process's less this
    thread's, is what it could take from the request path)."""
    assert store.anchor is not None
    writer = AuditWriter(store)
    issuer = ReceiptIssuer(store.anchor, writer)
    vault = placeholders(body)
    each: list[float] = []
    wall, cpu, chained = [], [], []
    for _ in range(rounds):
        t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        for n in range(calls):
            started = time.perf_counter()
            data = body_bytes(body)
            CallReceipts(issuer, call_id=f"c{n}", request_id=f"r{n}", session_id="t.bench/s", body=body, data=data,
                         placeholders=placeholder_counts(vault), raw_units=(),
                         verdict="replaced", classes={"contact": {"pseudonymised": 2, "raw": 0}}
                         ).issue("primary", body, tier="standard")
            each.append((time.perf_counter() - started) * 1e6)
        cpu.append((time.thread_time() - c0) / calls * 1e6)
        wall.append((time.perf_counter() - t0) / calls * 1e6)
        writer.flush()  # every receipt of the round chained
        chained.append(((time.process_time() - p0) - (time.thread_time() - c0)) / calls * 1e6)
    writer.close()
    return each, wall, cpu, chained


def _chaining_us(store: AuditStore, records: int, batch: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per receipt chained as the writer thread does it: ``batch`` records a transaction (1: an
    idle gateway, each receipt alone; more: what queued up while the last transaction was written). The CPU time
    is what the writer thread holds the GIL for, less the SQLite calls that release it."""
    signer = ChainSigner(bytes(32))
    rows = [{"kind": "receipt", "row": {"id": f"x{batch}-{n}", "call_id": f"c{n}", "request_id": f"r{n}",
                                        "session_id": "t.bench/s", "created_at": 1.0 + n, "target": "primary",
                                        "token": "h.c." + signer.sign(b"%d" % n)}}
            for n in range(records)]
    t0, c0 = time.perf_counter(), time.thread_time()
    for start in range(0, records, batch):
        store.apply_many(rows[start:start + batch])
    return (time.perf_counter() - t0) / records * 1e6, (time.thread_time() - c0) / records * 1e6


def measure(calls: int = 500, rounds: int = 5, records: int = 200) -> dict[str, Any]:
    agent = trajectory()[-1]
    out: dict[str, Any] = {"agent_body_bytes": len(body_bytes(agent)), "small_body_bytes": len(body_bytes(
        small_request())), "agent_placeholders": len(placeholders(agent))}
    with tempfile.TemporaryDirectory(prefix="ecgw-bench-receipts-") as tmp:
        store = AuditStore(make_engine(f"sqlite:///{Path(tmp) / 'audit.sqlite3'}"), signer=ChainSigner(bytes(32)))
        store.ensure()
        for name, body in (("agent", agent), ("small", small_request())):
            each, wall, cpu, chained = _request_path_us(store, body, calls, rounds)
            quantiles = statistics.quantiles(each, n=100)
            out[f"{name}_us_p50"], out[f"{name}_us_p99"] = round(quantiles[49], 1), round(quantiles[98], 1)
            out[f"{name}_us_mean"] = round(statistics.median(wall), 1)
            out[f"{name}_writer_cpu_us_p50"] = round(statistics.median(chained), 1)
            out[f"{name}_cpu_us_p50"] = round(statistics.median(cpu), 1)
            out[f"{name}_cpu_us_max"] = round(max(cpu), 1)
        for batch in (1, 32):
            per_wall, per_cpu = _chaining_us(store, records, batch)
            out[f"chain_us_per_receipt_{batch}"] = round(per_wall, 1)
            out[f"chain_cpu_us_per_receipt_{batch}"] = round(per_cpu, 1)
    out["load_average_1m"] = round(os.getloadavg()[0], 2)
    out["cpus"] = os.cpu_count()
    return out


def render(r: dict[str, Any]) -> str:
    target_us = TARGET_MS * 1000
    cpu_ok = max(r["agent_cpu_us_max"], r["small_cpu_us_max"]) <= target_us
    wall_ok = max(r["agent_us_p50"], r["small_us_p50"]) <= target_us
    return "\n".join([
        f"\n## Egress receipts and the chain, per cloud call ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        "`python -m benchmarks.receipts`)\n",
        "On the request path: the body serialised once, its SHA-256, the claims (the agent step's "
        f"{r['agent_placeholders']} placeholders counted by type), the Ed25519 signature, the hand-off to the audit "
        "writer, back to back while the writer thread chains the receipts issued before. CPU time of "
        "the request's thread (median and max of rounds' means); wall time of each call (p50, p99) and its mean "
        "(median of rounds: it holds the rare long waits for a core or for the GIL); the writer thread's CPU time "
        f"per receipt (median of rounds), µs; {r['cpus']} cores, 1-minute load average {r['load_average_1m']}:\n",
        "| body | bytes | CPU p50 | CPU max | wall p50 | wall p99 | wall mean | writer CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {label} | {r[f'{name}_body_bytes']} | {r[f'{name}_cpu_us_p50']} | {r[f'{name}_cpu_us_max']} | "
          f"{r[f'{name}_us_p50']} | {r[f'{name}_us_p99']} | {r[f'{name}_us_mean']} | "
          f"{r[f'{name}_writer_cpu_us_p50']} |"
          for name, label in (("agent", "agent step (~20 KB system prompt, 40-step history)"),
                              ("small", "small request"))), "",
        f"Target ≤ {TARGET_MS} ms of request-path work per cloud call: CPU {'within' if cpu_ok else 'OVER'}, wall p50 "
        f"{'within' if wall_ok else 'OVER'}. Off the path, the writer thread chains each receipt (its row and chain "
        f"entry, in one locked SQLite transaction with what queued up meanwhile): {r['chain_us_per_receipt_1']} µs "
        f"wall, {r['chain_cpu_us_per_receipt_1']} µs CPU alone; {r['chain_us_per_receipt_32']} µs wall, "
        f"{r['chain_cpu_us_per_receipt_32']} µs CPU in a batch of 32. Checkpoints are signed on that thread too, "
        "every `privacy.audit_checkpoint_interval_s`.", ""])


if __name__ == "__main__":
    text = render(measure())
    print(text)
    append(text)
