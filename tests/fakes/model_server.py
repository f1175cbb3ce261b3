"""A scriptable OpenAI-compatible model server: the vLLM-like edge and the cloud provider double.

It speaks the real wire format (JSON and SSE, tool-call deltas with index/id/name, logprobs with
top_logprobs, reasoning_content, a final usage chunk when ``stream_options.include_usage``), keeps an
actual prefix cache of earlier prompts so ``cached_tokens`` is computed, not invented, and records every
request body it receives. Tests script replies with ``Reply`` objects; unscripted requests get a default.

``dialect="vllm"`` adds what a real vLLM (0.32, checked in tests/real/test_vllm.py) does differently from the
plain shape: ``finish_reason`` on the last content chunk (no separate empty chunk), the sampled token listed
first in ``top_logprobs`` (then the most likely others, k in all, so not sorted), tool-call deltas with
``content: null``, a first tool-call delta without ``arguments``, ids ``chatcmpl-tool-…``, ``content: ""``
next to tool calls, ``reasoning`` instead of ``reasoning_content``, ``created_cache_tokens`` in the usage
details, and the null fields it always sends (``refusal``, ``stop_reason``, ``token_ids`` …).

``dialect="sloppy"`` streams what small servers, proxies and mocks send: events that are only
``{"choices": [{"delta": {...}}]}`` — no ``id``, ``object``, ``created``, ``model`` or ``index``, and never a
``finish_reason`` — then ``data: [DONE]``. ``Reply.break_after`` makes any dialect's stream really break after
that many content pieces (``break_how``: ``"reset"`` drops the connection mid-body, ``"eof"`` ends the body cleanly
without ``[DONE]`` or a finish, ``"error"`` sends an ``error`` event).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from benchmarks.prefix_cache import PrefixCache


def tokens_of(text: str) -> list[str]:
    """The fake's tokenizer: whitespace-separated words (deterministic and easy to reason about in tests)."""
    return text.split()


