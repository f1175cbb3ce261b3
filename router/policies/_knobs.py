"""A policy's knobs: validated once from config, with per-step overrides (an experiment arm's ``knobs``); and
``Knobbed``, what every policy with knobs shares (its book, the check of an arm's overrides)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ValidationError

K = TypeVar("K", bound=BaseModel)


def _describe(policy: str, exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        key = ".".join(str(p) for p in error["loc"]) or "(knobs)"
        if error["type"] == "extra_forbidden":
            parts.append(f"policy.knobs.{policy}.{key}: unknown knob")
        else:
            parts.append(f"policy.knobs.{policy}.{key}: got {error.get('input')!r}; {error['msg'].lower()}")
    return "; ".join(parts)


class KnobBook(Generic[K]):
    def __init__(self, policy: str, model: type[K], base: Mapping[str, Any] | None) -> None:
        self._policy = policy
        self._model = model
        self._base = dict(base or {})
        self.default: K = self._validate(self._base)
        self._cache: dict[str, K] = {}

    def _validate(self, values: Mapping[str, Any]) -> K:
        try:
            return self._model.model_validate(dict(values))
        except ValidationError as exc:
            raise ValueError(_describe(self._policy, exc)) from None

    def for_step(self, overrides: Mapping[str, Any] | None) -> K:
        """The knobs with ``overrides`` applied (shallow: an overridden key replaces the configured value)."""
        if not overrides:
            return self.default
        key = repr(sorted(overrides.items(), key=lambda kv: kv[0]))
        found = self._cache.get(key)
        if found is None:
            found = self._validate({**self._base, **overrides})
            self._cache[key] = found
        return found

    def check(self, overrides: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` (naming the key) when ``overrides`` are not valid knobs for this policy."""
        self.for_step(overrides)


class Knobbed(Generic[K]):
    """A policy with knobs: ``knobs_model`` validates them, from config and for each step's overrides; a policy
    whose knobs need more than validation (a scorer to load) extends ``check_overrides``."""

    name: ClassVar[str]
    knobs_model: type[K]
    default_knobs: ClassVar[Mapping[str, Any]] = {}  # used when config gives the policy no knobs at all

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        self.knobs = KnobBook(self.name, self.knobs_model, knobs if knobs else self.default_knobs)

    def check_overrides(self, overrides: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` (naming the key) when an experiment arm's ``overrides`` are not valid knobs."""
        self.knobs.check(overrides)


class NoKnobs:
    """A policy without knobs (``edge-only``, ``cloud-only``): an experiment arm's overrides have nothing to set."""

    name: ClassVar[str]

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        self.knobs = dict(knobs or {})

    def check_overrides(self, overrides: Mapping[str, Any]) -> None:
        return None
