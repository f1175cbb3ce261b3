"""Shadow calls: for a share of the steps the edge answered (``learning.shadow_rate``), the gateway also asks the
cloud the same step, through the one door (protected, last-checked, restored, metered with purpose ``shadow``), and
labels the step with whether the two answers agree (``router.learning.agreement``). The label goes into the step's
record next to its features; the cloud's answer goes nowhere.

- **Never in the client's way.** The shadow call starts after the client's answer is complete (its stream's last
  chunk), in a task of its own; at most ``learning.max_concurrent`` run at once per worker, and a step that finds
  them all busy is simply not shadowed. Failures are logged, never raised.
- **The operator's cost.** A shadow call has its own request id (``shadow-…``, settled by itself), so a client
  reading the usage of its own requests never sees it, and it is charged to ``limits.shadow`` (none of the
  tenant's budgets); ``ecgw usage --by purpose`` shows it apart.
- **Only where the cloud may go.** Never under ``edge-only``, never for a key with ``learning.shadow: false``, never
  for a step privacy kept on the edge; and the door itself still blocks what privacy would block (then there is no
  call and no label).
- **On its request's configuration.** A shadow call runs on the configuration snapshot of the request it labels,
  leased (``gateway.live.snapshot.Lease``) before that request ends: its door, cloud target and budgets are the ones the
  step saw, and a reload that removes or replaces that target closes it only once the shadow call has ended.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from accounting.calls import Meter, StepRecord
from gateway.config.settings import LearningSettings
from gateway.egress.doors import Doors
from gateway.live.snapshot import Lease
from privacy.classes.policy import ClassBlocked
from privacy.errors import PrivacyBlocked
from router.budgets.errors import KEPT_ON_EDGE
from router.budgets.limits import NO_SPEND, Budgets, Spend
from router.chat_shapes import chunks_to_completion
from router.context import RouteTracker
from router.learning.agreement import agreement, answer_of
from router.policies.edge_only import EdgeOnly
from router.step import Step

log = logging.getLogger("ecgw.shadow")

PURPOSE = "shadow"
# What a shadow call does not take from the client's body: it is one non-streamed answer.
_DROPPED = ("stream", "stream_options", "n", "logprobs", "top_logprobs")


@dataclass
class Ticket:
    """A step drawn for a shadow call, collecting the edge's answer as the client receives it."""

    step: Step
    target: str | None
    completion: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)

    def collect(self, rest: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """``rest`` as it is, each chunk also kept for the comparison."""

        async def relay() -> AsyncIterator[dict[str, Any]]:
            async for chunk in rest:
                self.chunks.append(chunk)
                yield chunk

        return relay()

    async def answer(self) -> dict[str, Any]:
        if self.completion is not None:
            return self.completion

        async def replay() -> AsyncIterator[dict[str, Any]]:
            for chunk in self.chunks:
                yield chunk

        return await chunks_to_completion(replay())


class Shadows:
    """One worker's shadow calls."""

    def __init__(self, settings: Callable[[], LearningSettings], *, doors: Callable[[], Doors], meter: Meter,
                 budgets: Callable[[], Budgets], lease: Callable[[], Lease],
                 rng: random.Random | None = None) -> None:
        """``settings``, ``doors``, ``budgets``: the ``learning`` knobs, the doors and the budgets of the
        configuration in force (a reload may replace them: the rate and the slots apply from the next step);
        ``lease``: a hold on the snapshot in force (the request's), which a shadow call runs on until it ends."""
        self._settings = settings
        self._doors = doors
        self._lease = lease
        self._meter = meter
        self._budgets = budgets
        self._seed = settings().seed
        self._rng = rng or random.Random(self._seed)
        self._tasks: set[asyncio.Task[None]] = set()
        self.started = 0
        self.skipped_busy = 0

    def draw(self, step: Step, *, allowed: bool, target: str | None) -> Ticket | None:
        """A ticket when this step is drawn (the coin against ``shadow_rate``) and may be shadowed at all; whether
        the edge alone answered it is known only at its end (``offer``)."""
        learning = self._settings()
        if learning.shadow_rate <= 0 or not allowed or step.context.policy == EdgeOnly.name:
            return None
        if learning.seed != self._seed:  # a reload set another seed: the coin starts again from it
            self._seed, self._rng = learning.seed, random.Random(learning.seed)
        if self._rng.random() >= learning.shadow_rate:
            return None
        return Ticket(step, target)

    def offer(self, ticket: Ticket, record: StepRecord) -> bool:
        """Shadow the step whose ``record`` this is, when the edge alone answered it, successfully, and a slot is
        free: the record is then written once the shadow call has labelled it (or failed). False: write it now."""
        if record.route != "edge" or record.status != 200 or record.fallback is not None:
            return False
        slots = self._settings().max_concurrent
        if len(self._tasks) >= slots:
            self.skipped_busy += 1
            log.info("request %s: every shadow slot is busy (learning.max_concurrent=%d); not shadowed",
                     record.request_id, slots)
            return False
        lease = self._lease()  # now, while the request still holds its snapshot: the task may outlive it
        task = asyncio.get_running_loop().create_task(self._run(ticket, record), context=lease.context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: lease.release())  # also for a task cancelled before it ran
        self.started += 1
        return True

    def _spend(self) -> Spend:
        return self._budgets().for_shadow() or NO_SPEND

    async def _run(self, ticket: Ticket, record: StepRecord) -> None:
        step = ticket.step
        context = dataclasses.replace(step.context, request_id="shadow-" + uuid.uuid4().hex[:24])
        label: dict[str, Any] | None = None
        try:
            edge_answer = await ticket.answer()
            body = {k: v for k, v in step.request.items() if k not in _DROPPED}
            cloud = self._doors().cloud(context, RouteTracker(), self._spend(), target=ticket.target)
            response = await cloud.complete(body, purpose=PURPOSE)
            label = agreement(answer_of(edge_answer), answer_of(response)).as_record()
        except (PrivacyBlocked, *KEPT_ON_EDGE) as exc:
            log.info("request %s: not shadowed: %s", record.request_id, exc)
            if isinstance(exc, ClassBlocked):  # the step record names the class that kept the shadow call local
                record = dataclasses.replace(record, signal={**record.signal, "shadow_data_class": exc.data_class})
        except asyncio.CancelledError:
            log.info("request %s: shadow call cancelled at shutdown", record.request_id)
        except Exception:  # a shadow call never fails anything: its step is recorded without a label
            log.warning("request %s: the shadow call failed", record.request_id, exc_info=True)
        finally:
            self._meter.settle(context.request_id, context.session_id)
            self._meter.record_step(record if label is None else dataclasses.replace(record, label=label))

    async def wait(self) -> None:
        """Until every shadow call in flight has ended (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Let what is in flight finish for up to ``learning.shutdown_grace_s``, then cancel the rest; a cancelled
        call still writes its step's record (without a label)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self._settings().shutdown_grace_s)
        for task in list(self._tasks):
            task.cancel()
        await self.wait()
