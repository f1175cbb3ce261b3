"""``make bench``: what one tenant's heavy privacy scan costs another tenant's small request (issue 37).

``ecgw serve`` (one worker, ``cloud-only``, default privacy settings: every layer, NER included) in front of the
benchmark upstream. A victim sends small chat requests one at a time, first alone, then while an attacker sends
32 KB pathological requests back to back (``客户：王建国 联系人 李娜`` repeated, each new to the detection caches).
Reported: the victim's latency p50 / p90 / max in both phases, and the attacker's scan-bound request time.

    python -m benchmarks.victim [--requests 40] [--kb 32] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from benchmarks.contenders import start_ecgw, start_upstream
from benchmarks.load import percentile
from benchmarks.results import append

PIECE = "客户：王建国 联系人 李娜 "


def pathological(kb: int, n: int) -> str:
    """``kb`` KB of UTF-8, new to every cache (its first line is the request's own)."""
    return f"工单 {n}：" + PIECE * (kb * 1024 // len(PIECE.encode()))


def _post(client: httpx.Client, url: str, session: str, content: str) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.post(url, json={"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": content}]},
                           headers={"X-Session-Id": session}, timeout=300)
    return time.perf_counter() - started, response.status_code


def victim(url: str, requests: int) -> list[float]:
    latencies = []
    with httpx.Client() as client:
        for i in range(requests):
            elapsed, status = _post(client, url, f"victim-{i}", f"Please summarise ticket {i} for Alice Martin.")
            assert status == 200, status
            latencies.append(elapsed)
    return latencies


def main(requests: int, kb: int) -> str:
    with tempfile.TemporaryDirectory(prefix="ecgw-victim-") as tmp:
        workdir = Path(tmp)
        upstream = start_upstream(workdir)
        gateway = start_ecgw("ecgw-victim", workdir, upstream, policy="cloud-only")
        url = gateway.url + "/chat/completions"
        try:
            victim(url, 5)  # warm-up: the first call's imports and connections
            alone = victim(url, requests)
            stop = threading.Event()
            attacks: list[tuple[float, int]] = []

            def attack() -> None:
                with httpx.Client() as client:
                    n = 0
                    while not stop.is_set():
                        attacks.append(_post(client, url, f"attacker-{n}", pathological(kb, n)))
                        n += 1

            attacker = threading.Thread(target=attack, daemon=True)
            attacker.start()
            time.sleep(1.0)  # the first heavy scan under way
            attacked = victim(url, requests)
            stop.set()
            attacker.join(timeout=300)
            rss = gateway.rss_mb()
        finally:
            gateway.stop()
            upstream.stop()
    heavy = [elapsed for elapsed, status in attacks if status == 200]
    lines = [
        f"\n## A small request while another tenant's {kb} KB pathological scan runs "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, `python -m benchmarks.victim`)\n",
        f"`ecgw serve`, one worker, cloud-only, default privacy settings (NER on); {requests} small requests one at a "
        f"time, alone and while an attacker sends `{PIECE.strip()}` repeated to {kb} KB back to back "
        f"({len(attacks)} sent, {len(heavy)} answered 200, scan-bound time p50 "
        f"{statistics.median(heavy) if heavy else float('nan'):.2f} s).\n",
        "| victim | p50 ms | p90 ms | max ms |",
        "|---|---:|---:|---:|",
    ]
    for name, values in (("alone", alone), (f"during {kb} KB scans", attacked)):
        ms = [v * 1000 for v in values]
        lines.append(f"| {name} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.9):.1f} | {max(ms):.1f} |")
    load = os.getloadavg()[0]
    lines += ["", f"Load average at the end: {load:.1f} on {os.cpu_count()} cores (the figures include that load); "
                  f"gateway peak RSS {rss:.0f} MB."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--kb", type=int, default=32)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args()
    text = main(args.requests, args.kb)
    print(text)
    if not args.no_write:
        append(text)
