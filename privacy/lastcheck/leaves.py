"""The outgoing body as the last check reads it: every key, string and number (``body_leaves``), the top-level
parts a step's cache is keyed by (``body_parts``, each with a content hash, ``content_hash``), and the seams between
adjacent content parts and messages where a value split in two would be glued back (``body_seams``)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson

_GLUE = 48  # characters each side of a part or message boundary


def body_leaves(value: Any, path: str, label: str | None) -> Iterator[tuple[str, str, str | None]]:
    """(path, text, key it sits under) of every key, string and number of a JSON value; a JSON document inside a
    string is scanned as that string's text."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            yield f"{where}{{key}}", str(key), None
            yield from body_leaves(item, where, str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from body_leaves(item, f"{path}[{i}]", label)
    elif isinstance(value, str):
        yield path, value, label
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, repr(value) if isinstance(value, float) else str(value), label


def message_text(message: Any) -> list[str]:
    """The texts of a message's content: the string, or each text part's."""
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return texts


def body_seams(body: dict[str, Any]) -> Iterator[tuple[str, str, int, bool]]:
    """(path, glued text, boundary offset, same speaker) across adjacent content parts and adjacent messages. A
    seam between two speakers (a user request and the tool result after it), or two tool results (two tools'
    outputs), is only checked for listed units:
    shapes such as card numbers form by chance where one text ends in digits and the next starts with some."""
    previous: tuple[str, str, Any] | None = None
    for i, message in enumerate(body.get("messages") or ()):
        role = message.get("role") if isinstance(message, dict) else None
        for j, text in enumerate(message_text(message)):
            if not text:
                continue
            here = f"messages[{i}].content[{j}]"
            if previous is not None:
                left, right = previous[1][-_GLUE:], text[:_GLUE]
                yield f"{previous[0]}|{here}", left + right, len(left), previous[2] == role != "tool"
            previous = (here, text, role)


Leaves = Callable[[], Iterator[tuple[str, str, str | None]]]


def body_parts(body: dict[str, Any]) -> Iterator[tuple[str, Any, Leaves]]:
    """(prefix, the value its content hash covers, its leaves) for each top-level part of a body: the ``messages``
    key, each message, each other top-level key with its value. The leaves' paths and labels are exactly those of
    one walk over the whole body; they are listed only for a part not seen before."""
    for key, item in body.items():
        name = str(key)
        if name == "messages" and isinstance(item, list):
            yield name, ["key", name], functools.partial(iter, [(f"{name}{{key}}", name, None)])
            for i, message in enumerate(item):
                prefix = f"{name}[{i}]"
                yield prefix, ["message", message], functools.partial(body_leaves, message, prefix, name)
        else:
            yield name, ["top", name, item], functools.partial(_top_leaves, name, item)


def _top_leaves(name: str, item: Any) -> Iterator[tuple[str, str, str | None]]:
    yield f"{name}{{key}}", name, None
    yield from body_leaves(item, name, name)


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def json_bytes(value: Any) -> bytes | None:
    """A JSON value as compact bytes; None for a value that is not plain JSON.

    orjson's compact JSON (a fifth of ``json.dumps``' cost: every part of a long history is hashed at every step);
    what it refuses (an integer past 64 bits, a lone surrogate, a non-string key) is written as ``json.dumps``
    writes it, behind a NUL that no orjson output starts with, so the two never collide. orjson writes NaN and
    infinities as ``null``; a body the gateway parsed (``gateway.http.jsonio``, strict JSON) holds none."""
    try:
        return orjson.dumps(value)
    except TypeError:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_refuse)
        except (TypeError, ValueError):
            return None
        return b"\0" + text.encode("utf-8", "surrogatepass")


def content_hash(value: Any) -> bytes | None:
    """A content hash of a JSON value (``json_bytes``); None for a value that is not plain JSON (then it is not
    cached)."""
    data = json_bytes(value)
    return None if data is None else hashlib.blake2b(data, digest_size=16).digest()
