"""The pipeline's chunk stream as the Responses API's streamed events, in the official order, each with its
``sequence_number``.

``response.created`` → ``response.in_progress`` → per output item ``response.output_item.added`` →
(message) ``response.content_part.added`` → ``response.output_text.delta``… → ``response.output_text.done`` →
``response.content_part.done`` | (function call) ``response.function_call_arguments.delta``… → ``.done`` |
(freeform call) ``response.custom_tool_call_input.delta`` → ``.done`` | (reasoning)
``response.reasoning_text.delta``… → ``.done`` → ``response.output_item.done``; last ``response.completed``
(``response.incomplete`` when the output hit ``max_output_tokens``) with usage. A failure mid-stream ends it
with ``error`` and ``response.failed``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.surfaces.responses_output import (
    ResponseShell,
    logprobs_of,
    message_item,
    new_id,
    text_part,
    usage_of,
)
from gateway.surfaces.responses_tools import LOCAL_SHELL, chat_name


class EventStream:
    """Turns chat chunks into Responses events; ``feed`` per chunk, ``finish`` at the end, ``fail`` on error."""

    def __init__(self, shell: ResponseShell, *, logprobs: bool = False) -> None:
        self.shell = shell
        self.sequence = 0
        self.items: list[dict[str, Any]] = []  # the output so far, in order
        self.open: list[int] = []  # output indexes of items not yet done
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.model: str | None = None
        self._text: int | None = None
        self._reasoning: int | None = None
        self._calls: dict[int, int] = {}  # chat tool-call index → output index
        self._logprobs = logprobs

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        out = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return out

    def start(self) -> Iterator[dict[str, Any]]:
        response = self.shell.response(status="in_progress", output=[])
        yield self.event("response.created", response=response)
        yield self.event("response.in_progress", response=response)

    def feed(self, chunk: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        self.model = chunk.get("model") or self.model
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                yield from self._reasoning_delta(reasoning)
            if isinstance(delta.get("content"), str) and delta["content"]:
                yield from self._text_delta(delta["content"], choice.get("logprobs"))
            for call in delta.get("tool_calls") or ():
                yield from self._call_delta(call)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def finish_events(self) -> Iterator[dict[str, Any]]:
        for index in list(self.open):
            yield from self._close(index)
        status = self.shell.status_of(self.finish)
        response = self.shell.response(status=status, output=self.items, usage=usage_of(self.usage),
                                       model=self.model, finish_reason=self.finish)
        yield self.event("response.completed" if status == "completed" else "response.incomplete",
                         response=response)

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        yield self.event("error", code=code, message=message, param=None)
        error = {"code": code, "message": message}
        yield self.event("response.failed", response=self.shell.response(
            status="failed", output=self.items, usage=usage_of(self.usage), model=self.model, error=error))

    # items ---------------------------------------------------------------------------------------------
    def _add(self, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
        index = len(self.items)
        self.items.append(item)
        self.open.append(index)
        yield self.event("response.output_item.added", output_index=index, item=_public(item))

    def _reasoning_delta(self, text: str) -> Iterator[dict[str, Any]]:
        if self._reasoning is None:
            if self._text is not None:
                yield from self._close(self._text)
            item: dict[str, Any] = {"type": "reasoning", "id": new_id("rs"), "summary": [], "content": [],
                                    "status": "in_progress"}
            yield from self._add(item)
            self._reasoning = len(self.items) - 1
            self.items[self._reasoning]["_text"] = ""
        item = self.items[self._reasoning]
        item["_text"] += text
        yield self.event("response.reasoning_text.delta", item_id=item["id"], output_index=self._reasoning,
                         content_index=0, delta=text)

    def _text_delta(self, text: str, logprobs: Any) -> Iterator[dict[str, Any]]:
        if self._text is None:
            if self._reasoning is not None:
                yield from self._close(self._reasoning)
            item = message_item(new_id("msg"), "", status="in_progress")
            item["content"] = []
            yield from self._add(item)
            self._text = len(self.items) - 1
            item["_text"] = ""
            yield self.event("response.content_part.added", item_id=item["id"], output_index=self._text,
                             content_index=0, part=text_part(""))
        item = self.items[self._text]
        item["_text"] += text
        entries = logprobs_of(logprobs) if self._logprobs else []
        item.setdefault("_logprobs", []).extend(entries)
        yield self.event("response.output_text.delta", item_id=item["id"], output_index=self._text,
                         content_index=0, delta=text, logprobs=entries)

    def _call_delta(self, call: dict[str, Any]) -> Iterator[dict[str, Any]]:
        position = int(call.get("index", 0))
        function = call.get("function") or {}
        if position not in self._calls:
            for index in (self._text, self._reasoning):
                if index is not None and index in self.open:
                    yield from self._close(index)
            item = self.shell.call_item(str(call.get("id") or new_id("call")), str(function.get("name") or ""),
                                        "", status="in_progress")
            item["_arguments"] = ""
            yield from self._add(item)
            self._calls[position] = len(self.items) - 1
        index = self._calls[position]
        item = self.items[index]
        piece = function.get("arguments")
        if isinstance(piece, str) and piece:
            item["_arguments"] += piece
            if item["type"] == "function_call":
                yield self.event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                                 delta=piece)

    def _close(self, index: int) -> Iterator[dict[str, Any]]:
        self.open.remove(index)
        item = self.items[index]
        kind = item["type"]
        if kind == "message":
            text = item.pop("_text")
            part = text_part(text, item.pop("_logprobs", None))
            yield self.event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                             text=text, logprobs=part["logprobs"])
            yield self.event("response.content_part.done", item_id=item["id"], output_index=index,
                             content_index=0, part=part)
            item["content"] = [part]
        elif kind == "reasoning":
            text = item.pop("_text")
            yield self.event("response.reasoning_text.done", item_id=item["id"], output_index=index,
                             content_index=0, text=text)
            item["content"] = [{"type": "reasoning_text", "text": text}]
            item.pop("status", None)
        else:
            arguments = item.pop("_arguments")
            done = self.shell.call_item(item["call_id"], _chat_name(item), arguments)
            done["id"] = item["id"]
            if kind == "function_call":
                yield self.event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                                 name=item["name"], arguments=arguments)
            elif kind == "custom_tool_call":
                yield self.event("response.custom_tool_call_input.delta", item_id=item["id"], output_index=index,
                                 delta=done["input"])
                yield self.event("response.custom_tool_call_input.done", item_id=item["id"], output_index=index,
                                 input=done["input"])
            item.clear()
            item.update(done)
        if "status" in item:
            item["status"] = "completed"
        yield self.event("response.output_item.done", output_index=index, item=_public(item))


def _chat_name(item: dict[str, Any]) -> str:
    if item["type"] == "local_shell_call":
        return LOCAL_SHELL
    return chat_name(item.get("namespace"), str(item["name"]))


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if not k.startswith("_")}
