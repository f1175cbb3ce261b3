"""Logging set-up for ``ecgw serve``: text lines, or JSON lines (``server.log_format: json``), and the one access
line per client request (request id, hashed session, policy, route, status, latency) that either format carries."""

from __future__ import annotations

import atexit
import json
import logging
import queue
import time
from logging.handlers import QueueHandler, QueueListener
from typing import Any

access = logging.getLogger("ecgw.access")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and the fields a record carries in ``extra={"ecgw":
    {...}}`` (the access line's request id, session, policy, route, status, latency_ms)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "ecgw", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class ThreadedHandler(QueueHandler):
    """Hands each record to a thread that formats and writes it, so the event loop only queues it: the access
    line of every request cost the loop a format and a write to stderr (~45 µs), more than the rest of an
    edge-only step's bookkeeping. ``flush()`` waits until what was queued is written; ``close()`` drains."""

    def __init__(self, target: logging.Handler) -> None:
        super().__init__(queue.Queue())
        self.target = target
        self._listener = QueueListener(self.queue, target)
        self._listener.start()
        self._running = True
        atexit.register(self.close)

    def emit(self, record: logging.LogRecord) -> None:
        if self._running:
            super().emit(record)
        else:  # closed under us (``logging.config.dictConfig`` closes every handler, as uvicorn's start does):
            self.target.handle(record)  # still written, in the caller's thread, instead of queued for nobody

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record  # formatted on the writer thread, not here (the record never leaves the process)

    def flush(self) -> None:
        assert isinstance(self.queue, queue.Queue)
        if self._running:  # closed: nothing is queued any more, and nobody would take it
            self.queue.join()
        self.target.flush()

    def close(self) -> None:
        if self._running:  # stop() drains what is queued, then ends the thread
            self._running = False
            self._listener.stop()
        self.target.close()
        super().close()


# Libraries that attach handlers of their own (litellm's at import; uvicorn's through its dictConfig, which
# ``uvicorn_options`` switches off): their lines then skipped the configured format — text in a JSON log.
LIBRARY_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "LiteLLM", "LiteLLM Router",
                   "LiteLLM Proxy")


def adopt_library_loggers() -> None:
    """Route the libraries' lines through the root handler (the configured format), once each: their own handlers
    removed (litellm's wrote every line a second time, as text). Call again after importing litellm."""
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True


def uvicorn_options() -> dict[str, Any]:
    """What ``uvicorn.run``/``uvicorn.Config`` get for logging: no dictConfig of their own (it replaced the
    configured handlers with uvicorn's text formatters), warnings and up."""
    return {"log_config": None, "log_level": "warning"}


def configure_logging(log_format: str) -> None:
    """The root logger's one handler, on stderr, in the configured format, written off the event loop
    (idempotent: a handler this set before is closed, its lines written)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in root.handlers:
        if isinstance(old, ThreadedHandler):
            old.close()
    root.handlers[:] = [ThreadedHandler(handler)]
    root.setLevel(logging.INFO)
    adopt_library_loggers()


def log_request(*, request_id: str, session: str | None, policy: str, route: str, status: int, latency_s: float,
                arm: str | None = None, trace_id: str | None = None) -> None:
    if not access.isEnabledFor(logging.INFO):
        return  # nothing to build for a line nobody writes
    fields = {"request_id": request_id, "session": session, "policy": policy, "route": route, "status": status,
              "latency_ms": round(latency_s * 1000, 2), "arm": arm, "trace_id": trace_id}
    access.info("%s session=%s policy=%s route=%s status=%d %.1f ms", request_id, session, policy, route, status,
                latency_s * 1000, extra={"ecgw": {k: v for k, v in fields.items() if v is not None}})
