"""A class policy: per data class and target tier, ``allow`` (the value leaves as it is), ``pseudonymise`` (it
leaves as a placeholder, or as ``privacy.default_action`` says) or ``block`` (it may not reach that tier in any form:
the body goes to a target of another tier, or stays on the edge). ``privacy.actions`` (by type, dimension or layer)
overrides the class on every tier.

``decide`` gives each finding its action for one tier; ``Held`` counts what a protected body carries by class;
``refused`` names the class, if any, that keeps such a body off a tier.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from privacy.classes.names import CLASSES, TIERS, ClassAction, DataClass, Tier
from privacy.classes.table import default_class
from privacy.detect import Finding
from privacy.errors import PrivacyBlocked
from privacy.settings import Action

Rules = Mapping[DataClass, Mapping[Tier, ClassAction]]

# Each profile's preset of the class policy (``privacy.classes`` overrides it). A class left out: ``pseudonymise``
# on both tiers, today's behaviour. ``strict``: secrets never leave; the special categories reach trusted targets
# only.
PRESETS: Mapping[str, Rules] = {
    "balanced": {},
    "minimal": {},
    "strict": {"secrets": {"trusted": "block", "standard": "block"},
               "special": {"trusted": "pseudonymise", "standard": "block"}},
}


@dataclass(frozen=True)
class Decision:
    """What happens to one finding on one tier: the scrub's ``action``, its class, and whether the class policy
    decided it (``governed``; False: a ``privacy.actions`` entry did, the same on every tier)."""

    action: Action
    data_class: DataClass
    governed: bool
    kept_off: bool = False  # the class policy keeps the class off this tier (``block``): no raw value may go there


@dataclass
class Held:
    """What one protected body carries, by class: values replaced (``pseudonymised``: a placeholder or a mask) and
    values left as they were (``raw``: an ``allow`` or an ``audit`` action). ``governed`` and ``governed_raw``: the
    classes the class policy decided for at least one value (those a tier's rules can refuse)."""

    counts: dict[str, list[int]] = field(default_factory=dict)  # class -> [pseudonymised, raw]
    governed: set[str] = field(default_factory=set)
    governed_raw: set[str] = field(default_factory=set)

    def add(self, decision: Decision) -> None:
        raw = decision.action == "audit"
        self.counts.setdefault(decision.data_class, [0, 0])[raw] += 1
        if decision.governed:
            self.governed.add(decision.data_class)
            if raw:
                self.governed_raw.add(decision.data_class)

    def merge(self, other: Held) -> None:
        for name, (pseudonymised, raw) in other.counts.items():
            counts = self.counts.setdefault(name, [0, 0])
            counts[0] += pseudonymised
            counts[1] += raw
        self.governed |= other.governed
        self.governed_raw |= other.governed_raw

    def claims(self) -> dict[str, dict[str, int]]:
        """``{class: {"pseudonymised": n, "raw": n}}`` in the classes' order: counts, never values."""
        return {name: {"pseudonymised": self.counts[name][0], "raw": self.counts[name][1]}
                for name in CLASSES if name in self.counts}


class ClassBlocked(PrivacyBlocked):
    """The protected body holds a class that no tier of the call's targets may receive: the step stays on the edge
    (``x-ecgw-fallback: data-class``; the step record names the class)."""

    def __init__(self, data_class: str, tiers: Iterable[str]) -> None:
        tried = ", ".join(dict.fromkeys(tiers))
        super().__init__(f"the body holds {data_class} data, which privacy.classes keeps off {tried} cloud targets; "
                         "the step stays on the edge")
        self.data_class = data_class


class ClassPolicy:
    """One resolved class policy (a deployment's, or a tenant's or key's over it: ``privacy.classes.resolve``)."""

    def __init__(self, *, rules: Rules, moved: Mapping[str, DataClass], actions: Mapping[str, Action],
                 default_action: Action) -> None:
        self._rules = {name: {tier: (rules.get(name) or {}).get(tier, "pseudonymise") for tier in TIERS}
                       for name in CLASSES}
        self._moved = dict(moved)
        self._actions = dict(actions)
        self._default = default_action
        self._classes: dict[tuple[str, bool, str | None], DataClass] = {}
        self._keys: dict[str, str] = {}

    def rule(self, data_class: str, tier: str) -> ClassAction:
        return self._rules[data_class][tier]  # type: ignore[index]

    def class_of(self, finding: Finding) -> DataClass:
        key = (finding.type, finding.unit_id is not None, finding.dimension)
        found = self._classes.get(key)
        if found is None:
            found = self._moved.get(finding.type) or default_class(finding.type, listed=key[1],
                                                                   dimension=finding.dimension)
            self._classes[key] = found
        return found

    def decide(self, finding: Finding, tier: str) -> Decision:
        data_class = self.class_of(finding)
        for name in (finding.type, finding.dimension, finding.layer):
            if name and name in self._actions:
                return Decision(self._actions[name], data_class, False)
        rule = self.rule(data_class, tier)
        return Decision("audit" if rule == "allow" else self._default, data_class, True, kept_off=rule == "block")

    def actions(self, tier: str) -> Callable[[Finding], Action]:
        """The scrub's action per finding on ``tier`` (what ``privacy.scrubber`` and the last check apply)."""
        return lambda finding: self.decide(finding, tier).action

    def scrub_key(self, tier: str) -> str:
        """Equal for two tiers (and two policies) whose scrubs are equal: what the detection cache keys results by.
        ``block`` scrubs as ``pseudonymise`` does (the tier check, not the scrub, keeps the body off the tier)."""
        key = self._keys.get(tier)
        if key is None:
            doc = {"allow": sorted(n for n in CLASSES if self.rule(n, tier) == "allow"), "moved": self._moved,
                   "actions": self._actions, "default": self._default}
            key = hashlib.blake2b(json.dumps(doc, sort_keys=True).encode(), digest_size=8).hexdigest()
            self._keys[tier] = key
        return key

    def refused(self, tier: str, held: Held) -> str | None:
        """The class that keeps a body holding ``held`` off ``tier``, if any: one the tier blocks, or one left raw
        that the tier does not allow raw (a body scrubbed for a more permissive tier)."""
        for name in CLASSES:
            if name not in held.governed:
                continue
            rule = self.rule(name, tier)
            if rule == "block" or (rule != "allow" and name in held.governed_raw):
                return name
        return None
