"""Which parts of a text are natural language, so that NER runs where it adds recall and nowhere else.

JSON is parsed and only its string values are considered (never its keys); code fences, code-like lines, paths,
identifiers and mostly-CJK text (the English model does not read Chinese) are skipped; CSV rows are split into
cells. A segment is kept only when it holds a capitalised word that could start a name.
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


def has_name_candidate(text: str) -> bool:
    return any(m.group(0) not in _COMMON for m in _CAPITALISED.finditer(text))


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
    except ValueError:
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
            pieces.extend(c for c in cells if c and not _is_codeish(c) and has_name_candidate(c))
            continue
        if not _is_codeish(line) and has_name_candidate(line):
            pieces.append(line.strip())
    return _pack(pieces, max_chars)


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    segments: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        while len(piece) > max_chars:
            cut = piece.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            segments.append(piece[:cut])
            piece = piece[cut:].lstrip()
        if size + len(piece) + 1 > max_chars and current:
            segments.append("\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece) + 1
    if current:
        segments.append("\n".join(current))
    return segments
