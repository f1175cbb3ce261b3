"""The local edge model as a detector layer: it lists the sensitive values it sees in a prose segment.

The edge is local and may see raw values (it is not the cloud door). Its answer is never trusted as text: a span
is kept only when it occurs verbatim in the segment it was asked about, with a type mapped to the project's
finding types. Answers are cached per segment content hash (bounded). The edge being down or erroring raises
``EdgeDetectorError`` (``on_error: fail``, the detector fails closed) or finds nothing (``on_error: skip``);
an answer that is not the JSON asked for finds nothing.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from accounting.errors import EcgwError
from privacy.detect.ner import Entity
from privacy.settings import EdgeDetectorSettings

log = logging.getLogger(__name__)

Chat = Callable[[list[dict[str, str]]], str]  # the edge model: messages in, the assistant's text out


class EdgeDetectorError(EcgwError):
    """The edge model could not be asked (down, timed out, an HTTP error)."""


@dataclass(frozen=True)
class EdgeEndpoint:
    """Where the edge model answers: an OpenAI-compatible ``/v1`` base URL, the model name, an optional key."""

    base_url: str
    model: str
    api_key: str | None = None


class HttpEdgeChat:
    """``POST {base_url}/chat/completions``, synchronous (detection runs in worker threads), temperature 0."""

    def __init__(self, endpoint: EdgeEndpoint, settings: EdgeDetectorSettings) -> None:
        self._endpoint = endpoint
        self._settings = settings
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self._client = httpx.Client(timeout=settings.timeout_s, headers=headers)

    def __call__(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {"model": self._endpoint.model, "messages": messages, "temperature": 0,
                                "max_tokens": self._settings.max_tokens, "stream": False}
        if self._settings.json_mode:
            body["response_format"] = {"type": "json_object"}
        url = self._endpoint.base_url.rstrip("/") + "/chat/completions"
        try:
            response = self._client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise EdgeDetectorError(f"edge model at {self._endpoint.base_url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise EdgeDetectorError(f"edge model at {self._endpoint.base_url}: HTTP {response.status_code}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, LookupError, TypeError) as exc:
            raise EdgeDetectorError(f"edge model at {self._endpoint.base_url}: not a chat completion") from exc
        return content if isinstance(content, str) else ""

    def close(self) -> None:
        self._client.close()


_SYSTEM = ("You find private data in text. Answer with JSON only: "
           '{"spans": [{"type": TYPE, "text": EXACT TEXT}]}. '
           "TYPE is one of PERSON, LOCATION, EMAIL, PHONE, ID_NUMBER, ACCOUNT_NUMBER, PASSWORD, DATE_OF_BIRTH, "
           "AMOUNT. TEXT is copied exactly from the input. "
           'Private data: names of people, street addresses, emails, phone numbers, passport, licence and other ID '
           'numbers, bank accounts, passwords, birth dates, salaries. Nothing private: {"spans": []}.')

_EXAMPLES: list[tuple[str, list[tuple[str, str]]]] = [
    ("Please call Tamsin Achterberg on 020 7946 0321 about the invoice.",
     [("PERSON", "Tamsin Achterberg"), ("PHONE", "020 7946 0321")]),
    ("Run the tests again and summarise the failures.", []),
    ("Her passport number is K48213977 and she lives at 14 Wyebridge Lane, Leeds.",
     [("ID_NUMBER", "K48213977"), ("LOCATION", "14 Wyebridge Lane, Leeds")]),
    ("The admin password is tulip-Moon-42; salary 84,500 EUR.",
     [("PASSWORD", "tulip-Moon-42"), ("AMOUNT", "84,500 EUR")]),
]

# What the model may call a value → the finding types the other layers use (placeholders, actions, audit).
_TYPES = {
    "PERSON": "PERSON", "NAME": "PERSON", "FULL_NAME": "PERSON",
    "LOCATION": "LOCATION", "ADDRESS": "LOCATION", "STREET_ADDRESS": "LOCATION",
    "EMAIL": "EMAIL_ADDRESS", "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "PHONE": "PHONE_NUMBER", "PHONE_NUMBER": "PHONE_NUMBER",
    "ID_NUMBER": "NATIONAL_ID", "ID": "NATIONAL_ID", "NATIONAL_ID": "NATIONAL_ID", "PASSPORT": "PASSPORT",
    "ACCOUNT_NUMBER": "ACCOUNT_NUMBER", "ACCOUNT": "ACCOUNT_NUMBER", "BANK_ACCOUNT": "ACCOUNT_NUMBER",
    "IBAN": "IBAN_CODE", "CREDIT_CARD": "CREDIT_CARD",
    "PASSWORD": "PASSWORD", "SECRET": "PASSWORD", "API_KEY": "PASSWORD", "TOKEN": "PASSWORD",
    "DATE_OF_BIRTH": "DATE_OF_BIRTH", "AMOUNT": "AMOUNT", "SALARY": "AMOUNT",
}
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*_\d{3}\]")
_MAX_SPAN = 200


def _messages(segment: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": _SYSTEM}]
    for text, spans in _EXAMPLES:
        answer = {"spans": [{"type": t, "text": s} for t, s in spans]}
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": json.dumps(answer)}]
    messages.append({"role": "user", "content": segment})
    return messages


def _items(answer: str) -> list[Any] | None:
    """The list of spans in the model's answer, whatever text wraps it; None when it holds no such JSON. A server
    whose chat template HTML-escapes messages (llama-cpp's chatml-function-calling) teaches the model to answer
    ``{&#34;spans&#34;: …``: that is read unescaped."""
    found = _json_list(answer)
    return found if found is not None or "&" not in answer else _json_list(html.unescape(answer))


def _json_list(answer: str) -> list[Any] | None:
    start = min((i for i in (answer.find("{"), answer.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        parsed, _ = json.JSONDecoder().raw_decode(answer[start:])
    except ValueError:
        return None
    if isinstance(parsed, dict):
        parsed = parsed.get("spans")
    return parsed if isinstance(parsed, list) else None


def _plausible(text: str, type_: str) -> bool:
    """A value, not a word of the instructions: a digit, a capital, '@' or a non-ASCII letter (any password)."""
    if type_ == "PASSWORD":
        return len(text) >= 4
    return any(ch.isdigit() or ch.isupper() or ch == "@" or (ch.isalpha() and not ch.isascii()) for ch in text)


@dataclass(frozen=True)
class Answer:
    spans: list[Entity]  # verbatim in the segment, typed
    rejected: int  # spans dropped: not verbatim, not a plausible value, malformed
    junk: bool  # the answer held no JSON list of spans


def spans_in(answer: str, segment: str) -> Answer:
    """The answer's spans that occur verbatim in ``segment``, typed."""
    items = _items(answer)
    kept: dict[str, Entity] = {}
    rejected = 0
    for item in items or ():
        if not isinstance(item, dict):
            rejected += 1
            continue
        text, raw_type = item.get("text", item.get("value")), item.get("type")
        if not isinstance(text, str) or not isinstance(raw_type, str):
            rejected += 1
            continue
        text = text.strip()
        type_ = _TYPES.get(raw_type.strip().upper().replace(" ", "_"), "PII")
        if (len(text) < 2 or len(text) > _MAX_SPAN or text not in segment or _PLACEHOLDER.search(text)
                or not _plausible(text, type_)):
            rejected += 1
            continue
        kept.setdefault(text, Entity(type_, text, 1.0))
    return Answer(list(kept.values()), rejected, items is None)


@dataclass
class EdgeStats:
    calls: int = 0  # segments the edge model was asked about
    cached: int = 0  # segments answered from the cache
    failed: int = 0  # calls that failed (edge down, timeout, HTTP error)
    junk: int = 0  # answers that held no JSON list of spans
    spans: int = 0  # spans kept
    rejected: int = 0  # spans dropped: not verbatim in the segment, or not a plausible value
    seconds: float = 0.0  # wall-clock time spent in calls
    types: Counter[str] = field(default_factory=Counter)  # spans kept per finding type


class EdgeSpanLister:
    """``entities(segments)`` (the ``EntityRecognizer`` protocol, as NER): per segment, the sensitive values the
    edge model lists, verbatim only. Thread-safe; one call per uncached segment."""

    def __init__(self, chat: Chat, settings: EdgeDetectorSettings) -> None:
        self._chat = chat
        self._settings = settings
        self._cache: OrderedDict[bytes, list[Entity]] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = EdgeStats()

    @property
    def max_segment_chars(self) -> int:
        return self._settings.max_segment_chars

    def warm(self) -> None:
        """Nothing to load here: the model is the edge server's."""

    def entities(self, segments: list[str], *, scope: str = "") -> list[list[Entity]]:
        unique = list(dict.fromkeys(segments))
        if len(unique) > 1 and self._settings.concurrency > 1:  # an edge server batches concurrent requests
            with ThreadPoolExecutor(min(self._settings.concurrency, len(unique))) as pool:
                answers = dict(zip(unique, pool.map(lambda s: self._segment(s, scope), unique), strict=True))
        else:
            answers = {segment: self._segment(segment, scope) for segment in unique}
        return [answers[segment] for segment in segments]

    def _segment(self, segment: str, scope: str) -> list[Entity]:
        key = hashlib.blake2b(scope.encode("utf-8", "surrogatepass") + b"\0" + segment.encode("utf-8", "surrogatepass"),
                              digest_size=16).digest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self.stats.cached += 1
                return cached
        began = time.perf_counter()
        try:
            answer = self._chat(_messages(segment))
        except EdgeDetectorError:
            with self._lock:
                self.stats.failed += 1
                self.stats.seconds += time.perf_counter() - began
            if self._settings.on_error == "fail":
                raise
            log.warning("edge detector: the edge model did not answer; this segment goes without it (on_error: skip)")
            return []  # not cached: the next request asks again
        parsed = spans_in(answer, segment)
        with self._lock:
            self.stats.calls += 1
            self.stats.seconds += time.perf_counter() - began
            self.stats.junk += parsed.junk
            self.stats.spans += len(parsed.spans)
            self.stats.types.update(e.type for e in parsed.spans)
            self.stats.rejected += parsed.rejected
            self._cache[key] = parsed.spans
            if len(self._cache) > self._settings.cache_entries:
                self._cache.popitem(last=False)
        return parsed.spans
