"""Data classes: every type a detector emits has a class, listed units take their dimension's, and the class policy
resolves key over tenant over deployment over the profile's preset."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from privacy.classes.policy import ClassPolicy, Held
from privacy.classes.resolve import ClassPolicies, Who
from privacy.classes.table import DEFAULT_CLASS_OF, default_class
from privacy.detect import Finding
from privacy.detect.profile import (
    ONLINE_TYPES,
    ORGANISATIONS_PLACES_TYPES,
    PEOPLE_TYPES,
    PROFILES,
    SPECIAL_TYPES,
)
from privacy.detect.secrets import RULES
from privacy.settings import PrivacySettings, Profile

DETECT = Path(__file__).resolve().parents[3] / "privacy" / "detect"


def _finding(type_: str, *, layer: str = "patterns", unit: bool = False, dimension: str | None = None) -> Finding:
    return Finding(type=type_, start=0, end=1, value="x", layer=layer, key=type_, dimension=dimension,
                   unit_id="e1.f" if unit else None)


def test_every_type_a_detector_names_has_a_class_of_its_own() -> None:
    """Each upper-case type name a module of privacy/detect emits (a Finding's type, a rule's, a mapped label) is in
    the table or a credential by name: none falls to ``other`` unnoticed. (Non-type capitals in detect/: listed.)"""
    not_types = {"NFKC", "NFD", "NFC", "SPREAD_MIN", "XWUTRQPNMLK", "KLJNPQRTUWX", "JZIHGFEDCBA", "K48213977", "PII",
                 "PER", "ORG", "LOC", "GPE", "NORP", "DATE", "TIME", "ITEM", "NAME", "FULL_NAME", "EMAIL", "PHONE",
                 "ADDRESS", "ACCOUNT", "SECRET", "TOKEN", "SALARY", "ID", "IBAN", "TYPE", "TEXT",
                 "DEFAULT_PROFILE", "PROFILES"}
    named = {m for path in DETECT.glob("*.py") if path.name != "__init__.py"  # (its __all__ names modules' constants)
             for m in re.findall(r'"([A-Z][A-Z0-9_]{2,})"', path.read_text())}
    named |= {rule.type for rule in RULES} | ONLINE_TYPES | PEOPLE_TYPES | ORGANISATIONS_PLACES_TYPES | SPECIAL_TYPES
    unclassed = sorted(t for t in named - not_types
                       if default_class(t, listed=False, dimension=None) == "other" and t not in DEFAULT_CLASS_OF)
    assert unclassed == []


@pytest.mark.parametrize(("type_", "expected"), [
    ("URL", "online"), ("FILE_PATH", "online"), ("USERNAME", "online"), ("APP_ID", "online"),
    ("IP_ADDRESS", "online"), ("ID_NUMBER", "identifiers"), ("US_SSN", "identifiers"), ("IBAN_CODE", "identifiers"),
    ("PERSON", "people"), ("ORGANIZATION", "organisations_places"), ("STREET_ADDRESS", "organisations_places"),
    ("HEALTH", "special"), ("NRP", "special"), ("RELIGION", "special"), ("POLITICAL_OPINION", "special"),
    ("SEXUAL_ORIENTATION", "special"), ("BIOMETRIC", "special"), ("ACCESS_CODE", "secrets"),
    ("GITHUB_TOKEN", "secrets"), ("PASSWORD", "secrets"), ("EMAIL_ADDRESS", "contact"), ("AMOUNT", "other"),
    ("SOMETHING_NEW", "other")])
def test_the_default_class_of_a_type(type_: str, expected: str) -> None:
    assert default_class(type_, listed=False, dimension=None) == expected


def test_a_listed_unit_takes_its_dimensions_class_else_listed() -> None:
    policy = ClassPolicies(PrivacySettings()).of(Who())
    assert policy.class_of(_finding("PHONE", layer="units", unit=True, dimension="contact")) == "contact"
    assert policy.class_of(_finding("PASSWORD", layer="units", unit=True, dimension="credential")) == "secrets"
    assert policy.class_of(_finding("DIAGNOSIS", layer="units", unit=True, dimension="Health")) == "special"
    assert policy.class_of(_finding("TICKET", layer="units", unit=True, dimension="documents")) == "listed"
    assert policy.class_of(_finding("PASSWORD", layer="units", unit=True)) == "listed"
    # the last check's hit of a listed unit keeps its unit id: still the unit's class
    assert policy.class_of(_finding("PHONE", layer="egress", unit=True, dimension="contact")) == "contact"


def test_class_of_moves_a_type() -> None:
    policy = ClassPolicies(PrivacySettings(class_of={"AMOUNT": "identifiers"})).of(Who())
    assert policy.class_of(_finding("AMOUNT")) == "identifiers"


def test_nothing_configured_pseudonymises_every_class_on_both_tiers() -> None:
    policy = ClassPolicies(PrivacySettings()).of(Who())
    for type_ in DEFAULT_CLASS_OF:
        for tier in ("trusted", "standard"):
            decision = policy.decide(_finding(type_), tier)
            assert (decision.action, decision.governed) == ("pseudonymise", True)
    assert policy.scrub_key("trusted") == policy.scrub_key("standard")


def test_privacy_actions_override_the_class_on_every_tier() -> None:
    settings = PrivacySettings(profile="strict", actions={"API_TOKEN": "audit", "units": "mask"})
    policy = ClassPolicies(settings).of(Who())
    for tier in ("trusted", "standard"):
        assert policy.decide(_finding("API_TOKEN"), tier).action == "audit"
        assert not policy.decide(_finding("API_TOKEN"), tier).governed
        assert policy.decide(_finding("X", layer="units", unit=True), tier).action == "mask"
    held = Held()
    held.add(policy.decide(_finding("API_TOKEN"), "standard"))
    assert policy.refused("standard", held) is None  # not the class policy's to refuse


def test_the_strict_preset_keeps_secrets_off_every_tier_and_special_off_standard() -> None:
    policy = ClassPolicies(PrivacySettings(profile="strict")).of(Who())
    secret, health, person = Held(), Held(), Held()
    secret.add(policy.decide(_finding("GITHUB_TOKEN"), "trusted"))
    health.add(policy.decide(_finding("HEALTH"), "standard"))
    person.add(policy.decide(_finding("PERSON"), "standard"))
    assert [policy.refused(t, secret) for t in ("trusted", "standard")] == ["secrets", "secrets"]
    assert [policy.refused(t, health) for t in ("trusted", "standard")] == [None, "special"]
    assert [policy.refused(t, person) for t in ("trusted", "standard")] == [None, None]


def test_allow_leaves_the_value_raw_and_refuses_a_tier_that_does_not_allow_raw() -> None:
    settings = PrivacySettings(classes={"people": {"trusted": "allow"}})
    policy = ClassPolicies(settings).of(Who())
    assert policy.decide(_finding("PERSON"), "trusted").action == "audit"
    assert policy.decide(_finding("PERSON"), "standard").action == "pseudonymise"
    assert policy.scrub_key("trusted") != policy.scrub_key("standard")
    held = Held()
    held.add(policy.decide(_finding("PERSON"), "trusted"))
    assert held.claims() == {"people": {"pseudonymised": 0, "raw": 1}}
    assert policy.refused("trusted", held) is None
    assert policy.refused("standard", held) == "people"  # a body scrubbed for trusted never goes to standard raw


def test_key_over_tenant_over_deployment_over_the_preset() -> None:
    settings = PrivacySettings.model_validate({
        "profile": "balanced",
        "classes": {"contact": {"standard": "block"}},
        "class_of": {"AMOUNT": "identifiers"},
        "tenants": {"acme": {"profile": "strict", "classes": {"contact": {"standard": "allow"}},
                             "class_of": {"AMOUNT": "special"}}},
        "keys": {"ci": {"profile": "minimal", "classes": {"contact": {"standard": "pseudonymise"}},
                        "actions": {"PERSON": "mask"}}},
    })
    policies = ClassPolicies(settings)
    deployment, tenant, key = policies.of(Who()), policies.of(Who(tenant="acme")), policies.of(Who("ci", "acme"))
    assert [p.rule("contact", "standard") for p in (deployment, tenant, key)] == ["block", "allow", "pseudonymise"]
    assert [p.rule("secrets", "trusted") for p in (deployment, tenant, key)] == ["pseudonymise", "block",
                                                                                 "pseudonymise"]
    assert [p.class_of(_finding("AMOUNT")) for p in (deployment, tenant, key)] == ["identifiers", "special",
                                                                                  "special"]
    assert key.decide(_finding("PERSON"), "standard").action == "mask"
    assert [policies.profile(w) for w in (Who(), Who(tenant="acme"), Who("ci", "acme"), Who("ci"))] == [
        "balanced", "strict", "minimal", "minimal"]
    assert policies.of(Who("other", "other")).rule("contact", "standard") == "block"


@pytest.mark.parametrize(("doc", "where"), [
    ({"classes": {"specal": {"standard": "block"}}}, "classes.specal"),
    ({"classes": {"special": {"public": "block"}}}, "classes.special.public"),
    ({"classes": {"special": {"standard": "deny"}}}, "classes.special.standard"),
    ({"tenants": {"acme": {"classes": {"health": {"standard": "block"}}}}}, "tenants.acme.classes.health"),
    ({"keys": {"ci": {"class_of": {"PERSON": "persons"}}}}, "keys.ci.class_of.PERSON"),
    ({"profile": "paranoid"}, "profile"),
])
def test_an_unknown_class_tier_or_action_names_its_key(doc: dict[str, object], where: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PrivacySettings.model_validate(doc)
    assert where in str(caught.value)


def test_the_settings_profiles_are_the_detectors_profiles() -> None:
    assert get_args(Profile) == PROFILES


def test_a_policy_built_by_hand_fills_the_classes_it_is_not_given() -> None:
    policy = ClassPolicy(rules={"special": {"standard": "block"}}, moved={}, actions={}, default_action="mask")
    assert policy.rule("special", "trusted") == "pseudonymise"
    assert policy.decide(_finding("HEALTH"), "trusted").action == "mask"


def test_the_detectors_families_map_to_their_classes() -> None:
    for types, expected in ((ONLINE_TYPES, "online"), (PEOPLE_TYPES, "people"),
                            (ORGANISATIONS_PLACES_TYPES, "organisations_places"), (SPECIAL_TYPES, "special")):
        assert {default_class(t, listed=False, dimension=None) for t in types} == {expected}
