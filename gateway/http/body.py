"""The one reader of request bodies, for every route: JSON only (orjson: invalid UTF-8 and lone surrogates are
refused), an object at the top, nested at most ``server.max_json_depth`` deep (the privacy walk and the renderers
recurse; a 50,000-deep array must be a 400, not a RecursionError), and — for the small routes — validated into a
pydantic model. Size is bounded before this (``gateway.routes.gatekeeper``, ``server.max_body_bytes``). Every refusal is
a ``ClientError`` 400 naming the field, which each route renders in its own clients' envelope with the request id.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gateway.http.errors import ClientError, bad
from gateway.http.jsonio import JSONDecodeError, loads

M = TypeVar("M", bound=BaseModel)
DEFAULT_MAX_DEPTH = 64


_CONTAINERS = {dict, list}


def too_deep(value: Any, limit: int) -> bool:
    """Does parsed JSON ``value`` nest containers more than ``limit`` deep? Level by level over containers only
    (about as long as orjson's parse of a long agent history; a stack of tuples took twice that, and a pass over
    the raw bytes three times)."""
    level, depth = [value], 1
    while level:
        if depth > limit:
            return True
        deeper: list[Any] = []
        for node in level:
            deeper += [c for c in (node.values() if type(node) is dict else node) if type(c) in _CONTAINERS]
        level, depth = deeper, depth + 1
    return False


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


class BodyReader:
    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.max_depth = max_depth

    def object(self, raw: bytes, *, expect: str) -> dict[str, Any]:
        """The body as a JSON object; ``expect`` says what to send (``"a JSON chat-completions request with a
        'messages' list"``)."""
        if not raw.strip():
            raise bad(f"The request body is empty; send {expect}.", "body")
        try:
            body = loads(raw)
        except JSONDecodeError as exc:
            raise bad(f"The request body is not valid JSON ({exc}); send {expect}.", "body") from None
        if not isinstance(body, dict):
            raise bad(f"The request body must be a JSON object: {expect}.", "body")
        if too_deep(body, self.max_depth):
            raise bad(f"The request body is nested more than {self.max_depth} levels deep "
                      "(server.max_json_depth).", "body")
        return body

    def model(self, raw: bytes, model: type[M], *, expect: str) -> M:
        """The body validated into ``model``; a field that does not fit is a 400 naming it."""
        body = self.object(raw, expect=expect)
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            raise ClientError(400, f"{_validation_message(exc)}; send {expect}.", param="body") from None
