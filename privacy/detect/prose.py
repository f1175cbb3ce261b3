"""Which parts of a text are natural language, so that NER runs where it adds recall and nowhere else.

JSON is parsed and only its string values are considered (never its keys); code fences, code-like lines, paths,
identifiers and mostly-CJK text (the English model does not read Chinese) are skipped; CSV rows are split into
cells. Lines are cut into clauses (after ``;``, ``:``, ``!``, ``?``, and after a full stop that ends a sentence, not
an abbreviation or an initial): a name does not run across them, the model reads a few words either side, and
equal clauses — templated records, repeated log lines — are analysed once. Values the other layers found are
blanked first (``without_spans``), with the brackets and separators around them. A segment is kept only when it
holds a capitalised word that could start a name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_CODE_CHARS = set("{}[]();=<>\\/_$#@*|`^~")
_CODE_START = re.compile(r"^\s*(?:def |class |import |from \S+ import|return\b|if \(|for \(|while \(|\$ |>>> |//|#!|"
                         r"function\b|const |let |var |public |private |SELECT |INSERT |UPDATE |CREATE |[-+]{3} |@@ )")
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_CAPITALISED = re.compile(r"(?<![A-Za-z0-9_])[A-Z][a-z]+(?:['’][a-z]+)?(?![A-Za-z0-9_])")
_COMMON = frozenset("""The A An This That These Those It Its You Your We Our I If When Then Please Use Do Don Not
No Yes For To In On At By Of And Or But As Is Are Be Can Will Should Must May Note Always Never Each Every All Any
Here There What Which Who How Why Return Returns Read Write Run Call Check Make Only After Before Step First
Next Also With From Into Output Input Example Task Tool Tools User Assistant System Error Warning Info Debug
True False None Null OK Done Hello Hi Thanks Thank Sure Let Now Today Available Current Your Mr Mrs Ms Dr""".split())


def _is_codeish(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return True
    if _CODE_START.match(stripped):
        return True
    if " " not in stripped and len(stripped) > 20:
        return True
    symbols = sum(1 for ch in stripped if ch in _CODE_CHARS)
    return symbols / len(stripped) > 0.08


def _mostly_cjk(text: str) -> bool:
    return len(_CJK.findall(text)) > 0.3 * max(len(text.strip()), 1)


_ABBREVIATIONS = frozenset("""Mr Mrs Ms Mx Dr Prof Sr Jr St Mt Ft Rev Hon Gen Col Lt Capt Sgt Cmdr Adm Gov Sen Rep Pres
Inc Ltd Co Corp Bros No Nos Vol Ave Rd Blvd Ln Dept Univ Fig approx vs etc al cf eg ie Jan Feb Mar Apr Jun Jul Aug Sep
Sept Oct Nov Dec""".split())
# after ; : ! ? (and their full-width forms), or after a full stop followed by what starts a sentence
_CLAUSE_END = re.compile(r"(?<=[;:!?；：！？])\s+|(?<=\.)\s+(?=[\"'(\[“‘]?[A-Z0-9])")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")  # J, e.g, U.S


def clauses(line: str) -> list[str]:
    """``line`` cut where a sentence or clause ends; never after an abbreviation (``Mr.``, ``St.``) or an initial."""
    out: list[str] = []
    start = 0
    for m in _CLAUSE_END.finditer(line):
        head = line[start:m.start()]
        word = head.rsplit(None, 1)[-1][:-1] if head.endswith(".") and head.strip() else ""
        if word in _ABBREVIATIONS or _INITIALS.fullmatch(word):
            continue
        out.append(head)
        start = m.end()
    out.append(line[start:])
    return [c.strip() for c in out if c.strip()]


def has_name_candidate(text: str) -> bool:
    return any(m.group(0) not in _COMMON for m in _CAPITALISED.finditer(text))


# blanks with the brackets, quotes, separators and spaces around them: ``<…> …`` of ``<mail> +1 415…`` reads as one
_BLANKS = re.compile(r"(?:[ \t<>()\[\]{}\"'`,+|/\\-]*…)+[ \t<>()\[\]{}\"'`,+|/\\-]*")


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each (start, end) span — a value an earlier layer already found — blanked to `` … ``: NER
    need not read an email or a phone number again (a third of the tokens of a contact list), only the words
    around it. Inside a JSON string the blank keeps the document valid. (A name NER finds is then searched for in
    the original text.)"""
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            start = pos
        if end <= start:
            continue
        out.append(text[pos:start])
        out.append(" … ")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _json_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def _parsed_json(text: str) -> Any | None:
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: text
        return None


def _csv_cells(line: str) -> list[str] | None:
    for sep in (",", "\t", "|"):
        if line.count(sep) >= 2:
            return [cell.strip().strip('"') for cell in line.split(sep)]
    return None


def prose_segments(text: str, max_chars: int = 4000) -> list[str]:
    """The natural-language pieces of ``text`` worth a NER pass, each at most ``max_chars`` long."""
    parsed = _parsed_json(text)
    if parsed is not None:
        out: list[str] = []
        for value in _json_strings(parsed):
            out.extend(prose_segments(value, max_chars))
        return out
    pieces: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or _mostly_cjk(line):
            continue
        cells = _csv_cells(line)
        if cells is not None and sum(1 for c in cells if _is_codeish(c)) < len(cells):
            pieces.extend(c for c in cells if c and not _is_codeish(c))
        elif not _is_codeish(line):
            pieces.extend(clauses(line))
    pieces = [_BLANKS.sub(" … ", piece).strip() if "…" in piece else piece for piece in pieces]
    unique = [cut for piece in dict.fromkeys(pieces) if has_name_candidate(piece) for cut in _cut(piece, max_chars)]
    return _pack(unique, max_chars)


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    segments: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if size + len(piece) + 1 > max_chars and current:
            segments.append("\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece) + 1
    if current:
        segments.append("\n".join(current))
    return segments


def _cut(piece: str, max_chars: int) -> list[str]:
    out: list[str] = []
    while len(piece) > max_chars:
        cut = piece.rfind(" ", 0, max_chars)
        cut = cut if cut > 0 else max_chars
        out.append(piece[:cut])
        piece = piece[cut:].lstrip()
    return out + [piece]
