"""Audit locations without raw keys: ``messages[3].tool_calls[0].arguments.#1f2e3d4c``.

A location names where a finding sat in the request. Its path segments are OpenAI's own field names and list
indexes — or object keys from the request itself (tool-call arguments, vendor extras), which may be anything: an
e-mail address used as a key, an API key. Only indexes and a fixed list of structural field names are kept; every
other segment becomes ``#`` and the first 8 hex digits of its keyed hash (the audit's hasher), so the same key
reads the same across rows without being readable.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

_KEPT = frozenset({
    "messages", "content", "text", "reasoning_content", "reasoning", "name", "tool_calls", "function", "arguments",
    "function_call", "tools", "functions", "description", "parameters", "properties", "items", "user", "metadata",
    "input", "instructions", "system", "prediction", "response_format", "json_schema", "schema", "stop",
})
_INDEX = re.compile(r"\[(\d+)\]")
_QUOTED = re.compile(r'\[("(?:[^"\\]|\\.)*")\]')
_WORD = re.compile(r"[^.\[]+")


def safe_location(location: str, hasher: Callable[[str], str]) -> str:
    """``location`` with every segment that is not an index or a structural field name hashed. Remembered per
    hasher: an agent's every call repeats its history's locations (hundreds a call, on the writer thread)."""
    return _safe_location(location, hasher)


@functools.lru_cache(maxsize=1 << 16)
def _safe_location(location: str, hasher: Callable[[str], str]) -> str:
    out: list[str] = []
    pos = 0
    while pos < len(location):
        if location[pos] == ".":
            pos += 1
            continue
        index = _INDEX.match(location, pos)
        if index:
            out.append(index.group(0))
            pos = index.end()
            continue
        quoted = _QUOTED.match(location, pos)
        match = quoted or _WORD.match(location, pos + (1 if location[pos] == "[" else 0))
        if match is None:  # a lone "[": hash the rest
            segment, pos = location[pos:], len(location)
        else:
            segment, pos = match.group(0), match.end()
        kept = segment if segment in _KEPT else "#" + hasher(segment)[:8]
        out.append(("." if out else "") + kept)
    return "".join(out)
