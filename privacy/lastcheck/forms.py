"""One text read in every surface form it could be read in — NFKC, look-alikes read as ASCII, invisible
characters removed, HTML entities, %-escapes, ``\\u`` escapes, base64 (MIME wrapped or nested), hex and base32
segments that decode to text — by the secrets and pattern layers and the listed units; each finding with whether
it stands literally in the text (then it can be replaced where it stands) or only an encoding reveals it. A value
only a decoding reveals is still placeable where its escaped form can be found (``obfuscated.escaped_span``);
listed units are also read backwards, in rot13, dotted or spaced out, spelled out and in base85 (``obfuscated``).

Results are cached by content, label and scope (``TextScan``), so a string seen at an earlier step costs a lookup.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from privacy.detect import Finding, TextDetector, UnitMatcher, canonical, encoded_segments, fold, variants
from privacy.lastcheck.obfuscated import base85_segments, escaped_span, views

_MAX_PLACED = 32  # hidden findings of one text looked for in an escaped form (past it: the step stays home)
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
        hidden = self._placed(text, hidden, out)
        if hidden:  # a base64 segment standing in text is replaced whole when what it decodes to holds a hit
            out += self._encoded_segments(text, label, units)
        if hidden and out:  # what replacing the literal hits removes too (a full-width value read as ASCII)
            rest = text
            for finding, _ in sorted(out, key=lambda h: -len(h[0].value)):
                rest = rest.replace(finding.value, "\0")
            views = list(variants(rest))
            hidden = [(f, form) for f, form in hidden if any(f.value in view for view in views)]
        out += [(f, False) for f, _ in hidden]
        if units is not None and len(units):
            out += self._obfuscated(text, units)
        scanned = Scanned(normal, out)
        self._put(key, scanned)
        return scanned

    @staticmethod
    def _placed(text: str, hidden: list[tuple[Finding, str]],
                out: list[tuple[Finding, bool]]) -> list[tuple[Finding, str]]:
        """Each hidden finding whose value stands in ``text`` %-escaped, as HTML references, ``\\u`` escapes or
        with invisible characters inside becomes a placeable finding of that span (what protection would have
        replaced, so the step is not lost to the edge); the rest stay hidden."""
        still: list[tuple[Finding, str]] = []
        placed = {(f.type, f.start, f.end) for f, _ in out}
        for n, (finding, form) in enumerate(hidden):
            span = escaped_span(text, finding.value) if n < _MAX_PLACED else None  # each search reads the text
            if span is None or text[span[0]:span[1]] == finding.value:
                still.append((finding, form))
            elif (finding.type, *span) not in placed:
                placed.add((finding.type, *span))
                segment = text[span[0]:span[1]]
                out.append((replace(finding, start=span[0], end=span[1], value=segment,
                                    key=f"{finding.type}:escaped:{segment}"), True))
        return still

    def _obfuscated(self, text: str, units: UnitMatcher) -> list[tuple[Finding, bool]]:
        """Listed values written backwards, in rot13, one dot or space after each character, digits spelled out
        (``obfuscated.views``: replaced where they stand) or in ascii85/base85 (the segment replaced whole)."""
        out: list[tuple[Finding, bool]] = []
        for view in views(text):
            for found in units.find(view.text):
                start, end = view.raw_span(found.start, found.end)
                segment = text[start:end]
                if segment == view.text[found.start:found.end]:
                    continue  # it stands as it is: the plain scan found it
                out.append((replace(found, start=start, end=end, value=segment,
                                    key=f"{found.type}:{view.how}:{segment}"), True))
        for start, end, decoded in base85_segments(text):
            segment = text[start:end]
            for found in units.find(decoded):
                out.append((replace(found, start=start, end=end, value=segment,
                                    key=f"{found.type}:base85:{segment}"), True))
        return out

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
