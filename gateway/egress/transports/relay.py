"""An OpenAI-compatible server's SSE stream relayed as bytes (``router.upstreams.Relay``), for the chat surface.

Each event is still read (its chunk is metered, and checked), but an event that already meets the stream
guarantees goes to the client as the server framed its JSON, not parsed into the pipeline and serialised again:
one ``id`` for every chunk (the first one's, or one minted here), every choice indexed and finished (``StreamEnd``
adds what the server never sent, and holds the usage chunk back to stay last), ``data: [DONE]`` at the end, and
the usage chunk only for a client that asked for it. An event that does not meet them is re-encoded, repaired, as
the chunk path would send it; the client gets the same stream either way.
"""

from __future__ import annotations

import uuid
from typing import Any

from gateway.egress.transports.stream_end import StreamEnd
from gateway.http import sse
from gateway.http.jsonio import JSONDecodeError, dumps, loads
from router.errors import UpstreamError
from router.upstreams import Relayed


class SSERelay:
    """Pieces of an upstream's body in (``feed``), the client's bytes for its complete events out."""

    def __init__(self, *, usage: bool) -> None:
        self._usage = usage  # the client asked for the usage chunk
        self._buffer = b""
        self._end = StreamEnd()
        self._id: str | None = None
        self._held: tuple[dict[str, Any], bytes] | None = None  # the usage-only chunk, with its JSON
        self.done = False  # [DONE] seen
        # What broke the stream (an error event, an event that is not JSON), raised once the events before it
        # have gone out, as the chunk path sends them first.
        self.failure: Exception | None = None

    @property
    def finished(self) -> bool:
        return self._end.finished

    def feed(self, piece: bytes) -> Relayed:
        """The complete events in what has arrived (a line cut in two waits for its end)."""
        buffer = self._buffer + piece if self._buffer else piece
        data: list[bytes] = []
        chunks: list[dict[str, Any]] = []
        start = 0
        try:
            while not self.done and self.failure is None:
                end = buffer.find(b"\n", start)
                if end < 0:
                    break
                line = buffer[start:end]
                start = end + 1
                self._line(line, data, chunks)
        except (UpstreamError, JSONDecodeError) as exc:
            self.failure = exc
        self._buffer = b"" if self.done or self.failure is not None else buffer[start:]
        return Relayed(b"".join(data), chunks)

    def rest(self) -> Relayed:
        """The body ended without ``[DONE]``: its last line, if it had no line end."""
        data: list[bytes] = []
        chunks: list[dict[str, Any]] = []
        if self._buffer and not self.done:
            self._read(self._buffer, data, chunks)
        self._buffer = b""
        return Relayed(b"".join(data), chunks)

    def close(self) -> Relayed:
        """The stream ended (``[DONE]``, or an end the caller accepts): what ``StreamEnd`` adds (a finish for a
        choice left open, the usage chunk held back), then ``[DONE]``."""
        data: list[bytes] = []
        chunks: list[dict[str, Any]] = []
        for chunk in self._end.close():
            held = self._held
            self._emit(chunk, held[1] if held is not None and chunk is held[0] else None, data, chunks)
        data.append(sse.DONE)
        return Relayed(b"".join(data), chunks)

    def _read(self, line: bytes, data: list[bytes], chunks: list[dict[str, Any]]) -> None:
        try:
            self._line(line, data, chunks)
        except (UpstreamError, JSONDecodeError) as exc:
            self.failure = exc

    def _line(self, line: bytes, data: list[bytes], chunks: list[dict[str, Any]]) -> None:
        if (raw := sse.data(line)) is None:
            return
        if raw == b"[DONE]":
            self.done = True
            return
        chunk = loads(raw)
        if not isinstance(chunk, dict):
            raise UpstreamError(502, "The edge upstream sent a stream event that is not a JSON object.",
                                upstream="edge")
        if (message := sse.failure(chunk)) is not None:
            raise UpstreamError(502, f"The edge upstream failed mid-stream: {message}", upstream="edge")
        choices = chunk.get("choices")
        indexed = isinstance(choices, list)
        if isinstance(choices, list):
            for choice in choices:
                if not isinstance(choice, dict) or "index" not in choice:
                    indexed = False
                    break
        if self._end.see(chunk) is None:  # the usage chunk: held back, to stay last
            self._held = (chunk, raw)
            return
        self._emit(chunk, raw if indexed else None, data, chunks)

    def _emit(self, chunk: dict[str, Any], raw: bytes | None, data: list[bytes], chunks: list[dict[str, Any]]) -> None:
        """``chunk`` to the client: ``raw`` (its JSON as the server wrote it) when nothing needs to change."""
        chunks.append(chunk)
        one_id = self._id
        if one_id is None:
            given = chunk.get("id")
            one_id = self._id = given if isinstance(given, str) and given else "chatcmpl-" + uuid.uuid4().hex[:24]
        if chunk.get("id") != one_id:
            chunk, raw = {**chunk, "id": one_id}, None
        if not self._usage and "usage" in chunk:
            if not chunk.get("choices") and chunk["usage"] is not None:
                return  # usage only, which the client did not ask for
            chunk, raw = {k: v for k, v in chunk.items() if k != "usage"}, None
        data.append(b"data: " + (raw if raw is not None else dumps(chunk)) + b"\n\n")
