"""One text read in every surface form it could be read in — NFKC, look-alikes read as ASCII, invisible
characters removed, HTML entities, %-escapes, ``\\u`` escapes, base64 (MIME wrapped or nested), hex and base32
segments that decode to text — by the secrets and pattern layers and the listed units; each finding with whether
it stands literally in the text (then it can be replaced where it stands) or only an encoding reveals it.

Results are cached by content, label and scope (``TextScan``), so a string seen at an earlier step costs a lookup.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from privacy.detect import Finding, TextDetector, UnitMatcher, canonical, encoded_segments, fold, variants

_FUZZY = frozenset({"PERSON", "LOCATION", "AMOUNT"})  # shapes two unrelated texts can form when glued


class LabelledDetector(Protocol):
    def find(self, text: str, label: str | None) -> list[Finding]: ...


@dataclass
class Scanned:
    canonical: str
    findings: list[tuple[Finding, bool]]  # (finding, stands literally in the text)


class TextScan:
    """The detectors over one text's forms, cached. ``detectors``: the secrets and pattern layers; ``labelled``:
    the layer that also reads the key a value sits under."""

    def __init__(self, detectors: Sequence[TextDetector], labelled: Sequence[LabelledDetector] = (), *,
                 cache_entries: int = 50_000) -> None:
        self._detectors = detectors
        self._labelled = labelled
        self._cache: OrderedDict[tuple[bytes, str], Scanned] = OrderedDict()
        self._entries = cache_entries

    def _cached(self, key: tuple[bytes, str]) -> Scanned | None:
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
        return hit

    def _put(self, key: tuple[bytes, str], value: Scanned) -> None:
        self._cache[key] = value
        if len(self._cache) > self._entries:
            self._cache.popitem(last=False)

    def _find(self, form: str, label: str | None, units: UnitMatcher | None) -> list[Finding]:
        found = [f for detector in self._detectors for f in detector.find(form)]
        found += [f for detector in self._labelled for f in detector.find(form, label)]
        if units is not None:
            found += units.find(form)
        return found

    def scan(self, text: str, label: str | None, units: UnitMatcher | None, scope: str) -> Scanned:
        """Findings in every surface form of ``text``; each with whether it stands literally in ``text``."""
        digest = (text.encode("utf-8", "surrogatepass") if len(text) <= 64 else
                  hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
        key = (digest, f"{scope}\0{label or ''}")
        scanned = self._cached(key)
        if scanned is not None:
            return scanned
        out: list[tuple[Finding, bool]] = []
        hidden: list[tuple[Finding, str]] = []  # (finding, the form it was read in) visible only decoded
        seen: set[tuple[str, str]] = set()
        normal = canonical(text)
        for n, form in enumerate(variants(text)):
            if n == 0:
                form = fold(text)  # full-width forms read as ASCII, offsets kept: every finding stands in text
            for finding in self._find(form, label, units):
                span = (text if n == 0 else form)[finding.start:finding.end]
                if (finding.key, span) in seen:
                    continue
                seen.add((finding.key, span))
                if n == 0:
                    out.append((replace(finding, value=span), True))
                elif form == normal and form.count(span) <= text.count(span):
                    continue  # every occurrence of it stands literally in text: found above
                else:  # visible only decoded (an escape, zero-width characters, base64): cannot be placed
                    hidden.append((replace(finding, value=span), form))
        if hidden:  # a base64 segment standing in text is replaced whole when what it decodes to holds a hit
            out += self._encoded_segments(text, label, units)
        if hidden and out:  # what replacing the literal hits removes too (a full-width value read as ASCII)
            rest = text
            for finding, _ in sorted(out, key=lambda h: -len(h[0].value)):
                rest = rest.replace(finding.value, "\0")
            views = list(variants(rest))
            hidden = [(f, form) for f, form in hidden if any(f.value in view for view in views)]
        out += [(f, False) for f, _ in hidden]
        scanned = Scanned(normal, out)
        self._put(key, scanned)
        return scanned

    def _encoded_segments(self, text: str, label: str | None, units: UnitMatcher | None,
                          ) -> list[tuple[Finding, bool]]:
        """Each encoded segment of ``text`` whose decoded text holds a finding, as a placeable finding of that type
        whose value is the segment itself (the agent gets the segment back on restore; the cloud sees neither)."""
        out: list[tuple[Finding, bool]] = []
        for start, end, decoded in encoded_segments(text):
            segment = text[start:end]
            for found in sorted(self._find(decoded, label, units), key=lambda f: -len(f.value)):
                # each finding keeps its type and unit; all stand for the one segment (placed once, longest first)
                out.append((replace(found, start=start, end=end, value=segment,
                                    key=f"{found.type}:base64:{segment}"), True))
        return out

    def split(self, glued: str, boundary: int, units: UnitMatcher | None, scope: str) -> list[Finding]:
        """Findings that span the seam of two glued texts (cached like any text)."""
        key = (hashlib.blake2b(glued.encode("utf-8", "surrogatepass"), digest_size=16).digest(),
               f"{scope}\0\0seam{boundary}")
        scanned = self._cached(key)
        if scanned is None:
            found = [f for f in self._find(fold(glued), None, units)
                     if f.start < boundary < f.end and (f.layer == "units" or f.type not in _FUZZY)]
            scanned = Scanned("", [(f, False) for f in found])
            self._put(key, scanned)
        return [f for f, _ in scanned.findings]
