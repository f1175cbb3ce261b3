"""``privacy.response_guard``, for one cloud call: what its answer carries that the call never did
(``privacy.inbound``) is recorded (``audit``) or also replaced in what the client receives (``redact``).

An answer is guarded after restore, so a value restored from this call's own placeholders arrives intact (the call
carried it). Whole answers are scanned field by field (content, reasoning, refusal, thinking, tool-call arguments).

Streams, ``redact``: text is held back as long as a prefix could still become a finding, by this rule — everything
is released except (1) the last ``hold_chars`` characters (at least twice the session's longest listed unit): the
longest finding that spans whitespace (a phone or card written in groups, a name, a label and its value) fits in
it, so no finding that the next event could complete starts before it; (2) widened to the start of the run of
non-boundary characters (no whitespace, quotes, brackets, commas) the cut would fall into, up to
``max_token_chars``: a key, a token, a JWT or an email is never cut; (3) widened to the start of any finding the cut
would fall into (an armored private key block, whose finding runs to the end of the text until its END line comes),
and to an armor's ``-----BEGIN`` line not yet ended.
What is released is scanned with the text before it (a label already sent still names the value after it) and
redacted. The end of a choice, and the end of the stream, release everything. ``audit`` holds nothing back: it
keeps the text and scans it once the stream ends (or is cut short).

Each call's inbound findings are handed to ``record`` once: when a whole answer is guarded, or when the stream
ends or stops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from privacy.detect import Finding, UnitMatcher
from privacy.inbound import Carried, InboundScanner, JsonState, redact
from privacy.restore import answer_texts
from privacy.settings import ResponseGuardSettings

Found = tuple[str, str, str]  # (type, layer, where in the answer)
_BOUNDARY = frozenset(" \t\r\n\"'{}[](),;<>")
_CONTEXT = 96  # characters already released that a scan of the next ones reads too (a label before its value)


@dataclass
class _Held:
    where: str = ""
    pending: str = ""
    context: str = ""
    json: JsonState | None = None
    full: list[str] = field(default_factory=list)  # audit: the text, scanned at the end


class AnswerGuard:
    def __init__(self, settings: ResponseGuardSettings, scanner: InboundScanner, units: UnitMatcher | None,
                 carried: Carried, record: Callable[[list[Found]], None] | None = None) -> None:
        self.action = settings.action
        self._scanner, self._units, self._carried, self._record = scanner, units, carried, record
        longest = max((len(u.value) for u in units.units), default=0) if units is not None else 0
        self.window = max(settings.hold_chars, 2 * longest)
        self._max_token = settings.max_token_chars
        self._found: list[Found] = []
        self._held: dict[tuple[int, str, int], _Held] = {}
        self._closed = False

    def _find(self, text: str) -> list[Finding]:
        return self._scanner.find(text, self._units, self._carried)

    def _note(self, found: list[Finding], where: str) -> None:
        self._found += [(f.type, f.layer, where) for f in found]

    # whole answers ----------------------------------------------------------------------------------------------
    def response(self, response: dict[str, Any]) -> dict[str, Any]:
        def guard(text: str, where: str, tool: str | None) -> str:
            found = self._find(text)
            self._note(found, where)
            if self.action != "redact" or not found:
                return text
            as_json = tool is not None and text.lstrip()[:1] in ("{", "[")
            return redact(text, found, JsonState() if as_json else None)

        out = answer_texts(response, guard)
        self.close()
        return out if self.action == "redact" else response

    # streams ------------------------------------------------------------------------------------------------------
    def holds(self, key: tuple[int, str, int]) -> bool:
        held = self._held.get(key)
        return held is not None and bool(held.pending)

    def take(self, key: tuple[int, str, int], where: str, text: str, *, final: bool, as_json: bool) -> str:
        """What of ``text`` (after what ``key``'s field held) may go out now, redacted."""
        held = self._held.setdefault(key, _Held(where))
        if as_json and held.json is None:
            held.json = JsonState()
        if self.action != "redact":
            held.full.append(text)
            return text
        buffer = held.pending + text
        cut = len(buffer) if final else self._cut(buffer)
        offset = len(held.context)
        found = [replace(f, start=max(0, f.start - offset), end=f.end - offset)
                 for f in self._find(held.context + buffer) if f.end > offset]
        moved = True
        while moved:  # never cut inside a finding: hold it whole
            moved = False
            for f in found:
                if f.start < cut < f.end:
                    cut, moved = f.start, True
        ready = [f for f in found if f.end <= cut and f.end > f.start]
        self._note(ready, where)
        out = redact(buffer[:cut], ready, held.json)
        held.context = (held.context + buffer[:cut])[-_CONTEXT:]
        held.pending = buffer[cut:]
        return out

    def _cut(self, buffer: str) -> int:
        cut = len(buffer) - self.window
        if cut <= 0:
            return 0
        start = cut
        while start > 0 and cut - start <= self._max_token and buffer[start - 1] not in _BOUNDARY \
                and buffer[start] not in _BOUNDARY:
            start -= 1
        cut = start if cut - start <= self._max_token else cut
        armor = buffer.rfind("-----BEGIN")
        if 0 <= armor < cut and "\n" not in buffer[armor:]:  # an armor line still coming (longer than the window)
            cut = armor
        return cut

    def close(self) -> None:
        """The end of the answer (or of the stream, however it ended): ``audit`` scans what streamed, and the call's
        inbound findings are recorded, once."""
        if self._closed:
            return
        self._closed = True
        if self.action != "redact":
            for held in self._held.values():
                self._note(self._find("".join(held.full)), held.where)
        if self._found and self._record is not None:
            self._record(list(self._found))


def location(key: tuple[int, str, int], tool: str) -> str:
    """Where a streamed field stands in the answer, as whole answers name it (``privacy.restore.answer_texts``)."""
    index, name, call = key
    if name == "arguments":
        return f"choices[{index}].tool_calls[{tool or call}].arguments"
    return f"choices[{index}].{name}"
