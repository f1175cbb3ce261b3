"""Privacy CPU of a protected cloud step, in process, by thread: the request path and the audit writer.

    python -m benchmarks.scrub                 # both measurements below, one line of JSON
    python -m benchmarks.scrub --steps 5 --calls 5

- **trajectory**: each incremental step of the 40-step agent trajectory (``benchmarks.workload``: ~20 KB system
  prompt, one tool round more per step) protected in one session, the audit flushed after each step, so each
  step's writer work is its own (``make bench``'s scrub figure lets the writer's work of one step fall into the
  next);
- **repeat**: the trajectory's last body protected again and again in one session (what ``benchmarks.replicas
  --agent`` sends: the same body at every step, so nothing new is detected and a call costs the protector's and
  the audit's per-call work).

Each reports the median and the minimum, over the steps or calls, of the main thread's CPU (``time.thread_time``:
collect, detect, the last check, the vault, restore's set-up; detection off the event loop is a thread hop the
process figure includes), of the process (every thread) and of the difference, the audit writer's (``flush`` waits
for it). CPU time holds better than wall-clock time on a shared machine; compare commits in alternating runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

_WARM_UP = 2  # calls of the repeated body left out (the first scrubs it, the second meets every cache)


def _summary(process: list[float], main: list[float]) -> dict[str, float]:
    writer = [p - m for p, m in zip(process, main, strict=True)]
    out: dict[str, float] = {}
    for name, values in (("main", main), ("writer", writer), ("process", process)):
        out[f"{name}_p50_ms"] = round(statistics.median(values) * 1000, 3)
        out[f"{name}_min_ms"] = round(min(values) * 1000, 3)
    return out


def measure(steps: int = 40, calls: int = 30) -> dict[str, Any]:
    from gateway.cli.offline import prepare_offline_environment

    prepare_offline_environment()
    from benchmarks.workload import trajectory
    from gateway.state.sessions import MemorySessionStore
    from privacy.factory import build_protector
    from privacy.protector import PrivacyProtector
    from privacy.settings import PrivacySettings

    protector = build_protector(PrivacySettings(), database_url="sqlite://", sessions=MemorySessionStore())
    assert isinstance(protector, PrivacyProtector)  # privacy on, with its audit (``flush`` waits for its writer)
    bodies = trajectory(steps)

    async def timed(body: dict[str, Any], session_id: str, request_id: str) -> tuple[float, float]:
        protector.flush()
        c0, t0 = time.process_time(), time.thread_time()
        await protector.protect(body, session_id=session_id, request_id=request_id)
        main = time.thread_time() - t0
        protector.flush()
        return time.process_time() - c0, main

    async def run() -> dict[str, Any]:
        await protector.start()
        await protector.protect({"messages": [{"role": "user", "content": "Hello from Alice Martin in Berlin."}]},
                                session_id="scrub-warm-up", request_id="warm-up")
        walk = [await timed(body, "scrub-trajectory", f"t{i}") for i, body in enumerate(bodies)][1:]
        again = [await timed(bodies[-1], "scrub-repeat", f"r{i}") for i in range(calls + _WARM_UP)][_WARM_UP:]
        await protector.aclose()
        return {"trajectory": {"steps": len(walk), **_summary([p for p, _ in walk], [m for _, m in walk])},
                "repeat": {"calls": len(again), **_summary([p for p, _ in again], [m for _, m in again])}}

    return asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40, help="steps of the trajectory (the first is left out)")
    parser.add_argument("--calls", type=int, default=30, help="calls of the repeated body")
    args = parser.parse_args(argv)
    print(json.dumps(measure(max(args.steps, 2), max(args.calls, 1))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
