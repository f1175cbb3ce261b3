"""What a cloud answer carries that its request never did: the scan behind ``privacy.response_guard``.

The answer (after restore) is read by the last check's own detectors — secrets, patterns, identifiers, phones,
labelled values and the session's listed units (``privacy.factory.last_check_detectors``) — never NER, whose
findings could not be bounded for a stream's hold-back. A finding is *inbound* unless the call carried it: a value
this call's placeholders restore, or one that stands in the request (the client's body or the body that left), in
any surface form (compared without case, spacing or punctuation). Redaction replaces an inbound value with
``[INBOUND_<TYPE>]``; in JSON text (tool-call arguments) the replacement stays inside the string the value stood in,
and a bare number becomes the quoted placeholder, so the arguments stay valid JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from privacy.detect import Finding, TextDetector, UnitMatcher, canonical, fold, resolve_overlaps

_NOT_ALNUM = re.compile(r"[\W_]+")


class LabelledDetector(Protocol):
    def find(self, text: str, label: str | None) -> list[Finding]: ...


def placeholder(finding: Finding) -> str:
    return f"[INBOUND_{finding.type}]"


def _compact(text: str) -> str:
    return _NOT_ALNUM.sub("", canonical(text)).casefold()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield repr(value)


class Carried:
    """What one call carried: its request's strings (as the client sent them and as they left) and the values its
    placeholders restore. Joined on first use only: most answers hold no finding at all."""

    def __init__(self, bodies: Sequence[dict[str, Any]], restored: Iterable[str]) -> None:
        self._bodies = bodies
        self._restored = [_compact(v) for v in restored]
        self._joined: str | None = None

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        core = _compact(value)
        if not core:
            return True
        if any(core in r for r in self._restored):
            return True
        if self._joined is None:
            self._joined = "\0".join(_compact(text) for body in self._bodies for text in _strings(body))
        return core in self._joined


@dataclass(frozen=True)
class InboundScanner:
    """The detectors an answer is read with; ``units``: the session's listed units (None: none)."""

    detectors: Sequence[TextDetector]
    labelled: Sequence[LabelledDetector] = ()

    def find(self, text: str, units: UnitMatcher | None, carried: Carried) -> list[Finding]:
        """Inbound findings of ``text``, disjoint and in order; spans fit ``text`` (look-alikes read as ASCII)."""
        if not text.strip():
            return []
        form = fold(text)
        found = [f for d in self.detectors for f in d.find(form)]
        found += [f for d in self.labelled for f in d.find(form, None)]
        if units is not None:
            found += units.find(form)
        out = []
        for f in resolve_overlaps(found):
            span = text[f.start:f.end]
            if span.strip() and span not in carried and (f.layer != "units" or f.value not in carried):
                out.append(replace(f, value=span))
        return out


@dataclass
class JsonState:
    """Where a JSON text stands after the characters read so far: outside a string, inside one, or in an escape."""

    state: str = "out"  # out | str | esc | u1..u4 (hex digits of a \\u escape still to come)

    def read(self, text: str) -> None:
        for ch in text:
            self.state = _step(self.state, ch)


def _step(state: str, ch: str) -> str:
    if state == "out":
        return "str" if ch == '"' else "out"
    if state == "str":
        return "out" if ch == '"' else "esc" if ch == "\\" else "str"
    if state == "esc":
        return "u4" if ch == "u" else "str"
    left = int(state[1]) - 1  # u1..u4
    return "str" if left == 0 else f"u{left}"


_NUMBER = "+-.0123456789eE"


def redact(text: str, findings: Sequence[Finding], json_state: JsonState | None = None) -> str:
    """``text`` with each finding (disjoint, in order, spans of ``text``) replaced by its placeholder. With
    ``json_state`` (where the JSON text stood before ``text``; advanced over ``text``), a replacement stays valid
    JSON: inside a string it ends where the string does and never cuts an escape; outside one (a bare number) it
    takes the whole number and is quoted."""
    if json_state is None:
        out, pos = [], 0
        for f in findings:
            out += [text[pos:f.start], placeholder(f)]
            pos = f.end
        return "".join(out + [text[pos:]])
    out, pos = [], 0
    for f in findings:
        if f.start < pos:
            continue
        json_state.read(text[pos:f.start])
        out.append(text[pos:f.start])
        start, end = f.start, f.end
        if json_state.state == "out":
            while start > pos and text[start - 1] in _NUMBER:
                start -= 1
            while end < len(text) and text[end] in _NUMBER:
                end += 1
            out[-1] = out[-1][:len(out[-1]) - (f.start - start)]
            out.append(json.dumps(placeholder(f)))
            pos = end
            continue
        state = json_state.state
        while state not in ("str", "out") and start < end:  # an escape under way: it stays whole
            state = _step(state, text[start])
            out.append(text[start])
            start += 1
        i = start
        while i < len(text) and (i < end or state not in ("str", "out")):
            if state == "str" and text[i] == '"':
                break  # the string ends here: the rest of the span is not inside it
            state = _step(state, text[i])
            i += 1
        json_state.state = state
        out.append(placeholder(f))
        pos = i
    json_state.read(text[pos:])
    out.append(text[pos:])
    return "".join(out)
