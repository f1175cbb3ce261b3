"""CPU of a new session's first step in a freshly started gateway process (issue 41: ≤ 100 ms for a system prompt
its owner already sent, ≤ 150 ms for an unseen one).

    python -m benchmarks.cold                  # 5 rounds, one line of JSON
    python -m benchmarks.cold --rounds 3

Each round starts three processes on one SQLite session store (sealed, as ``ecgw serve`` builds it) and one
deployment key: the first sends the agent trajectory's first step (``benchmarks.workload``, ~20 KB system prompt)
for owner A; then, alternating which goes first, a fresh process sends the same step in a new session of owner A
(**seen**: what the store kept is not scanned again) and a fresh process sends it for owner B (**unseen**). Each
measuring process starts the protector (models loaded, ``privacy.warm_at_start``), protects one small body of a
third owner, then measures the step: process CPU (``time.process_time``, every thread: detection off the event
loop, the audit writer, flushed) and the main thread's. Reports min and median per figure, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _child(store_path: str, key_hex: str, owner: str, session: str) -> dict[str, float]:
    import asyncio
    import time

    from gateway.cli.offline import prepare_offline_environment

    prepare_offline_environment()
    from benchmarks.workload import trajectory
    from gateway.state.sealing import SealedStore
    from gateway.state.sessions import SQLiteSessionStore
    from privacy.factory import build_protector
    from privacy.protector import PrivacyProtector
    from privacy.settings import PrivacySettings

    key = bytes.fromhex(key_hex)
    store = SealedStore(SQLiteSessionStore(store_path), key)
    protector = build_protector(PrivacySettings(), database_url="sqlite://", sessions=store, hash_key=key,
                                scope_of=lambda sid: sid.split("/")[0])
    assert isinstance(protector, PrivacyProtector)
    body = trajectory(1)[0]

    async def run() -> dict[str, float]:
        await protector.start()
        await protector.protect({"messages": [{"role": "user", "content": "Hello from Alice Martin in Berlin."}]},
                                session_id="warm-up/w", request_id="warm-up")
        protector.flush()
        c0, t0 = time.process_time(), time.thread_time()
        await protector.protect(body, session_id=f"{owner}/{session}", request_id="r")
        main = time.thread_time() - t0
        protector.flush()
        process = time.process_time() - c0
        await protector.aclose()
        await store.aclose()
        return {"process_ms": process * 1000, "main_ms": main * 1000}

    return asyncio.run(run())


def _spawn(store_path: str, key_hex: str, owner: str, session: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.cold", "--child", store_path, key_hex, owner, session],
                         check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _summary(values: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in ("process_ms", "main_ms"):
        figures = [v[name] for v in values]
        out[f"{name[:-3]}_min_ms"] = round(min(figures), 1)
        out[f"{name[:-3]}_p50_ms"] = round(statistics.median(figures), 1)
    return out


def measure(rounds: int = 5) -> dict[str, Any]:
    seen: list[dict[str, float]] = []
    unseen: list[dict[str, float]] = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(rounds):
            store, key = str(Path(tmp) / f"sessions-{round_no}.db"), secrets.token_hex(32)
            _spawn(store, key, "owner-a", "first")
            order = [("seen", "owner-a"), ("unseen", "owner-b")]
            for name, owner in order if round_no % 2 == 0 else order[::-1]:
                (seen if name == "seen" else unseen).append(_spawn(store, key, owner, "new"))
            loads.append(os.getloadavg()[0])
    return {"rounds": rounds, "seen": _summary(seen), "unseen": _summary(unseen),
            "load_average_1m": [round(x, 2) for x in loads]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of one seen and one unseen process")
    parser.add_argument("--child", nargs=4, metavar=("STORE", "KEY", "OWNER", "SESSION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
    else:
        print(json.dumps(measure(max(args.rounds, 1))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
