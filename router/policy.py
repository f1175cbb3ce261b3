"""The policy seam: a small class with one async method."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar, Protocol

from router.step import Step
from router.upstreams import TARGET_KNOB, without_target

# A completion body (non-streaming) or an async iterator of chunk bodies (streaming).
StepResult = dict[str, Any] | AsyncIterator[dict[str, Any]]


class Policy(Protocol):
    name: ClassVar[str]

    def check_overrides(self, overrides: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` (naming the key) when an experiment arm's knob ``overrides`` are not valid."""

    async def run(self, step: Step) -> StepResult: ...


PolicyFactory = Callable[[Mapping[str, Any]], Policy]


class PolicyRegistry:
    """Maps policy names to factories; a factory receives the policy's knobs from config."""

    def __init__(self, factories: Mapping[str, PolicyFactory], knobs: Mapping[str, Mapping[str, Any]]) -> None:
        self._factories = dict(factories)
        self._knobs = {name: dict(k) for name, k in knobs.items()}
        self._instances: dict[str, Policy] = {}

    @property
    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def target(self, name: str) -> str | None:
        """The cloud target ``policy.knobs.<name>.cloud_target`` names (None: the default target)."""
        value = self._knobs.get(name, {}).get(TARGET_KNOB)
        return value if isinstance(value, str) else None

    def get(self, name: str) -> Policy:
        policy = self._instances.get(name)
        if policy is None:
            policy = self._factories[name](without_target(self._knobs.get(name, {})))
            self._instances[name] = policy
        return policy
