"""Query-level routing: on a session's first step a scorer decides edge or cloud for the whole session; the
decision is stored with the session and every later step follows it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from router.policies._knobs import Knobbed
from router.policies._messages import first_user_text, task_id
from router.policy import StepResult
from router.scorers import (
    JUDGE_PROMPT,
    EdgeJudge,
    RulesScorer,
    Scorer,
    TableScorer,
    Task,
    Verdict,
)
from router.step import Step
from router.targets import aim, check_one_target, note_cost_target

STATE_KEY = "task_route"


class RulesKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    long_chars: int = Field(2000, ge=1, description="a task this long (characters) or longer scores full on length")
    keywords: list[str] = Field(default_factory=list, description="case-insensitive substrings that mark a hard task")
    keyword_weight: float = Field(0.5, ge=0, le=1, description=(
        "share of the score that comes from keywords (0 when the list is empty)"))
    keywords_for_full: int = Field(2, ge=1, description="this many keyword hits score full on keywords")


class TaskRoutingKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scorer: Literal["edge-judge", "rules", "table"] = Field("edge-judge", description=(
        "edge-judge (the edge rates difficulty 1-10) | rules | table"))
    threshold: float = Field(0.5, ge=0, le=1, description=(
        "score (0..1, higher = harder) >= threshold -> the session goes to the cloud; `ecgw calibrate` picks one"))
    fallback: Literal["edge", "cloud"] = Field("edge", description=(
        "where a session goes when the scorer cannot score its task (unparseable rating, no table row)"))
    judge_prompt: str = Field(JUDGE_PROMPT, description="edge-judge: the prompt that asks the edge to rate the task")
    judge_scale: float = Field(10.0, gt=0, description=(
        "edge-judge: the rating scale in its prompt (the rating is divided by it)"))
    rules: RulesKnobs = Field(default_factory=lambda: RulesKnobs.model_validate({}), description=(
        "scorer rules: score = (1 - keyword_weight) * min(1, chars/long_chars) + keyword_weight * min(1, "
        "hits/keywords_for_full)"))
    table_path: str | None = Field(None, description=(
        "scorer table: JSON {task_id: {decision, score, threshold}}, keyed by metadata.task_id or the session id"))
    # Instead of threshold: the share of sessions to route to the cloud, or the cloud USD per session to aim at; the
    # threshold is then set online from the recent scores (router.targets)
    target_cloud_rate: float | None = Field(None, ge=0, le=1, description=(
        "instead of threshold: the share of sessions to send to the cloud (0..1)"))
    target_cost_per_session: float | None = Field(None, gt=0, description=(
        "instead of threshold: the cloud USD to aim at per session"))

    @model_validator(mode="after")
    def _threshold_or_target(self) -> TaskRoutingKnobs:
        check_one_target(self, {"threshold"} & self.model_fields_set, "threshold")
        return self


def build_scorer(knobs: TaskRoutingKnobs) -> Scorer:
    if knobs.scorer == "edge-judge":
        return EdgeJudge(prompt=knobs.judge_prompt, scale=knobs.judge_scale)
    if knobs.scorer == "rules":
        r = knobs.rules
        return RulesScorer(long_chars=r.long_chars, keywords=r.keywords, keyword_weight=r.keyword_weight,
                           keywords_for_full=r.keywords_for_full)
    if not knobs.table_path:
        raise ValueError("policy.knobs.task-routing.table_path: the 'table' scorer needs a route table file")
    return TableScorer.from_file(knobs.table_path, threshold=knobs.threshold)


class TaskRouting(Knobbed[TaskRoutingKnobs]):
    name: ClassVar[str] = "task-routing"
    knobs_model = TaskRoutingKnobs

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        super().__init__(knobs)
        self._scorers: dict[int, Scorer] = {}
        self._scorer(self.knobs.default)  # a missing table or checkpoint fails at startup, not mid-session

    def check_overrides(self, overrides: Mapping[str, Any]) -> None:
        self._scorer(self.knobs.for_step(overrides))

    def _scorer(self, knobs: TaskRoutingKnobs) -> Scorer:
        key = id(knobs)
        scorer = self._scorers.get(key)
        if scorer is None:
            scorer = self._scorers[key] = build_scorer(knobs)
        return scorer

    def decide(self, verdict: Verdict, knobs: TaskRoutingKnobs) -> tuple[str, str]:
        """(side, reason)."""
        if verdict.side in ("edge", "cloud"):
            return verdict.side, "table"
        if verdict.score is None:
            return knobs.fallback, "fallback"
        threshold = verdict.threshold if verdict.threshold is not None else knobs.threshold
        return ("cloud" if verdict.score >= threshold else "edge"), "score"

    async def run(self, step: Step) -> StepResult:
        knobs = self.knobs.for_step(step.knobs)
        note_cost_target(step, knobs.target_cost_per_session)  # every step of the session spends toward it
        stored = await step.session.get(STATE_KEY)
        side = stored.get("side") if isinstance(stored, dict) else None
        if side not in ("edge", "cloud"):
            task = Task(first_user_text(step.request), task_id(step.request), step.context.session_id)
            verdict = await self._scorer(knobs).score(task, step.edge)
            side, reason = self.decide(verdict, knobs)
            if reason == "score" and verdict.score is not None and (aimed := await aim(
                    step, self.name, verdict.score, rate=knobs.target_cloud_rate, cost=knobs.target_cost_per_session,
                    first=True)) is not None:
                side, reason = ("cloud" if aimed.cloud else "edge"), "target"
            # Sticky: the first decision written wins, also over one a concurrent first step made elsewhere.
            kept = await step.session.keep_first(STATE_KEY, {"side": side, "reason": reason, "score": verdict.score,
                                                             "scorer": knobs.scorer, "threshold": knobs.threshold})
            if isinstance(kept, dict) and kept.get("side") in ("edge", "cloud") and kept["side"] != side:
                side = str(kept["side"])  # lost the race: the winner's decision
                step.decided(side, "sticky", score=kept.get("score"), threshold=kept.get("threshold"),
                             scorer=kept.get("scorer"))
            else:
                step.decided(side, reason, score=verdict.score, threshold=knobs.threshold, scorer=knobs.scorer)
        elif isinstance(stored, dict):
            step.decided(side, "sticky", score=stored.get("score"), threshold=stored.get("threshold"),
                         scorer=stored.get("scorer"))
        channel = step.cloud if side == "cloud" else step.edge
        if step.stream:
            return channel.stream(step.request)
        return await channel.complete(step.request)
