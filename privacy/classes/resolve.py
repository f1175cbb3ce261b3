"""The class policy a caller gets: the deployment's ``privacy`` settings, then its tenant's
(``privacy.tenants.<tenant>``), then its key's (``privacy.keys.<key name | virtual key id>``) — key over tenant over
deployment. The profile picks the preset; ``classes``, ``class_of`` and ``actions`` override it level by level. Only
the authenticated identity selects an override, never a request field."""

from __future__ import annotations

from privacy.classes.names import ANYONE, CLASSES, TIERS, ClassAction, DataClass, Tier, Who
from privacy.classes.policy import PRESETS, ClassPolicy
from privacy.settings import Action, PrivacyOverride, PrivacySettings, Profile

__all__ = ["ANYONE", "ClassPolicies", "Who"]


class ClassPolicies:
    """Every caller's class policy under one settings snapshot, each resolved once."""

    def __init__(self, settings: PrivacySettings) -> None:
        self._settings = settings
        self._resolved: dict[Who, ClassPolicy] = {}

    def profile(self, who: Who) -> Profile:
        """The profile that applies to ``who`` (what the detectors emit, and the class preset)."""
        profile = self._settings.profile
        for level in self._levels(who):
            profile = level.profile or profile
        return profile

    def of(self, who: Who) -> ClassPolicy:
        found = self._resolved.get(who)
        if found is None:
            found = self._resolved[who] = self._resolve(who)
        return found

    def _levels(self, who: Who) -> list[PrivacyOverride]:
        levels = []
        if who.tenant is not None and who.tenant in self._settings.tenants:
            levels.append(self._settings.tenants[who.tenant])
        if who.key is not None and who.key in self._settings.keys:
            levels.append(self._settings.keys[who.key])
        return levels

    def _resolve(self, who: Who) -> ClassPolicy:
        settings = self._settings
        levels = self._levels(who)
        preset = PRESETS[self.profile(who)]
        rules: dict[DataClass, dict[Tier, ClassAction]] = {
            name: {tier: (preset.get(name) or {}).get(tier, "pseudonymise") for tier in TIERS} for name in CLASSES}
        moved: dict[str, DataClass] = dict(settings.class_of)
        actions: dict[str, Action] = dict(settings.actions)
        for classes in [settings.classes, *(level.classes for level in levels)]:
            for name, rule in classes.items():
                rules[name].update({tier: action for tier, action in rule.by_tier().items()  # type: ignore[misc]
                                    if action is not None})
        for level in levels:
            moved.update(level.class_of)
            actions.update(level.actions)
        return ClassPolicy(rules=rules, moved=moved, actions=actions, default_action=settings.default_action)
