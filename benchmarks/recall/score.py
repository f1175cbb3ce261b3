"""Score a protector on the held-out corpus: weighted leak per family, and the share of needed strings that survive.

The scan is independent of the detectors. A value counts as leaked when its identifying core can be read from the
body that would leave, in any surface form. Every key and string of that body is read in several *views*: as
sent, then decoded step by step until nothing changes (format characters such as zero-width spaces dropped, JSON
escapes such as ``\\n`` and ``\\u0040`` decoded — once per step, so a JSON document inside a JSON string inside a
tool result is read at every depth —, HTML entities and %-escapes decoded, NFKC), plus the text of base64 segments
that decode to text. Each view is case-folded and its whitespace runs collapsed (a value wrapped across an indented
line reads as one). A value's core is searched with up to three separators between its letters and digits, and
not inside a longer run of letters and digits. Decoding in every order matters: a %-escaped full-width digit is
only a digit after %-decoding *and then* NFKC.

The core is ``Value.core`` where the generator set one (the password in a connection string, one line of a PEM
body), otherwise the whole text, except for an ICAO MRZ line: there the document number (and, on a name line, the
name) is what identifies the holder, not the ``<`` filler, so that is searched — as the line's first field,
followed by anything. A value written in base64 (a Kubernetes ``data:`` entry, a Basic auth token) is also
found by the text it decodes to.

Values the generator annotated but did not write into the body (a JSON record keeps only the last of two values
under the same key) are counted apart, not as protected: ``present`` finds every value whose core's letters and
digits appear in a view of the original body in that order with nothing between them but other characters.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import json
import re
import unicodedata
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from benchmarks.recall.corpus import Case
from benchmarks.recall.values import FAMILIES, Value

_WORD = "A-Za-z0-9\u4e00-\u9fff"
_SEP = rf"[^{_WORD}]{{0,3}}"  # any separators, '@' and '%' included
_VIEW_GAP = "\n" + "|" * 8 + "\n"  # between views: longer than any separator run, so no match spans two views
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\"\\/bfnrt]))")
_JSON_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": " ", "f": " ", "n": "\n", "r": "\n", "t": "\t"}
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_MRZ_DATA = re.compile(r"[A-Z0-9<]{9}[0-9][A-Z<]{3}[0-9]{6}[0-9][MFX<][0-9]{6}[0-9][A-Z0-9<]{14}[0-9<][0-9]")
_MRZ_NAME = re.compile(r"[A-Z][A-Z<][A-Z<]{3}([A-Z<]{39})")
_MAX_STEPS = 8


def _strings(body: Any) -> list[str]:
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                parts.append(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif value is not None:
            parts.append(str(value))  # numbers and booleans as text

    walk(body)
    return parts


def _json_unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        return chr(int(m.group(1), 16)) if m.group(1) else _JSON_SIMPLE[m.group(2)]
    return _JSON_ESCAPE.sub(one, text)


def _drop_format(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")  # zero-width, soft hyphen, bidi marks


def _decode_step(text: str) -> str:
    text = _drop_format(text)
    text = _json_unescape(text)
    text = html.unescape(text)
    text = urllib.parse.unquote(text, errors="surrogateescape")
    return unicodedata.normalize("NFKC", text)


def _base64_text(segment: str) -> str | None:
    segment = segment.rstrip("=")
    try:
        raw = base64.b64decode(segment.replace("-", "+").replace("_", "/") + "=" * (-len(segment) % 4),
                               validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if text and all(ch.isprintable() or ch in "\n\r\t" for ch in text) else None


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold())


def _chain(text: str) -> list[str]:
    """The text, then each decoding step of it until nothing changes."""
    views = [text]
    for _ in range(_MAX_STEPS):
        decoded = _decode_step(views[-1])
        if decoded == views[-1]:
            break
        views.append(decoded)
    return views


def _views(text: str) -> list[str]:
    views = _chain(text)
    inner = [t for v in views for seg in _BASE64.findall(v) if (t := _base64_text(seg)) is not None]
    return views + (_chain("\n".join(inner)) if inner else [])


def normalised_text(body: dict[str, Any]) -> str:
    """Every view of the body's keys and strings, folded, one after another (no match can span two)."""
    return _VIEW_GAP.join(_fold(v) for v in _views("\n".join(_strings(body))))


def _chars(core: str) -> list[str]:
    return [c for c in _fold(unicodedata.normalize("NFKC", _drop_format(core))) if c.isalnum()]


