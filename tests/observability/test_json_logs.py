"""``server.log_format: json``: one JSON object per request with the request id, hashed session, policy, route,
status and latency — and never the raw session id."""

from __future__ import annotations

import io
import json
import logging
import threading

import httpx
import pytest

from accounting.calls import MemoryMeter
from gateway.telemetry.logs import JsonFormatter, ThreadedHandler, configure_logging
from tests.fakes.model_server import ModelServer, Reply
from tests.observability.gateways import running_gateway


def test_access_lines_as_json(edge: ModelServer, cloud: ModelServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ecgw.access")
    with running_gateway(edge, cloud, meter=MemoryMeter(), server={"log_format": "json"}) as (url, _):
        edge.script(Reply("fine"))
        ok = httpx.post(f"{url}/v1/chat/completions", headers={"X-Session-Id": "alice@example.com"}, timeout=30,
                        json={"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "hi"}]})
        cloud.script(Reply(status=429, error_message="slow down"))
        failed = httpx.post(f"{url}/v1/chat/completions", headers={"X-Session-Id": "alice@example.com"},
                            timeout=30, json={"model": "ecgw/cloud-only",
                                              "messages": [{"role": "user", "content": "hi"}]})
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "ecgw.access"]
    assert [(line["request_id"], line["policy"], line["route"], line["status"]) for line in lines] == [
        (ok.headers["x-ecgw-request-id"], "edge-only", "edge", 200),
        (failed.headers["x-ecgw-request-id"], "cloud-only", "cloud", 429)]
    assert lines[0]["session"] == lines[1]["session"] and len(lines[0]["session"]) == 16
    assert all(line["latency_ms"] > 0 and line["level"] == "info" for line in lines)
    assert not any("alice" in json.dumps(line) for line in lines)


def test_configure_logging_switches_the_root_handler_to_json(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("json")
        logging.getLogger("ecgw.test").warning("disk %s", "full")
        root.handlers[0].flush()  # written on the logging thread: wait for it
        line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
        assert line["message"] == "disk full" and line["level"] == "warning" and line["logger"] == "ecgw.test"
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


def test_lines_are_formatted_and_written_off_the_logging_thread() -> None:
    """The access line of every request is queued on the event loop and written by a thread of its own."""
    seen: list[str] = []

    class Recording(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(f"{threading.current_thread().name}: {self.format(record)}")

    handler = ThreadedHandler(Recording())
    logger = logging.getLogger("ecgw.test.threaded")
    logger.addHandler(handler)
    try:
        logger.warning("disk %s", "full")
        handler.flush()
    finally:
        logger.removeHandler(handler)
        handler.close()
    [line] = seen
    assert line.endswith(": disk full") and not line.startswith(threading.current_thread().name + ":")


def test_a_record_the_target_cannot_write_neither_stops_the_writer_nor_hangs_flush() -> None:
    """A filter or a format that raises on one record (found in review): the record is the target's handleError,
    the next ones are still written, and ``flush()`` returns."""
    seen: list[str] = []
    errors: list[str] = []

    class Picky(logging.StreamHandler):  # type: ignore[type-arg]
        def filter(self, record: logging.LogRecord) -> bool:
            if "poison" in record.getMessage():
                raise RuntimeError("cannot read this one")
            return True

        def handleError(self, record: logging.LogRecord) -> None:
            errors.append(record.getMessage())

    target = Picky(io.StringIO())
    handler = ThreadedHandler(target)
    logger = logging.getLogger("ecgw.test.picky")
    logger.addHandler(handler)
    try:
        logger.warning("poison")
        logger.warning("after it")
        flushing = threading.Thread(target=handler.flush, daemon=True)
        flushing.start()
        flushing.join(timeout=20)  # a bound, not a measurement: a dead writer thread never answers a flush
        assert not flushing.is_alive(), "flush() hung: the writer thread died on the record it could not write"
        logger.warning("and later")
        handler.flush()
        seen = target.stream.getvalue().splitlines()
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert errors == ["poison"] and seen == ["after it", "and later"]


def test_lines_are_still_written_after_uvicorn_configures_logging(capsys: pytest.CaptureFixture[str]) -> None:
    """``ecgw serve`` configures logging, then uvicorn's start runs ``dictConfig``, which closes every handler: the
    supervisor's lines in that process (the edge died, restarted) must still reach stderr."""
    import logging.config

    from uvicorn.config import LOGGING_CONFIG

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("text")
        logging.config.dictConfig(LOGGING_CONFIG)
        logging.getLogger("ecgw.launch").warning("vLLM restarted (pid %s)", 4242)
        root.handlers[0].flush()
        assert "vLLM restarted (pid 4242)" in capsys.readouterr().err
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


def test_uvicorns_and_litellms_lines_are_json_too(capsys: pytest.CaptureFixture[str]) -> None:
    """``log_format: json`` covers every line: uvicorn configured as ``ecgw serve`` starts it, and litellm's
    logger (which attaches a text handler of its own at import)."""
    import json
    import logging

    import litellm  # noqa: F401 — its import attaches the handler
    import uvicorn

    from gateway.telemetry.logs import adopt_library_loggers, uvicorn_options

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("json")
        uvicorn.Config(lambda scope, receive, send: None, **uvicorn_options()).configure_logging()
        adopt_library_loggers()  # as ecgw serve does once create_app imported litellm
        logging.getLogger("uvicorn.error").warning("uvicorn says %s", "hi")
        logging.getLogger("LiteLLM").warning("litellm says %s", "hi")
        root.handlers[0].flush()
        lines = [line for line in capsys.readouterr().err.splitlines() if "says hi" in line]
        assert len(lines) == 2, lines  # once each: not also as text through a handler of their own
        assert {json.loads(line)["logger"] for line in lines} == {"uvicorn.error", "LiteLLM"}
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
