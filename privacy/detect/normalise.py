"""Surface forms of the same value: full-width characters, Cyrillic and Greek look-alikes, invisible characters,
HTML entities, %-escapes, JSON ``\\u`` escapes, encodings (base64 — MIME-wrapped and nested too —, hex, base32),
combining marks and HTML tags.
``fold`` keeps offsets (one character for one); ``variants`` yields decoded views of a text for a scan that only
needs to know *whether* something is there.

Invisible characters are Unicode's whole ``Default_Ignorable_Code_Point`` set (bidi marks, invisible operators,
variation selectors, tag characters …), not a list kept here. Look-alikes are the Cyrillic and Greek letters and
digits that Unicode's confusables data (UTS #39, as ``confusable_homoglyphs`` ships it) gives as confusable with one
ASCII letter or digit: each reads as that character, one for one.
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
from collections.abc import Iterator
from importlib import resources

import regex

_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FULL_WIDTH[0x3000] = 0x20  # ideographic space
IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}+")
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{16,}={0,2}(?![A-Za-z0-9+/=_\-])")
# MIME: lines of standard base64 (76 columns, or any width ≥ 16) one after another, read as one segment
_BASE64_LINES = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{16,}(?:\r?\n[ \t]*[A-Za-z0-9+/]{2,})+={0,2}"
                           r"(?![A-Za-z0-9+/=_\-])")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-f]{2}){8,}(?![0-9A-Za-z])|(?<![0-9A-Za-z])(?:[0-9A-F]{2}){8,}"
                  r"(?![0-9A-Za-z])")
_BASE32 = re.compile(r"(?<![A-Za-z0-9=])[A-Z2-7]{16,}={0,6}(?![A-Za-z0-9=])")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_NESTED = 3  # encodings inside encodings, read this deep


@functools.cache
def _fold_table() -> dict[int, int]:
    """Full-width ASCII as ASCII; Cyrillic and Greek look-alikes as the ASCII letter or digit they pass for."""
    table = dict(_FULL_WIDTH)
    data = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    for ascii_char, glyphs in data.items():
        if len(ascii_char) != 1 or not (ascii_char.isascii() and ascii_char.isalnum()):
            continue
        for glyph in glyphs:
            char, name = glyph.get("c", ""), glyph.get("n", "")
            if len(char) == 1 and name.startswith(("CYRILLIC ", "GREEK ")):
                table.setdefault(ord(char), ord(ascii_char))
    return table


def fold(text: str) -> str:
    """Full-width ASCII forms and Cyrillic/Greek look-alikes as ASCII, one character for one, so spans found in
    the result fit ``text``."""
    return text if text.isascii() else text.translate(_fold_table())


def canonical(text: str) -> str:
    """NFKC, look-alikes folded, invisible characters removed, HTML entities, %-escapes and ``\\uXXXX`` escapes
    decoded."""
    text = decoded = _visible(text)
    if "\\u" in decoded:
        decoded = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), decoded)
    if "&" in decoded:
        decoded = html.unescape(decoded)
    for _ in range(_NESTED):  # %-escapes of %-escapes too (a URL quoted twice)
        if not _PERCENT.search(decoded):
            break
        decoded = urllib.parse.unquote(decoded)
    return text if decoded is text else _visible(decoded)


def _visible(text: str) -> str:
    return text if text.isascii() else fold(IGNORABLE.sub("", unicodedata.normalize("NFKC", text)))


def _decoded_base64(segment: str) -> str | None:
    segment = re.sub(r"\s+", "", segment)
    padded = segment + "=" * (-len(segment) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in segment or "_" in segment) else None,
                               validate=True)
    except (binascii.Error, ValueError):
        return None
    return _text_of(raw)


def _decoded_hex(segment: str) -> str | None:
    return _text_of(bytes.fromhex(segment))


def _decoded_base32(segment: str) -> str | None:
    bare = segment.rstrip("=")
    try:
        raw = base64.b32decode(bare + "=" * (-len(bare) % 8))
    except (binascii.Error, ValueError):
        return None
    return _text_of(raw)


def _text_of(raw: bytes) -> str | None:
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in decoded)
    return decoded if decoded and printable >= 0.9 * len(decoded) else None


_DECODERS = ((_BASE64_LINES, _decoded_base64), (_BASE64, _decoded_base64), (_HEX, _decoded_hex),
             (_BASE32, _decoded_base32))


def _segments(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of each encoded segment of ``text`` that decodes to text (a MIME block also as
    its lines, each of which may decode alone)."""
    for pattern, decode in _DECODERS:
        for m in pattern.finditer(text):
            decoded = decode(m.group(0))
            if decoded is not None:
                yield m.start(), m.end(), decoded


def _decodings(text: str, depth: int) -> Iterator[str]:
    """Canonical text of each encoded segment of ``text``, and of the segments inside those, ``depth`` deep."""
    for _, _, decoded in _segments(text):
        normal = canonical(decoded)
        yield normal
        if depth > 1:
            yield from _decodings(normal, depth - 1)


def encoded_segments(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, everything it decodes to) of each encoded segment of ``text`` that decodes to text: the segment
    itself stands literally in ``text``, so a value found in it can be replaced by replacing the whole segment."""
    for start, end, decoded in _segments(text):
        normal = canonical(decoded)
        yield start, end, "\n".join([normal, *_decodings(normal, _NESTED - 1)])


_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\b[^<>]{0,200}>")
_INLINE_TAGS = frozenset({"a", "abbr", "b", "bdi", "bdo", "cite", "code", "del", "em", "font", "i", "ins", "kbd",
                          "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "tt", "u",
                          "var", "wbr"})


def _plain(text: str) -> str:
    """``text`` as a reader sees it: combining marks dropped (``Z\u0301Q\u0301X``, ``Théodora``: NFD, marks out,
    NFC) and HTML tags taken out — inline ones (``<b>``, ``<span>``…) as nothing, since they may sit inside a value,
    others (``<td>``, ``<br>``…) as a space, so cells of a table are not glued."""
    if not text.isascii() and any(unicodedata.combining(ch) for ch in text):
        text = unicodedata.normalize("NFC", "".join(ch for ch in unicodedata.normalize("NFD", text)
                                                    if not unicodedata.combining(ch)))
    if "<" in text and ">" in text:
        text = _TAG.sub(lambda m: "" if m.group(1).lower() in _INLINE_TAGS else " ", text)
    return text


def variants(text: str) -> Iterator[str]:
    """``text`` itself, its canonical form if different, that form without combining marks and HTML tags
    (``_plain``) if different, and each encoded segment that decodes to text (encodings inside encodings too)."""
    yield text
    normal = canonical(text)
    if normal != text:
        yield normal
    plain = _plain(normal)
    if plain != normal:
        yield plain
    yield from _decodings(normal, _NESTED)