@functools.lru_cache(maxsize=4096)
def _pattern(core: str, open_start: bool = False, open_end: bool = False, flags: int = 0) -> re.Pattern[str] | None:
    """Views and cores are case-folded already: no IGNORECASE (on the negated classes it costs ~0.2 s a compile)."""
    chars = _chars(core)
    if not chars:
        return None
    start = "" if open_start else r"(?<![A-Za-z0-9])"
    end = "" if open_end else r"(?![A-Za-z0-9])"
    return re.compile(start + _SEP.join(map(re.escape, chars)) + end, flags)


def value_pattern(secret: str) -> re.Pattern[str]:
    """The whole-text pattern, case-insensitive, for text not folded by ``normalised_text``."""
    pattern = _pattern(secret, flags=re.IGNORECASE)
    if pattern is None:
        raise ValueError(f"nothing to search for in {secret!r}")
    return pattern


@dataclass(frozen=True)
class Core:
    text: str
    open_start: bool = False  # the core ends a longer token (an MRZ name after the issuing state)
    open_end: bool = False  # the core starts a longer token (an MRZ line's document number)


def cores(value: Value) -> list[Core]:
    """What identifies the value, in each form it may be read in (any one of them found is a leak)."""
    line = re.sub(r"\s", "", value.text).upper()
    if _MRZ_DATA.fullmatch(line):
        return [Core(line[:9].rstrip("<"), open_end=True)]  # the document number
    if (name := _MRZ_NAME.fullmatch(line)) and "<<" in line:
        surname, _, given = name.group(1).strip("<").partition("<<")
        return [Core(" ".join(surname.split("<") + given.split("<")), open_start=True)]
    secret = value.secret
    found = [Core(secret)]
    unquoted = urllib.parse.unquote(secret)
    if unquoted != secret:
        found.append(Core(unquoted))
    if _BASE64.fullmatch(secret) and (plain := _base64_text(secret)) is not None and len(_chars(plain)) >= 8:
        found.append(Core(plain))
    return found


def leaked(value: Value, sent: str) -> bool:
    """Whether ``sent`` (``normalised_text`` of the body that leaves) shows the value's identifying core."""
    for core in cores(value):
        pattern = _pattern(core.text, core.open_start, core.open_end)
        if pattern is not None and pattern.search(sent):
            return True
    return False


def present(value: Value, original: str) -> bool:
    """A looser test than ``leaked``, on the body as generated: are the core's letters and digits there in order?"""
    compact = "".join(ch for ch in original if ch.isalnum())
    return any("".join(_chars(core.text)) in compact for core in cores(value))


@dataclass
class Figures:
    weight: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    leaked: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    weight_all: float = 0.0
    leaked_all: float = 0.0
    needed: int = 0
    kept: int = 0
    leaks: list[tuple[str, str, str]] = field(default_factory=list)
    missed: list[tuple[str, str, str]] = field(default_factory=list)  # unprotected runs: present, yet not found
    absent: list[tuple[str, str, str]] = field(default_factory=list)  # annotated, not in the body: not scored
    blocked: int = 0  # cases the last check kept off the cloud
    cases: int = 0

    def add(self, case: Case, sent: dict[str, Any]) -> None:
        self.cases += 1
        text = normalised_text(sent)
        original = text if sent is case.body else normalised_text(case.body)
        raw = "\n".join([json.dumps(sent, ensure_ascii=False), *_strings(sent)])
        for value in case.values:
            if not present(value, original):
                self.absent.append((case.id, value.field, value.text))
                continue
            hit = leaked(value, text)
            self.weight_all += value.weight
            self.leaked_all += value.weight * hit
            if not value.detectable:
                continue
            self.weight[value.family] += value.weight
            if hit:
                self.leaked[value.family] += value.weight
                self.leaks.append((case.id, value.family, value.field))
            elif sent is case.body:
                self.missed.append((case.id, value.family, value.text))
        for needed in case.needed:
            self.needed += 1
            self.kept += needed in raw

    def leak(self, family: str | None = None) -> float:
        if family is None:
            total = sum(self.weight.values())
            return sum(self.leaked.values()) / total if total else 0.0
        return self.leaked[family] / self.weight[family] if self.weight[family] else 0.0

    def survival(self) -> float:
        return self.kept / self.needed if self.needed else 1.0

    def table(self, title: str) -> str:
        lines = [f"### {title}", "", "| family | weighted leak |", "|---|---|"]
        lines += [f"| {f} | {self.leak(f):.1%} |" for f in FAMILIES]
        lines += [f"| **detectable, all families** | **{self.leak():.1%}** |",
                  f"| all units (incl. list-only) | {self.leaked_all / self.weight_all if self.weight_all else 0:.1%} |",
                  f"| needed strings kept | {self.survival():.1%} |",
                  f"| cases kept off the cloud (blocked) | {self.blocked} of {self.cases + self.blocked} |",
                  f"| annotated values not in the body (not scored) | {len(self.absent)} |", ""]
        return "\n".join(lines)
