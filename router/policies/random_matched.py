"""The benchmark's control: each step goes to the cloud with probability p, by a coin seeded by the session
(the same session id replays the same coins), so a router can be compared with chance at its own rate."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from router.experiments import bucket
from router.policies._knobs import Knobbed
from router.policy import StepResult
from router.step import Step

STATE_KEY = "random_matched"

# (experiment, arm) → that arm's measured cloud-call rate, or None when nothing is measured yet.
CloudRateSource = Callable[[str, str], Awaitable[float | None]]


class MatchArm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    experiment: str = Field(description="the experiment whose arm's measured cloud-call rate p follows")
    arm: str = Field(description="that experiment's arm")


class RandomMatchedKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    p: float | None = Field(None, ge=0, le=1, description="probability of the cloud per step")
    match: MatchArm | None = Field(None, description=(
        "{experiment: X, arm: Y}: take p from that arm's measured cloud-call rate (when a rate source is wired)"))
    seed: str = Field("", description="change to draw different coins for the same sessions")

    @model_validator(mode="after")
    def _some_p(self) -> RandomMatchedKnobs:
        if self.p is None:
            raise ValueError("set p (a probability); with match, p is used until the matched arm has a measured "
                             "cloud-call rate")
        return self


class RandomMatched(Knobbed[RandomMatchedKnobs]):
    name: ClassVar[str] = "random-matched"

    knobs_model = RandomMatchedKnobs
    default_knobs = {"p": 0.5}

    def __init__(self, knobs: Mapping[str, Any] | None = None, *, cloud_rates: CloudRateSource | None = None) -> None:
        super().__init__(knobs)
        self._rates = cloud_rates

    async def probability(self, knobs: RandomMatchedKnobs) -> float:
        if knobs.match is not None and self._rates is not None:
            measured = await self._rates(knobs.match.experiment, knobs.match.arm)
            if measured is not None:
                return min(max(measured, 0.0), 1.0)
        assert knobs.p is not None  # the knob model requires it
        return knobs.p

    @staticmethod
    def coin(seed: str, session_id: str, index: int) -> float:
        return bucket("ecgw-random-matched", seed, session_id, str(index))

    async def run(self, step: Step) -> StepResult:
        knobs = self.knobs.for_step(step.knobs)
        p = await self.probability(knobs)
        session_id = step.context.session_id
        coin = 0.0

        def advance(current: Any | None) -> dict[str, Any]:
            nonlocal coin  # the coin of the run the store wrote (a conflict runs this again)
            state = dict(current) if isinstance(current, dict) else {}
            index = int(state.get("steps") or 0)
            coin = self.coin(knobs.seed, session_id, index)
            state.update(steps=index + 1, cloud_steps=int(state.get("cloud_steps") or 0) + (coin < p))
            return state

        # One atomic step of the session's coin sequence: concurrent steps (on any worker or replica) each draw
        # their own index, so the sequence and its cloud-step count are the same however steps are spread.
        await step.session.update(STATE_KEY, advance)
        cloud = coin < p
        step.decided("cloud" if cloud else "edge", "coin", coin=round(coin, 4), p=round(p, 4))
        channel = step.cloud if cloud else step.edge
        if step.stream:
            return channel.stream(step.request)
        return await channel.complete(step.request)