def prompt_tokens(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for message in body.get("messages") or ():
        out.append(f"<{message.get('role')}>")
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.extend(tokens_of(content or ""))
        for call in message.get("tool_calls") or ():
            out.extend(tokens_of(json.dumps(call, sort_keys=True)))
    for tool in body.get("tools") or ():
        out.extend(tokens_of(json.dumps(tool, sort_keys=True)))
    return out


@dataclass
class ToolCall:
    name: str
    arguments: str  # the raw JSON text the model produced (may be a JSON string, not an object)
    id: str = field(default_factory=lambda: "call_" + uuid.uuid4().hex[:12])


@dataclass
class Reply:
    content: str | None = "OK"
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    # Probability distribution over the first token's top alternatives, for logprobs (renormalised here).
    first_token_top: dict[str, float] | None = None
    status: int = 200
    error_message: str = "scripted failure"
    delay_s: float = 0.0  # before the first byte
    chunk_delay_s: float = 0.0  # between stream chunks
    finish_reason: str | None = None
    usage: bool = True  # report usage at all
    break_after: int | None = None  # a stream breaks after this many content pieces
    break_how: str = "reset"  # "reset" | "eof" | "error"
    char_stream: bool = False  # stream content, reasoning and tool-call arguments one character per event


class ModelServer:
    """``ModelServer(name, usage_style="openai"|"deepseek", dialect="plain"|"vllm"|"sloppy")``; ``.app`` is the ASGI
    app."""

    def __init__(self, name: str = "fake", *, usage_style: str = "openai", model: str = "fake-model",
                 responder: Callable[[dict[str, Any]], Reply] | None = None, dialect: str = "plain") -> None:
        if dialect not in ("plain", "vllm", "sloppy"):
            raise ValueError(f"dialect must be 'plain', 'vllm' or 'sloppy', not {dialect!r}")
        self.name = name
        self.model = model
        self.usage_style = usage_style
        self.dialect = dialect
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.cancelled = 0
        self.usages: list[dict[str, Any]] = []  # every usage object it reported, in order
        self._script: deque[Reply] = deque()
        self._responder = responder
        self._cache = PrefixCache()  # counted as vLLM counts a prefix-cache hit
        self._lock = threading.Lock()
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/chat/completions", self._chat, methods=["POST"]),
            Route("/models", self._models, methods=["GET"]),
        ])

    # scripting ---------------------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.headers.clear()
            self.usages.clear()
            self._cache.clear()
            self.cancelled = 0

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self._responder is not None:
            return self._responder(body)
        last = body["messages"][-1].get("content") or ""
        if isinstance(last, list):
            last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
        return Reply(content=f"{self.name} reply to: {str(last)[:60]}")

    # helpers -----------------------------------------------------------------------------------------
    def _usage(self, prompt: list[str], completion: int, salt: str | None = None) -> dict[str, Any]:
        cached = self._cache.cached(prompt, salt)
        usage: dict[str, Any] = {"prompt_tokens": len(prompt), "completion_tokens": completion,
                                 "total_tokens": len(prompt) + completion}
        if self.usage_style == "deepseek":
            usage["prompt_cache_hit_tokens"] = cached
            usage["prompt_cache_miss_tokens"] = len(prompt) - cached
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        elif self.dialect == "vllm":
            usage["prompt_tokens_details"] = {"cached_tokens": cached, "created_cache_tokens": len(prompt) - cached}
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    def _logprob_entry(self, token: str, top: dict[str, float], k: int) -> dict[str, Any]:
        total = sum(top.values())
        ranked = sorted(top.items(), key=lambda kv: -kv[1])[: max(k, 1)]
        tops = [{"token": t, "logprob": math.log(p / total), "bytes": list(t.encode())} for t, p in ranked]
        chosen = next((e for e in tops if e["token"] == token), tops[0])
        if self.dialect == "vllm" and k:
            # vLLM: the sampled token first, then the most likely others, k entries in all
            everything = [{"token": t, "logprob": math.log(p / total), "bytes": list(t.encode())}
                          for t, p in sorted(top.items(), key=lambda kv: -kv[1])]
            chosen = next((e for e in everything if e["token"] == token), everything[0])
            tops = [chosen, *[e for e in everything if e is not chosen]][:k]
        return {"token": chosen["token"], "logprob": chosen["logprob"], "bytes": chosen["bytes"],
                "top_logprobs": tops[:k] if k else []}

    def _logprobs(self, reply: Reply, body: dict[str, Any], out_tokens: list[str]) -> dict[str, Any] | None:
        if not body.get("logprobs"):
            return None
        k = int(body.get("top_logprobs") or 0)
        entries = []
        for i, token in enumerate(out_tokens or [""]):
            top = reply.first_token_top if (i == 0 and reply.first_token_top) else {token: 0.9, "<alt>": 0.1}
            entries.append(self._logprob_entry(token if i else next(iter(top)), top, k))
        return {"content": entries}

    # endpoints ---------------------------------------------------------------------------------------
    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model",
                                                          "owned_by": self.name}]})

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        reply = self._next(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return JSONResponse({"error": {"message": reply.error_message, "type": "scripted",
                                           "param": None, "code": reply.status}}, status_code=reply.status)
        prompt = prompt_tokens(body)
        matched = self._stop_at(reply, body.get("stop"))
        out_text_tokens = tokens_of(reply.content or "")
        completion = len(out_text_tokens) + len(tokens_of(reply.reasoning or "")) + sum(
            1 + len(tokens_of(c.arguments)) for c in reply.tool_calls)
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        content = reply.content
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        if max_tokens and len(out_text_tokens) > int(max_tokens) and not reply.tool_calls:
            out_text_tokens = out_text_tokens[: int(max_tokens)]
            content = " ".join(out_text_tokens)
            completion = len(out_text_tokens)
            finish = "length"
        usage = self._usage(prompt, completion, body.get("cache_salt")) if reply.usage else None
        rid = "chatcmpl-" + uuid.uuid4().hex[:16]
        created = int(time.time())
        logprobs = self._logprobs(reply, body, out_text_tokens)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(
                self._stream(rid, created, reply, content, out_text_tokens, logprobs, finish,
                             usage if include_usage else None, matched),
                media_type="text/event-stream")
        vllm = self.dialect == "vllm"
        if vllm and content is None and reply.tool_calls:
            content = ""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if vllm:
            message.update(refusal=None, annotations=None, audio=None, function_call=None)
        if reply.reasoning is not None or vllm:
            message["reasoning" if vllm else "reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [{"id": self._call_id(c), "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in reply.tool_calls]
        choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish}
        if vllm:
            choice.update(stop_reason=matched, token_ids=None)
        result: dict[str, Any] = {"id": rid, "object": "chat.completion", "created": created, "model": self.model,
                                  "choices": [choice]}
        if vllm:
            result["system_fingerprint"] = None
        if usage is not None:
            result["usage"] = usage
            self.usages.append(usage)
        return JSONResponse(result)

    async def _stream(self, rid: str, created: int, reply: Reply, content: str | None, out_tokens: list[str],
                      logprobs: dict[str, Any] | None, finish: str,
                      usage: dict[str, Any] | None, matched: str | None = None) -> AsyncIterator[bytes]:
        vllm = self.dialect == "vllm"
        sloppy = self.dialect == "sloppy"

        def chunk(delta: dict[str, Any], finish_reason: str | None = None,
                  lp: dict[str, Any] | None = None) -> bytes:
            if sloppy:
                return b"data: " + json.dumps({"choices": [{"delta": delta}]}).encode() + b"\n\n"
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": lp, "finish_reason": finish_reason}
            if vllm and "role" not in delta:
                choice["token_ids"] = None
                if finish_reason:
                    choice["stop_reason"] = matched
            data = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": self.model,
                    "choices": [choice]}
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        # vLLM ends a text-only answer on its last content chunk; the plain shape sends a separate empty one.
        finish_on_last = vllm and bool(out_tokens) and not reply.tool_calls
        try:
            yield chunk({"role": "assistant", "content": ""})
            for piece in (list(reply.reasoning or "") if reply.char_stream else
                          [t + " " for t in tokens_of(reply.reasoning or "")]):
                await self._pause(reply)
                yield chunk({"reasoning" if vllm else "reasoning_content": piece})
            if reply.char_stream:  # every character its own event (no logprobs, no breaks)
                out_tokens, logprobs = list(content or ""), None
            for i, token in enumerate(out_tokens):
                if i == reply.break_after:
                    async for broken in self._break(reply):
                        yield broken
                    return
                await self._pause(reply)
                lp = {"content": [logprobs["content"][i]]} if logprobs else None
                last = i == len(out_tokens) - 1
                text = token if last or reply.char_stream else token + " "
                yield chunk({"content": text}, finish if (last and finish_on_last) else None, lp=lp)
            for index, call in enumerate(reply.tool_calls):
                await self._pause(reply)
                if vllm:
                    yield chunk({"content": None, "tool_calls": [{"id": self._call_id(call), "type": "function",
                                                                  "index": index, "function": {"name": call.name}}]})
                else:
                    yield chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                                 "function": {"name": call.name, "arguments": ""}}]})
                text = call.arguments
                step = 1 if reply.char_stream else max(1, len(text) // 3)
                for start in range(0, len(text), step):
                    await self._pause(reply)
                    delta = {"tool_calls": [{"index": index, "function": {"arguments": text[start:start + step]}}]}
                    yield chunk({"content": None, **delta} if vllm else delta)
            if not finish_on_last and not sloppy:
                yield chunk({}, finish)
            if usage is not None:
                data = {"choices": [], "usage": usage} if sloppy else {
                    "id": rid, "object": "chat.completion.chunk", "created": created, "model": self.model,
                    "choices": [], "usage": usage}
                self.usages.append(usage)
                yield b"data: " + json.dumps(data).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    @staticmethod
    async def _break(reply: Reply) -> AsyncIterator[bytes]:
        if reply.break_how == "error":
            yield b'data: {"error": {"message": "the model server crashed", "type": "server_error"}}\n\n'
        elif reply.break_how == "reset":
            raise ConnectionResetError("scripted: the connection drops mid-answer")
        # "eof": the body just ends

    @staticmethod
    def _stop_at(reply: Reply, stop: Any) -> str | None:
        """Like a real server: the answer ends before the first stop string in it (the string not included);
        vLLM names that string in ``stop_reason``. Returns the string matched."""
        stops = [stop] if isinstance(stop, str) else [s for s in stop or () if isinstance(s, str) and s]
        found = [(reply.content.find(s), s) for s in stops if reply.content and s in reply.content]
        if not found or reply.content is None:
            return None
        at, matched = min(found)
        reply.content = reply.content[:at]
        return matched

    def _call_id(self, call: ToolCall) -> str:
        return "chatcmpl-tool-" + call.id.removeprefix("call_") if self.dialect == "vllm" else call.id

    @staticmethod
    async def _pause(reply: Reply) -> None:
        if reply.chunk_delay_s:
            await asyncio.sleep(reply.chunk_delay_s)
