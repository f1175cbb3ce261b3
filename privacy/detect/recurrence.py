"""Where values found once recur in the same text, found in one pass over the text whatever the number of values:
a search per value made a text of many repeated names or labels quadratic (issue 37).

The values' forms are folded into one trie-shaped pattern (a common prefix is read once; at each position the
regex engine follows one branch and gives up at the first character no form continues with), compiled per call —
a cache of compiled values would be shared by every tenant (a fast answer would tell one that another sent a
value). Time: linear in the text and in the forms' total length."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from privacy.detect.findings import Finding, layer_rank

T = TypeVar("T")
_PROPAGATE = ("patterns", "keys", "people", "anchored")
_TYPES = ("PERSON", "LOCATION")
_SPACE = " "  # a whitespace run of a word form: any whitespace run in the text
_HEAD = r"(?<![A-Za-z0-9_])"
_TAIL = r"(?![A-Za-z0-9_])"
_Trie = dict[str, "_Trie"]


def _glued(ch: str) -> bool:
    """Whether a form that begins or ends with ``ch`` must not have a letter, digit or ``_`` glued there."""
    return ch.isascii() and ch.isalnum()


def _pattern(forms: Iterable[str], words: bool) -> str:
    """One alternation of ``forms`` factored by common prefix, longest first. ``words``: a form's whitespace matches
    any whitespace run, and no letter, digit or ``_`` may be glued to either end of a form that begins or ends with
    one (``units._literal_pattern`` of each form). Nested only where forms part or end (a run of one child is
    written out in a loop)."""
    trie: _Trie = {}
    for form in forms:
        node = trie
        for ch in form:
            node = node.setdefault(ch, {})
        node[""] = {}

    def atom(ch: str) -> str:
        return r"\s+" if words and ch == _SPACE else re.escape(ch)

    def branch(ch: str, child: _Trie) -> str:
        out = [atom(ch)]
        while len(child) == 1 and "" not in child:  # a run no form parts or ends in
            ch, child = next(iter(child.items()))
            out.append(atom(ch))
        return "".join(out) + body(child, ch)

    def body(node: _Trie, last: str) -> str:
        options = [branch(ch, child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            options.append(_TAIL if words and _glued(last) else "")
        return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"

    heads = [(_HEAD if words and _glued(ch) else "") + branch(ch, child) for ch, child in sorted(trie.items())]
    return "(?:" + "|".join(heads) + ")"


def _compiled(keys: list[str], words: bool, flags: int) -> list[re.Pattern[str]]:
    """The patterns of ``keys``: one, or — where forms nest deeper than the regex parser recurses (hundreds of forms
    each the prefix of the next: ``a``, ``aa``, ``aaa``…) — one per half, halved again as needed."""
    try:
        return [re.compile("(?=(" + _pattern(keys, words) + "))", flags)]
    except RecursionError:
        if len(keys) == 1:
            raise
        half = len(keys) // 2
        return _compiled(keys[:half], words, flags) + _compiled(keys[half:], words, flags)


def _key(text: str, words: bool, ignore_case: bool) -> str:
    text = _SPACE.join(text.split()) if words else text
    if not ignore_case:
        return text
    lowered = text.lower()  # a letter whose lower case is longer (``İ``) stays as written, as one the engine folds
    return lowered if len(lowered) == len(text) else "".join(ch if len(ch.lower()) > 1 else ch.lower() for ch in text)


def recurrences(text: str, forms: Mapping[str, T], *, words: bool = True,
                ignore_case: bool = False) -> Iterator[tuple[int, int, T]]:
    """``(start, end, forms[form])`` wherever a form stands in ``text``, in order: at each position the longest form
    that stands there, so overlapping occurrences are all found. ``words``: read each form as a word (without the
    whitespace at its ends, its inner whitespace any whitespace run, nothing glued to an alphanumeric end); else
    literally. ``ignore_case``: in any case (the rare letter whose lower case the regex engine folds otherwise than
    ``str.lower``, ``ſ``, is read as written)."""
    by_key: dict[str, T] = {}
    for form, tag in forms.items():
        if form.strip() if words else form:
            by_key.setdefault(_key(form.strip() if words else form, words, ignore_case), tag)
    if not by_key:
        return
    longest: dict[int, int] = {}
    if len(by_key) * len(text) <= _SEARCHED and (not (words or ignore_case) or (
            text.isascii() and all(key.isascii() for key in by_key))):
        _search(text, by_key, words, ignore_case, longest)  # cheaper than compiling the pattern
        ordered = sorted(longest)
    else:
        patterns = _compiled(sorted(by_key), words, re.IGNORECASE if ignore_case else 0)
        for pattern in patterns:
            for m in pattern.finditer(text):
                longest[m.start()] = max(longest.get(m.start(), 0), len(m.group(1)))
        ordered = sorted(longest) if len(patterns) > 1 else list(longest)
    for start in ordered:
        end = start + longest[start]
        key = _key(text[start:end], words, ignore_case)
        if key in by_key:
            yield start, end, by_key[key]


# Forms × characters up to which each form is looked for on its own (``str.find``, then its whitespace runs and ends
# checked by hand): a pattern compiles at ~75 µs a form, while a step's new tool result of a few hundred characters
# with a handful of found values is searched in microseconds. Beyond it, one compiled pattern (linear in the text).
_SEARCHED = 50_000
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _search(text: str, keys: Collection[str], words: bool, ignore_case: bool, longest: dict[int, int]) -> None:
    r"""What the compiled pattern finds, ``longest[start]`` = the length of the longest form standing at ``start``, by
    a search per form. Only for ASCII text and forms when they are read as words or in any case (then ``str.lower``
    and ``str.isspace`` read each character as the regex engine's ``IGNORECASE`` and ``\s`` do); else literally."""
    haystack = text.lower() if ignore_case else text
    for key in keys:
        pieces = key.split(_SPACE) if words else [key]
        head = words and _glued(key[0])
        tail = words and _glued(key[-1])
        at = haystack.find(pieces[0])
        while at >= 0:
            end = _match(haystack, at, pieces)
            if end >= 0 and not (head and at > 0 and text[at - 1] in _WORD) and not (
                    tail and end < len(text) and text[end] in _WORD):
                longest[at] = max(longest.get(at, 0), end - at)
            at = haystack.find(pieces[0], at + 1)


def _match(text: str, at: int, pieces: list[str]) -> int:
    """Where the form ends that stands at ``at`` (its pieces one whitespace run apart, the first already found
    there); -1 if it does not stand there."""
    end = at + len(pieces[0])
    for piece in pieces[1:]:
        gap = end
        while end < len(text) and text[end].isspace():
            end += 1
        if end == gap or not text.startswith(piece, end):
            return -1
        end += len(piece)
    return end


def everywhere(text: str, findings: list[Finding]) -> list[Finding]:
    """``findings`` and a copy of each name or address (of the layers that read it from a label or a context)
    wherever else its value recurs in ``text``: the copy of the value's finding that ``resolve_overlaps`` would
    keep (the best layer, then the first)."""
    best: dict[str, Finding] = {}
    for f in findings:
        if f.layer in _PROPAGATE and f.type in _TYPES and f.value:
            kept = best.get(f.value)
            if kept is None or layer_rank(f) < layer_rank(kept):
                best[f.value] = f
    extra = [Finding(type=f.type, start=start, end=end, value=f.value, layer=f.layer, key=f.key)
             for start, end, f in recurrences(text, best, words=False) if start != f.start]
    return findings + extra


# Values × characters up to which a search per value is cheaper: ``in`` reads ~2 GB/s, a pattern compiles at ~75 µs a
# value — one pass wins only beyond ~0.1 s of searching (thousands of values in a text of hundreds of KB).
_PER_VALUE = 200_000_000


def present(values: Collection[str], text: str) -> set[str]:
    """Those of ``values`` that stand somewhere in ``text`` (``value in text``): a search per value while few values
    meet a short text; else one pass (``recurrences``: the longest value at each position), with the values that
    begin one found there (``Mary`` where ``Mary Jones`` stands)."""
    if len(values) * len(text) <= _PER_VALUE:
        return {value for value in values if value in text}
    return _with_prefixes({tag for _, _, tag in recurrences(text, {v: v for v in values}, words=False)}, values)


def present_in(values: Collection[str], texts: Sequence[str]) -> list[set[str]]:
    """``present(values, text)`` for each of ``texts``, read in one pass when values and texts are many."""
    if len(values) * sum(map(len, texts)) <= _PER_VALUE:
        return [{value for value in values if value in text} for text in texts]
    starts, pos = [], 0
    for text in texts:
        starts.append(pos)
        pos += len(text) + 1
    found: list[set[str]] = [set() for _ in texts]
    joined = "\0".join(texts)  # no value spans two texts: one with a NUL is looked for text by text
    for start, _, value in recurrences(joined, {v: v for v in values if "\0" not in v}, words=False):
        found[bisect.bisect_right(starts, start) - 1].add(value)
    for i, text in enumerate(texts):
        found[i] = _with_prefixes(found[i], values) | {v for v in values if "\0" in v and v in text}
    return found


def _with_prefixes(longest: set[str], values: Collection[str]) -> set[str]:
    pool = values if isinstance(values, set | frozenset | dict) else set(values)
    lengths = sorted({len(v) for v in pool})
    return {w[:n] for w in longest for n in lengths if n <= len(w) and w[:n] in pool}
