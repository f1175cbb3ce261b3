"""Which policy serves a request, and under which experiment arm.

In order: ``X-ECGW-Policy`` header; a model alias ``ecgw/<policy>`` (or a configured model name); the
experiment arm forced by ``X-ECGW-Arm``; the session's earlier choice (sticky); the arm of the active
experiment the session's id hashes into (stable across workers and restarts); the configured default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.config.settings import ConfigError, Settings
from gateway.http.errors import ClientError
from router.experiments import Assignment, ExperimentsSettings, arm_of, assign
from router.policies import builtin_policies
from router.policies.random_matched import CloudRateSource
from router.policy import PolicyRegistry
from router.step import SessionState
from router.upstreams import without_target

ALIAS_PREFIX = "ecgw/"
STICKY_KEY = "policy"
ARM_KEY = "experiment_arm"


@dataclass(frozen=True)
class PolicyDecision:
    policy: str
    experiment: str | None = None
    arm: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)  # the arm's knob overrides


class PolicyChooser:
    def __init__(self, registry: PolicyRegistry, default: str, *, edge_model: str, cloud_model: str,
                 experiments: ExperimentsSettings | None = None, cloud_aliases: Mapping[str, str] | None = None
                 ) -> None:
        if default not in registry:
            raise ConfigError(f"policy.default is {default!r}; expected one of {', '.join(registry.names)}",
                              param="policy.default")
        self._registry = registry
        self._default = default
        # A client that names one of the configured models directly gets that side, unprotected by no policy.
        self._direct = {edge_model: "edge-only", cloud_model: "cloud-only"}
        # cloud.model_aliases: a model name a client may use for one configured target (cloud-only, that target)
        self._direct.update({alias: "cloud-only" for alias in cloud_aliases or {}})
        self._experiments = experiments or ExperimentsSettings()
        for name in registry.names:
            try:
                registry.get(name)  # builds every policy now: bad knobs fail at startup, naming the key
            except ValueError as exc:
                raise ConfigError(str(exc), param=f"policy.knobs.{name}") from None
        self._check_experiments()

    def _check_experiments(self) -> None:
        """Every arm names a known policy with valid knob overrides (``ConfigError`` at startup, naming the key)."""
        for name, experiment in self._experiments.definitions.items():
            for arm_name, arm in experiment.arms.items():
                where = f"experiments.definitions.{name}.arms.{arm_name}"
                if arm.policy not in self._registry:
                    raise ConfigError(f"{where}.policy is {arm.policy!r}; expected one of "
                                      f"{', '.join(self._registry.names)}", param=f"{where}.policy")
                knobs = without_target(arm.knobs)
                if knobs:
                    try:
                        self._registry.get(arm.policy).check_overrides(knobs)
                    except ValueError as exc:
                        raise ConfigError(f"{where}.knobs: {exc}", param=f"{where}.knobs") from None

    def _check(self, name: str, where: str) -> str:
        if name not in self._registry:
            raise ClientError(400, f"Unknown policy {name!r} in {where}; valid policies: "
                                   f"{', '.join(self._registry.names)}.", param=where, code="unknown_policy")
        return name

    def explicit(self, headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
        header = headers.get("x-ecgw-policy")
        if header:
            return self._check(header.strip(), "X-ECGW-Policy")
        model = body.get("model")
        if isinstance(model, str):
            if model.startswith(ALIAS_PREFIX):
                return self._check(model[len(ALIAS_PREFIX):], "model")
            if model in self._direct and self._direct[model] in self._registry:
                return self._direct[model]
        return None

    def forced_arm(self, headers: Mapping[str, str]) -> Assignment | None:
        """``X-ECGW-Arm: <arm>`` (in the active experiment) or ``<experiment>:<arm>``."""
        header = (headers.get("x-ecgw-arm") or "").strip()
        if not header:
            return None
        experiment, _, arm = header.rpartition(":")
        experiment = experiment or self._experiments.active or ""
        found = self._experiments.definitions.get(experiment)
        if found is None or arm not in found.arms:
            known = [f"{e}:{a}" for e, x in self._experiments.definitions.items() for a in x.arms]
            raise ClientError(400, f"Unknown experiment arm {header!r} in X-ECGW-Arm; valid arms: "
                                   f"{', '.join(known) or '(no experiments configured)'}.",
                              param="X-ECGW-Arm", code="unknown_arm")
        if not found.arms[arm].forceable:
            raise ClientError(403, f"The experiment arm {experiment}:{arm} cannot be chosen by X-ECGW-Arm "
                                   "(forceable: false); sessions reach it only by assignment.",
                              type_="permission_error", param="X-ECGW-Arm", code="arm_not_forceable")
        return arm_of(experiment, found, arm)

    def _stored_arm(self, value: Any) -> Assignment | None:
        if not isinstance(value, dict):
            return None
        experiment = self._experiments.definitions.get(str(value.get("experiment")))
        arm = value.get("arm")
        if experiment is None or not isinstance(arm, str) or arm not in experiment.arms:
            return None
        return arm_of(str(value["experiment"]), experiment, arm)

    async def decide(self, headers: Mapping[str, str], body: Mapping[str, Any],
                     session: SessionState) -> PolicyDecision:
        """An explicit choice wins and becomes the session's; otherwise the session keeps what it had."""
        name = self.explicit(headers, body)
        forced = None if name is not None else self.forced_arm(headers)
        sticky = await session.get(STICKY_KEY)
        stored = await session.get(ARM_KEY)
        if name is not None:
            decision = PolicyDecision(name)
        elif forced is not None:
            decision = self._of(forced)
        elif (kept := self._stored_arm(stored)) is not None:
            decision = self._of(kept)
        elif isinstance(sticky, str) and sticky in self._registry:
            return PolicyDecision(sticky)
        elif self._experiments.active is not None:
            active = self._experiments.active
            decision = self._of(assign(active, self._experiments.definitions[active], session.session_id))
        else:
            decision = PolicyDecision(self._default)
        if sticky is None and name is None and forced is None:
            # The session's first decision: the first one written wins, also over a concurrent first step on
            # another worker or replica (an explicit choice there, say).
            won = await session.keep_first(STICKY_KEY, decision.policy)
            if won != decision.policy and isinstance(won, str) and won in self._registry:
                return PolicyDecision(won)
        elif sticky != decision.policy:
            await session.set(STICKY_KEY, decision.policy)
        arm = None if decision.arm is None else {"experiment": decision.experiment, "arm": decision.arm}
        if stored != arm:
            await session.set(ARM_KEY, arm)
        return decision

    @staticmethod
    def _of(assignment: Assignment) -> PolicyDecision:
        return PolicyDecision(assignment.policy, assignment.experiment, assignment.arm, assignment.knobs)

    def model_ids(self) -> list[str]:
        return [ALIAS_PREFIX + name for name in self._registry.names] + list(self._direct)


def build_router(settings: Settings, *, cloud_rates: CloudRateSource | None = None
                 ) -> tuple[PolicyRegistry, PolicyChooser]:
    """Every policy built with its knobs and every experiment arm checked; cheap (no litellm), so ``ecgw serve``
    also calls it before it starts workers. A bad value raises ``ConfigError`` naming the key."""
    registry = PolicyRegistry(builtin_policies(cloud_rates=cloud_rates), settings.policy.knobs)
    for name in settings.policy.knobs:
        if name not in registry:
            raise ConfigError(f"policy.knobs.{name}: there is no policy {name!r}; the policies are "
                              f"{', '.join(registry.names)}", param=f"policy.knobs.{name}")
    try:
        cloud = settings.cloud
        chooser = PolicyChooser(registry, settings.policy.default, edge_model=settings.edge.members()[0].model,
                                cloud_model=cloud.named_targets()[cloud.primary].model,
                                experiments=settings.experiments, cloud_aliases=cloud.model_aliases)
    except ConfigError:
        raise
    except ValueError as exc:  # the experiments' own checks (experiments.active, the arms' weights)
        raise ConfigError(str(exc), param="experiments") from None
    return registry, chooser
