"""Values that a configuration format declares secret or names outside their key.

- A Kubernetes ``Secret`` manifest: every value under its ``data`` (base64) or ``stringData`` map is secret by
  declaration, whatever its key says (``Pol. No.``, ``bank_sort``, ``持卡人``) and whatever it decodes to; base64 hides
  the shape the other layers read, and anyone can decode it. Read in YAML text (one manifest or a ``---`` stream)
  and in JSON (``{"kind": "Secret", "data": {…}}``).
- A name/value list written as YAML (Kubernetes and Helm ``env``, ``- name: SSN`` then ``value: …``; ``Key``/``Value``
  tags): the ``name`` line is the label of the ``value`` line (``labels`` reads the JSON form of the same lists).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from privacy.detect.findings import Finding

_KIND = re.compile(r"(?m)^kind:[ \t]*[\"']?Secret[\"']?[ \t]*$")
_DATA = re.compile(r"(?m)^(?:data|stringData):[ \t]*$")
_ENTRY = re.compile(r"(?m)^([ \t]+)[\"']?([^\s:\"'#][^:\n\"']*?)[\"']?:[ \t]+(?![|>][\-+]?[ \t]*$)(\S[^\n]*?)[ \t]*$")
_PAIR = re.compile(r"(?mi)^[ \t]*-?[ \t]*(?:name|key)[ \t]*:[ \t]*[\"']?([^\n\"']{1,80}?)[\"']?[ \t]*\r?\n"
                   r"[ \t]*(?:value)[ \t]*:[ \t]*(?![|>][\-+]?[ \t]*$)(\S[^\n]*?)[ \t]*$")


def _unquoted(value: str, start: int) -> tuple[int, int]:
    """The span of a YAML scalar without its quotes."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return start + 1, start + len(value) - 1
    return start, start + len(value)


def secret_manifest_values(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the values of every Kubernetes Secret's ``data``/``stringData`` map in ``text`` (YAML or JSON)."""
    if "Secret" not in text:
        return
    if text.lstrip()[:1] in ("{", "["):
        yield from _json_secret_values(text)
        return
    for document in _documents(text):
        start, end = document
        if not _KIND.search(text, start, end):
            continue
        for block in _DATA.finditer(text, start, end):
            pos = block.end() + 1
            indent: str | None = None
            while pos < end:
                m = _ENTRY.match(text, pos, end)
                line_end = text.find("\n", pos, end)
                line_end = end if line_end < 0 else line_end
                if m is None or (indent is not None and m.group(1) != indent):
                    if text[pos:line_end].strip() and not text[pos:pos + 1].isspace():
                        break  # the next top-level key ends the map
                    pos = line_end + 1
                    continue
                indent = m.group(1)
                yield _unquoted(m.group(3), m.start(3))
                pos = m.end() + 1


def _documents(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for m in re.finditer(r"(?m)^---[ \t]*$", text):
        yield start, m.start()
        start = m.end()
    yield start, len(text)


def _json_secret_values(text: str) -> Iterator[tuple[int, int]]:
    try:
        stack: list[Any] = [json.loads(text)]
    except (ValueError, RecursionError):  # nested deeper than the parser goes: text
        return
    values: list[str] = []
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("kind") == "Secret":
                for field in ("data", "stringData"):
                    entries = node.get(field)
                    if isinstance(entries, dict):
                        values += [v for v in entries.values() if isinstance(v, str) and v]
            stack.extend(node.values())
    for value in dict.fromkeys(values):
        quoted = json.dumps(value, ensure_ascii=False)
        pos = text.find(quoted)
        while pos >= 0:
            yield pos + 1, pos + len(quoted) - 1
            pos = text.find(quoted, pos + 1)


def named_value_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(label, value) of YAML name/value entries (``- name: TFN`` / ``value: 123 456 782``), quotes removed."""
    if "alue" not in text:
        return
    for m in _PAIR.finditer(text):
        start, end = _unquoted(m.group(2), m.start(2))
        yield m.group(1).strip(), text[start:end]


class SecretManifestDetector:
    """``SECRET_VALUE`` findings for the values of Kubernetes Secrets (a patterns-layer detector; the last check keeps
    its own reading of base64, which names what a segment decodes to)."""

    def find(self, text: str) -> list[Finding]:
        return [Finding(type="SECRET_VALUE", start=s, end=e, value=text[s:e], layer="patterns",
                        key=f"SECRET_VALUE:{text[s:e]}") for s, e in secret_manifest_values(text)]
