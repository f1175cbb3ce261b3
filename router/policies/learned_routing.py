"""Per-step routing on a learned router (``ecgw router fit``): probe the edge like step-routing's probe mode (one
token, greedy, top-k logprobs), read the step's features (``router.learning.features``: the probe's entropy
statistics and the request's shape, numbers only), and escalate when the model's predicted disagreement with the
cloud is above ``threshold`` — or above the threshold that aims at ``target_cloud_rate`` (``router.targets``).

The model file is served hot: a changed file is loaded on the next step (``router.learning.holder``); a missing or
invalid one fails at start, naming its path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from router.entropy import first_token_stats, logprob_entries
from router.errors import UpstreamError
from router.learning.features import request_features
from router.learning.holder import ModelHolder
from router.learning.model import ModelFileError
from router.policies._knobs import Knobbed
from router.policy import StepResult
from router.step import Step
from router.targets import TargetTracker, arm_of


class LearnedRoutingKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, description="the model file (`ecgw router fit --out FILE`)")
    threshold: float = Field(0.5, ge=0, le=1, description="escalate when P(disagree) is above it")
    target_cloud_rate: float | None = Field(None, ge=0, le=1, description="instead of threshold: the share to escalate")
    top_logprobs: int = Field(20, ge=1, le=20, description="k of the probe's top-k logprobs (the features' entropy)")
    missing_logprobs: Literal["edge", "cloud"] = Field("cloud", description=(
        "a probe without logprobs: no features to read"))

    @model_validator(mode="after")
    def _threshold_or_target(self) -> LearnedRoutingKnobs:
        if self.target_cloud_rate is not None and "threshold" in self.model_fields_set:
            raise ValueError("threshold and target_cloud_rate are both set: set one of them")
        return self


class LearnedRouting(Knobbed[LearnedRoutingKnobs]):
    name: ClassVar[str] = "learned-routing"

    knobs_model = LearnedRoutingKnobs

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        super().__init__(knobs)
        self._holders: dict[str, ModelHolder] = {}
        if self.knobs.default.model is not None:
            self._holder(self.knobs.default.model)

    def _holder(self, path: str) -> ModelHolder:
        found = self._holders.get(path)
        if found is None:
            try:
                found = self._holders[path] = ModelHolder(path)
            except ModelFileError as exc:
                raise ValueError(f"policy.knobs.{self.name}.model: {exc}") from None
        return found

    def check_overrides(self, overrides: Mapping[str, Any]) -> None:
        knobs = self.knobs.for_step(overrides)
        if knobs.model is not None:
            self._holder(knobs.model)

    async def run(self, step: Step) -> StepResult:
        knobs = self.knobs.for_step(step.knobs)
        if knobs.model is None:
            raise UpstreamError(503, "The learned-routing policy has no model: set policy.knobs.learned-routing.model "
                                     "to a file from `ecgw router fit`.", upstream="router", type_="policy_unavailable")
        model = self._holder(knobs.model).current()
        probe = {k: v for k, v in step.request.items()
                 if k not in ("stream", "stream_options", "max_completion_tokens", "n", "logprobs", "top_logprobs")}
        probe.update(max_tokens=1, temperature=0, logprobs=True, top_logprobs=knobs.top_logprobs, stream=False)
        response = await step.edge.complete(probe, purpose="probe")
        stats = first_token_stats(logprob_entries((response.get("choices") or [{}])[0]))
        step.note.features.update(stats)
        p = model.predict({**request_features(step.request), **stats}) if stats else None
        if p is None:
            side, reason, cut = knobs.missing_logprobs, "missing-logprobs", None
        elif knobs.target_cloud_rate is not None:
            aimed = await TargetTracker(step.session.store).decide(self.name, arm_of(step), p,
                                                                   knobs.target_cloud_rate)
            side, reason, cut = ("cloud" if aimed.cloud else "edge"), "target", aimed.threshold
            step.note.signal.update(target_cloud_rate=knobs.target_cloud_rate,
                                    achieved_cloud_rate=round(aimed.achieved, 4))
        else:
            side, reason, cut = ("cloud" if p > knobs.threshold else "edge"), "learned", knobs.threshold
        step.decided(side, reason, p_disagree=None if p is None else round(p, 5),
                     threshold=None if cut is None else round(cut, 5))
        channel = step.cloud if side == "cloud" else step.edge
        return channel.stream(step.request) if step.stream else await channel.complete(step.request)
