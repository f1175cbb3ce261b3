"""How an upstream's chat chunk stream ends, whatever dialect it speaks.

Small servers, proxies and mocks stream ``{"choices": [{"delta": {...}}]}`` events with no ``id``, no ``index``
and no ``finish_reason``, then ``data: [DONE]``. That is a complete answer: ``StreamEnd`` watches the chunks on
their way and, once the upstream says the stream is over, adds what it never sent — a ``finish_reason`` for every
choice still open (``tool_calls`` when that choice streamed tool calls, else ``stop``), before the usage chunk,
which it holds back to stay last as OpenAI sends it. Whether the stream ended or broke is the transport's to say
(``[DONE]`` on the edge; through litellm, a body that ended without an error); a stream that broke never reaches
``close``, so it still ends in an error event.
"""

from __future__ import annotations

from typing import Any

_HEAD = ("id", "object", "created", "model")


class StreamEnd:
    def __init__(self) -> None:
        self._open: dict[int, bool] = {}  # choice index -> streamed tool calls; gone once it finished
        self._finished = False
        self._usage: dict[str, Any] | None = None
        self._head: dict[str, Any] = {}

    @property
    def finished(self) -> bool:
        """The upstream itself finished every choice it opened (so a missing ``[DONE]`` loses nothing)."""
        return self._finished and not self._open

    def see(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        """``chunk`` to pass on now (its choices indexed), or ``None`` for a usage-only chunk held for the end."""
        choices = chunk.get("choices")
        if not choices and chunk.get("usage") is not None:
            self._usage = chunk
            return None
        head = self._head
        for key in _HEAD:
            value = chunk.get(key)
            if value is not None:
                head[key] = value
        for position, choice in enumerate(choices or ()):
            if not isinstance(choice, dict):
                continue
            index = choice.setdefault("index", position)
            if choice.get("finish_reason"):
                self._open.pop(index, None)
                self._finished = True
                continue
            delta = choice.get("delta")
            tools = isinstance(delta, dict) and bool(delta.get("tool_calls"))
            self._open[index] = self._open.get(index, False) or tools
        return chunk

    def close(self) -> list[dict[str, Any]]:
        """The stream ended: a finishing chunk for every choice left open, then the usage chunk held back."""
        out: list[dict[str, Any]] = []
        if self._open:
            out.append({**self._head, "choices": [
                {"index": index, "delta": {}, "logprobs": None, "finish_reason": "tool_calls" if tools else "stop"}
                for index, tools in sorted(self._open.items())]})
            self._open.clear()
        if self._usage is not None:
            out.append(self._usage)
            self._usage = None
        return out
