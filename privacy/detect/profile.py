"""What each privacy profile detects: the finding types and detector behaviours of ``strict``, ``balanced`` and
``minimal``.

Which profile a request runs under is decided elsewhere (``privacy.profile``, per tenant and per key); the layered
detector takes it as an input and every cache of detections keys on it. The families below are the finding types
the data classes (``privacy.classes``) are built on; a detector emits only these names for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Profile = Literal["strict", "balanced", "minimal"]
PROFILES: tuple[Profile, ...] = ("strict", "balanced", "minimal")
DEFAULT_PROFILE: Profile = "balanced"

# Finding types by family (the classes engineer maps them to data classes).
ONLINE_TYPES = frozenset({"URL", "FILE_PATH", "USERNAME", "APP_ID", "IP_ADDRESS"})
PEOPLE_TYPES = frozenset({"PERSON"})
ORGANISATIONS_PLACES_TYPES = frozenset({"ORGANIZATION", "LOCATION", "STREET_ADDRESS"})
SPECIAL_TYPES = frozenset({"HEALTH", "NRP", "RELIGION", "POLITICAL_OPINION", "SEXUAL_ORIENTATION"})


@dataclass(frozen=True)
class ProfileRules:
    """What one profile's detection emits."""

    layers: frozenset[str] | None  # the layers whose findings are kept (None: every layer)
    ner_types: frozenset[str]  # the spaCy NER types kept (beside ``privacy.ner.entities``, which can only narrow)
    special: bool  # health, nationality/ethnicity groups, religion, political opinion, sexual orientation
    anchored: bool  # organisations, places and one-name people a first-person or relation word points at
    # (``I work at …``, ``we stayed at …``, ``my son Leo``, ``ask Priya``)
    unanchored: bool  # every organisation and place NER finds, and a capitalised given name alone anywhere
    link_segments: bool  # the identifying segment of a path, URL or app id (``/home/<user>/``,
    # ``github.com/<user>/``, ``com.<name>.app``), and a letters-and-digits identifier in an identifying context
    whole_links: bool  # every URL outside a known public host is a finding as a whole; every letters-and-digits
    # identifier even with no context word

    def keeps_layer(self, layer: str) -> bool:
        return self.layers is None or layer in self.layers


_RULES: dict[Profile, ProfileRules] = {
    "strict": ProfileRules(layers=None, ner_types=frozenset({"PERSON", "LOCATION", "ORGANIZATION", "NRP"}),
                           special=True, anchored=True, unanchored=True, link_segments=True, whole_links=True),
    # NER's NRP reads every nationality adjective as a group (``Japanese food``): balanced takes groups from the
    # special-category layer, which asks that the word say who someone is.
    "balanced": ProfileRules(layers=None, ner_types=frozenset({"PERSON", "LOCATION"}),
                             special=True, anchored=True, unanchored=False, link_segments=True, whole_links=False),
    "minimal": ProfileRules(layers=frozenset({"units", "secrets"}), ner_types=frozenset(),
                            special=False, anchored=False, unanchored=False, link_segments=False, whole_links=False),
}


def rules_of(profile: Profile) -> ProfileRules:
    """The detection rules of ``profile``."""
    return _RULES[profile]
