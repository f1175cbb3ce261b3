"""The layers issue 38 added for real user text, run as the profile says (``privacy.detect.profile``): link and
path segments and identifiers by context (``links``, ``context_ids``), the special categories (``specials``), and
organisations, places and people a word points at (``anchored``)."""

from __future__ import annotations

import threading

from privacy.detect.anchored import AnchoredMentions
from privacy.detect.context_ids import ContextIdentifiers
from privacy.detect.findings import Finding
from privacy.detect.given_names import GivenNames
from privacy.detect.links import LinkSegments
from privacy.detect.profile import ProfileRules
from privacy.detect.specials import SpecialCategories

LAYERS = ("links", "ids", "special", "anchored")


class RealTextDetector:
    def __init__(self, given: GivenNames) -> None:
        self._links = LinkSegments(given)
        self._ids = ContextIdentifiers()
        self._special = SpecialCategories()
        self._anchored = AnchoredMentions(given)

    def warm(self) -> None:
        self._anchored.warm()

    def find(self, text: str, rules: ProfileRules) -> list[Finding]:
        found: list[Finding] = []
        if rules.link_segments:
            found += self._links.find(text, strict=rules.whole_links)
            found += self._ids.find(text, strict=rules.whole_links)
        if rules.special:
            found += self._special.find(text, strict=rules.unanchored)
        if rules.anchored:
            found += self._anchored.find(text, strict=rules.unanchored)
        return found


_SHARED: list[RealTextDetector] = []
_SHARED_LOCK = threading.Lock()


def shared_realtext() -> RealTextDetector:
    """One per process (its given-name list loads once, on first use or at the gateway's warm-up)."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(RealTextDetector(GivenNames()))
        return _SHARED[0]
