"""Logging set-up for ``ecgw serve``: text lines, or JSON lines (``server.log_format: json``), and the one access
line per client request (request id, hashed session, policy, route, status, latency) that either format carries."""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
from collections import deque
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


class ThreadedHandler(logging.Handler):
    """Hands each record to a thread that formats and writes it, so the event loop only appends it to a deque: the
    access line of every request cost the loop a format and a write to stderr (~45 µs). The thread wakes every
    ``interval_s`` (or at ``flush()``) and writes what came in one write: a queue's wake-up per record (the
    ``QueueHandler`` this replaced) cost the process more CPU than writing each line on the loop had.
    ``flush()`` waits until what was queued is written; ``close()`` drains."""

    def __init__(self, target: logging.Handler, *, interval_s: float = 0.05) -> None:
        super().__init__()
        self.target = target
        self._interval_s = interval_s
        self._records: deque[logging.LogRecord] = deque()
        self._flushes: deque[threading.Event] = deque()  # flush() calls waiting for the next drain
        self._wake = threading.Event()
        self._running = True
        self._thread = threading.Thread(target=self._run, name="ecgw-log-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def handle(self, record: logging.LogRecord) -> bool:
        # no handler lock: appending to a deque is thread-safe, and the lock was a cost on every line
        if not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        if self._running:
            self._records.append(record)
        else:  # closed under us (``logging.config.dictConfig`` closes every handler, as uvicorn's start does):
            self.target.handle(record)  # still written, in the caller's thread, instead of queued for nobody

    def _run(self) -> None:
        while self._running:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            self._drain()

    def _drain(self) -> None:
        # the flush() calls asked before the records are taken: each one's records were queued before it
        waiting = [self._flushes.popleft() for _ in range(len(self._flushes))]
        batch = [self._records.popleft() for _ in range(len(self._records))]
        try:
            if batch:
                self._write(batch)
        finally:  # whatever a record did, flush() returns and the thread goes on to the next batch
            for event in waiting:
                event.set()

    def _write(self, batch: list[logging.LogRecord]) -> None:
        """Each record as the target would write it; one that fails (a filter, a format) is the target's
        ``handleError``, never the end of the batch or of the thread."""
        target = self.target
        if not isinstance(target, logging.StreamHandler) or isinstance(target, logging.FileHandler):
            for record in batch:
                try:
                    target.handle(record)
                except Exception:
                    target.handleError(record)
            return
        text: list[str] = []
        for record in batch:  # as StreamHandler.emit, one write for the batch instead of one a line
            try:
                if target.filter(record):
                    text.append(target.format(record) + target.terminator)
            except Exception:
                target.handleError(record)
        if text:
            target.acquire()
            try:
                target.stream.write("".join(text))
                target.flush()
            except Exception:
                target.handleError(batch[-1])
            finally:
                target.release()

    def flush(self) -> None:
        if self._running and threading.current_thread() is not self._thread:
            done = threading.Event()
            self._flushes.append(done)
            self._wake.set()
            while not done.wait(0.1) and self._running:
                pass
        self.target.flush()

    def close(self) -> None:
        if self._running:  # the thread's last drain, then what came in meanwhile
            self._running = False
            self._wake.set()
            self._thread.join()
            self._drain()
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
    """What ``uvicorn.run``/``uvicorn.Config`` get: for logging, no dictConfig of their own (it replaced the
    configured handlers with uvicorn's text formatters), warnings and up; and no proxy headers of uvicorn's own (it
    believes ``X-Forwarded-For`` from loopback by default): the app applies them, from ``server.forwarded_allow_ips``
    only (``gateway.app.forwarded``)."""
    return {"log_config": None, "log_level": "warning", "proxy_headers": False}


def configure_logging(log_format: str, *, threaded: bool = True) -> None:
    """The root logger's one handler, on stderr, in the configured format, written off the event loop
    (idempotent: a handler this set before is closed, its lines written). ``threaded=False``: written in the
    caller's thread (a process about to fork its workers runs no thread)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in root.handlers:
        if isinstance(old, ThreadedHandler):
            old.close()
    root.handlers[:] = [ThreadedHandler(handler) if threaded else handler]
    root.setLevel(logging.INFO)
    adopt_library_loggers()


def log_request(*, request_id: str, session: str | None, policy: str, route: str, status: int, latency_s: float,
                arm: str | None = None, trace_id: str | None = None) -> None:
    if not access.isEnabledFor(logging.INFO):
        return  # nothing to build for a line nobody writes
    fields = {"request_id": request_id, "session": session, "policy": policy, "route": route, "status": status,
              "latency_ms": round(latency_s * 1000, 2), "arm": arm, "trace_id": trace_id}
    # the record made here and handed to the logger's handlers, as ``access.info`` would, without its walk up the
    # stack for the caller's file and line (which no format of ours shows)
    access.handle(access.makeRecord(
        access.name, logging.INFO, "(unknown file)", 0, "%s session=%s policy=%s route=%s status=%d %.1f ms",
        (request_id, session, policy, route, status, latency_s * 1000), None, "log_request",
        {"ecgw": {k: v for k, v in fields.items() if v is not None}}))
