"""The last check's views of a text that a reader undoes in the head: written backwards, in rot13, with a dot or a
space after each character (``Z.Q.X.-4.4.7.1``), digits spelled out (``five three nine …``), and ascii85/base85
segments. Each view keeps where each of its characters stands in the text, so a listed value found in a view is
replaced where its obfuscated form stands (``raw_span``); base85 segments decode to text with no such map and are
replaced whole.

Only the session's listed units are read in these views (``forms.TextScan``): a pattern layer would find shapes by
chance in a reversed or rot13 text, and reading them all costs a scan per view. Linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass

_DIGIT_WORDS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
                "seven": "7", "eight": "8", "nine": "9", "零": "0", "一": "1", "二": "2", "三": "3", "四": "4",
                "五": "5", "六": "6", "七": "7", "八": "8", "九": "9"}
_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_SPELLED = re.compile(r"(?i)(?<![a-z])" + _WORD + r"(?![a-z])|[零一二三四五六七八九]")
_SPELLED_RUN = re.compile(r"(?i)(?<![a-z])" + _WORD + r"(?:[\s,\-]{1,3}" + _WORD + r"){1,40}(?![a-z])"
                          r"|[零一二三四五六七八九]{2,40}")
# A run of single characters each followed by one dot (or one space), the separators at odd offsets: Z.Q.X.-
_SPACED = re.compile(r"(?:[^\s.·•][.·•]){3,}[^\s.·•]|(?<!\S)(?:\S ){3,}\S(?!\S)")
_A85 = re.compile(r"<~[!-u\s]{5,}?~>")
_B85 = re.compile(r"(?<![0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~])[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{10,}")
_B64ISH = re.compile(r"[A-Za-z0-9+/=]+")


@dataclass(frozen=True)
class View:
    how: str  # reversed | rot13 | spaced | spelled
    text: str
    starts: tuple[int, ...]  # for each character of the view, where what it stands for begins in the text
    ends: tuple[int, ...]  # … and ends

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text a finding at ``start:end`` of the view stands on."""
        return min(self.starts[start:end]), max(self.ends[start:end])


def views(text: str) -> Iterator[View]:
    """The views of ``text`` that differ from it."""
    n = len(text)
    if n > 1:
        yield View("reversed", text[::-1], tuple(range(n - 1, -1, -1)), tuple(range(n, 0, -1)))
    rot = codecs.encode(text, "rot13")
    if rot != text:
        yield View("rot13", rot, tuple(range(n)), tuple(range(1, n + 1)))
    for how, pattern in (("spaced", _SPACED), ("spelled", _SPELLED_RUN)):
        view = _rewritten(text, how, pattern)
        if view is not None:
            yield view


def _rewritten(text: str, how: str, pattern: re.Pattern[str]) -> View | None:
    """``text`` with each run of ``pattern`` rewritten: separators between single characters dropped (``spaced``),
    spelled digits as digits (``spelled``); each character mapped to what it stands on."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in pattern.finditer(text):
        chars.append(text[pos:m.start()])
        starts.extend(range(pos, m.start()))
        ends.extend(range(pos + 1, m.start() + 1))
        if how == "spaced":
            for i in range(m.start(), m.end(), 2):
                chars.append(text[i])
                starts.append(i)
                ends.append(i + 1)
        else:
            for word in _SPELLED.finditer(text, m.start(), m.end()):
                chars.append(_DIGIT_WORDS[word.group(0).lower()])
                starts.append(word.start())
                ends.append(word.end())
        pos = m.end()
    if pos == 0:
        return None
    chars.append(text[pos:])
    starts.extend(range(pos, len(text)))
    ends.extend(range(pos + 1, len(text) + 1))
    return View(how, "".join(chars), tuple(starts), tuple(ends))


def base85_segments(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of each ascii85 (``<~…~>``) or base85 segment of ``text`` that decodes to text."""
    for m in _A85.finditer(text):
        decoded = _decoded(lambda s: base64.a85decode(s, adobe=True, ignorechars=b" \t\r\n"), m.group(0))
        if decoded is not None:
            yield m.start(), m.end(), decoded
    for m in _B85.finditer(text):
        token = m.group(0)
        if _B64ISH.fullmatch(token):
            continue  # base64's alphabet: read by the base64 decoder
        decoded = _decoded(base64.b85decode, token)
        if decoded is not None:
            yield m.start(), m.end(), decoded


def _decoded(decode: object, token: str) -> str | None:
    try:
        raw = decode(token.encode("ascii"))  # type: ignore[operator]
        out = raw.decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    printable = sum(ch.isprintable() or ch.isspace() for ch in out)
    return out if out and printable >= 0.9 * len(out) else None


_INVISIBLE = "[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufe00-\ufe0f\ufeff]*"


def _escaped_char(ch: str) -> str:
    code = ord(ch)
    forms = {re.escape(ch), f"&#{code};", f"&#x{code:x};", f"&#x{code:X};", re.escape(f"\\u{code:04x}"),
             re.escape(f"\\u{code:04X}")}
    if code < 0x80:
        forms |= {f"%{code:02X}", f"%{code:02x}"}
    else:
        encoded = ch.encode("utf-8")
        forms |= {"".join(f"%{b:02X}" for b in encoded), "".join(f"%{b:02x}" for b in encoded)}
    if ch == " ":
        forms.add(r"\+")
    return "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + ")"


def escaped_span(text: str, value: str) -> tuple[int, int] | None:
    """Where ``value`` stands in ``text`` written with %-escapes, HTML character references, ``\\u`` escapes or
    invisible characters between its characters (each character in any of these forms): the span to replace, or
    None. One pattern of the value's length, read once over the text."""
    if not value or len(value) > 256:
        return None
    pattern = _INVISIBLE.join(_escaped_char(ch) for ch in value)
    m = re.search(pattern, text)
    return (m.start(), m.end()) if m else None


def undone(text: str) -> Iterator[str]:
    """Every view of ``text`` and every base85 segment's decoded text: what exposure reads listed units in, as the
    last check does."""
    for view in views(text):
        yield view.text
    for _, _, decoded in base85_segments(text):
        yield decoded
