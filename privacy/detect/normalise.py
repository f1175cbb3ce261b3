"""Surface forms of the same value: full-width characters, zero-width characters, HTML entities, %-escapes, JSON
``\\u`` escapes, base64. ``fold`` keeps offsets (one character for one); ``variants`` yields decoded views of a
text for a scan that only needs to know *whether* something is there.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Iterator

_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FULL_WIDTH[0x3000] = 0x20  # ideographic space
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_ZERO_WIDTH_TABLE = dict.fromkeys(map(ord, ZERO_WIDTH))
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{16,}={0,2}(?![A-Za-z0-9+/=_\-])")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


def fold(text: str) -> str:
    """Full-width ASCII forms as ASCII, one character for one, so spans found in the result fit ``text``."""
    return text.translate(_FULL_WIDTH)


def canonical(text: str) -> str:
    """NFKC, zero-width characters removed, HTML entities, %-escapes and ``\\uXXXX`` escapes decoded."""
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH_TABLE)
    if "\\u" in text:
        text = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    if "&" in text:
        text = html.unescape(text)
    if _PERCENT.search(text):
        text = urllib.parse.unquote(text)
    return text


def _decoded_base64(segment: str) -> str | None:
    padded = segment + "=" * (-len(segment) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in segment or "_" in segment) else None,
                               validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in decoded)
    return decoded if decoded and printable >= 0.9 * len(decoded) else None


def base64_segments(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded canonical text) of each base64 segment of ``text`` that decodes to text: the segment
    itself stands literally in ``text``, so a value found in it can be replaced by replacing the whole segment."""
    for m in _BASE64.finditer(text):
        decoded = _decoded_base64(m.group(0))
        if decoded is not None:
            yield m.start(), m.end(), canonical(decoded)


def variants(text: str) -> Iterator[str]:
    """``text`` itself, its canonical form if different, and each base64 segment that decodes to text."""
    yield text
    normal = canonical(text)
    if normal != text:
        yield normal
    for m in _BASE64.finditer(normal):
        decoded = _decoded_base64(m.group(0))
        if decoded is not None:
            yield canonical(decoded)
