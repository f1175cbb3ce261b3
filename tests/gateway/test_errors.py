"""Bad input and upstream faults: OpenAI-shaped errors that say what to do; never a traceback."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import openai
import pytest

from tests.fakes.model_server import Reply


def post(gateway, body=None, *, content=None, headers=None, timeout=10.0):
    return httpx.post(gateway.base_url + "/chat/completions", json=body, content=content, headers=headers,
                      timeout=timeout)


def assert_openai_error(response, status, *, type_=None, mentions=()):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    if type_:
        assert error["type"] == type_
    for word in mentions:
        assert word in error["message"], (word, error["message"])
    assert "Traceback" not in response.text
    return error


def test_malformed_json_is_400_naming_the_body(gateway):
    error = assert_openai_error(post(gateway, content=b'{"messages": [', headers={"content-type": "application/json"}),
                                400, type_="invalid_request_error", mentions=("not valid JSON",))
    assert error["param"] == "body"


@pytest.mark.parametrize("body, param", [
    ({"model": "m"}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": ["hi"]}, "messages[0]"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": {"a": 1}}, "tools"),
    ([1, 2], "body"),
])
def test_a_body_that_is_not_a_chat_request_is_400_naming_the_field(gateway, body, param):
    error = assert_openai_error(post(gateway, body), 400)
    assert error["param"] == param
    assert param.split("[")[0] in error["message"] or param == "body"


def test_unknown_policy_is_400_listing_valid_ones(gateway):
    error = assert_openai_error(post(gateway, {"model": "ecgw/magic", "messages": [{"role": "user", "content": "x"}]}),
                                400, mentions=("magic", "edge-only", "cloud-only"))
    assert error["code"] == "unknown_policy"
    assert_openai_error(post(gateway, {"messages": [{"role": "user", "content": "x"}]},
                             headers={"X-ECGW-Policy": "nope"}), 400, mentions=("nope", "cloud-only"))


def test_body_over_the_limit_is_413(start_gateway, edge):
    gw = start_gateway(server={"max_body_bytes": 1000})
    response = post(gw, {"messages": [{"role": "user", "content": "x" * 2000}]})
    assert_openai_error(response, 413, mentions=("1000",))
    assert edge.requests == []


def test_every_route_has_the_body_limit_in_its_clients_shape(start_gateway, edge):
    """The limit is the gatekeeper's, in front of every route: a units document (read unbounded before), a body
    sent without a Content-Length, and the Messages surface (Anthropic's error shape)."""
    gw = start_gateway(server={"max_body_bytes": 1000})
    units = {"items": [{"entity_id": "e1", "name": "x" * 2000, "sensitive_fields": []}]}
    response = httpx.put(gw.base_url + "/sessions/s1/units", json=units, timeout=10)
    assert_openai_error(response, 413, mentions=("1000", "server.max_body_bytes"))

    def chunks():
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}]}'

    streamed = httpx.post(gw.base_url + "/chat/completions", content=chunks(), timeout=10)
    assert "content-length" not in {k.lower() for k in streamed.request.headers}
    assert_openai_error(streamed, 413, mentions=("1000",))
    anthropic = httpx.post(gw.base_url + "/messages", json={"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "x" * 2000}]}, timeout=10)
    assert anthropic.status_code == 413
    assert anthropic.json() == {"type": "error", "error": {"type": "request_too_large", "message": anthropic.json()[
        "error"]["message"]}} and "1000" in anthropic.json()["error"]["message"]
    assert edge.requests == []


def _dead_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_unreachable_edge_is_502_naming_upstream_url_and_what_to_start(start_gateway):
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    gw = start_gateway(edge={"base_url": url})
    error = assert_openai_error(post(gw, {"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "x"}]}),
                                502, type_="upstream_unreachable", mentions=(url, "start the edge"))
    assert error["code"] == "edge"


def test_unreachable_cloud_is_502(start_gateway):
    gw = start_gateway(cloud={"api_base": f"http://127.0.0.1:{_dead_port()}/v1", "max_retries": 0})
    assert_openai_error(post(gw, {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "x"}]}),
                        502, mentions=("cloud",))


def test_edge_timeout_is_504(start_gateway, edge):
    gw = start_gateway(edge={"read_timeout_s": 0.3})
    edge.script(Reply(delay_s=1.0))
    assert_openai_error(post(gw, {"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "x"}]}),
                        504, type_="upstream_timeout", mentions=("read_timeout_s",))


def test_cloud_timeout_is_504(start_gateway, cloud):
    gw = start_gateway(cloud={"timeout_s": 0.3})
    cloud.script(Reply(delay_s=1.5))
    assert_openai_error(post(gw, {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "x"}]}),
                        504, mentions=("timed out",))


@pytest.mark.parametrize("status", [400, 404, 422])
def test_edge_4xx_keeps_status_and_upstream_message(gateway, edge, status):
    edge.script(Reply(status=status, error_message="max_tokens is too large for this model"))
    assert_openai_error(post(gateway, {"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "x"}]}),
                        status, mentions=("max_tokens is too large",))


def test_edge_5xx_is_502_with_its_message(gateway, edge):
    edge.script(Reply(status=500, error_message="CUDA out of memory"))
    assert_openai_error(post(gateway, {"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "x"}]}),
                        502, mentions=("CUDA out of memory", "500"))


def test_cloud_429_reaches_the_client_as_429(gateway, cloud):
    cloud.script(Reply(status=429, error_message="rate limit reached"))
    with pytest.raises(openai.RateLimitError) as info:
        openai.OpenAI(base_url=gateway.base_url, api_key="k", max_retries=0).chat.completions.create(
            model="ecgw/cloud-only", messages=[{"role": "user", "content": "x"}])
    assert "rate limit reached" in str(info.value)


def test_streaming_failure_before_output_gets_a_status(gateway, edge):
    edge.script(Reply(status=503, error_message="loading model"))
    response = post(gateway, {"model": "ecgw/edge-only", "stream": True,
                              "messages": [{"role": "user", "content": "x"}]})
    assert_openai_error(response, 502, mentions=("loading model",))


def test_client_disconnect_mid_stream_cancels_the_upstream(gateway, edge):
    edge.script(Reply(content=" ".join(f"w{i}" for i in range(200)), chunk_delay_s=0.02))
    with httpx.stream("POST", gateway.base_url + "/chat/completions", json={
            "model": "ecgw/edge-only", "stream": True, "messages": [{"role": "user", "content": "long"}]}) as r:
        lines = r.iter_lines()
        for _ in range(6):
            next(lines)
    deadline = time.monotonic() + 5
    while edge.cancelled == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert edge.cancelled == 1
    deadline = time.monotonic() + 5
    while not gateway.meter.calls and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gateway.meter.calls[-1].status == 499  # metered as cut short, not lost


def test_wrong_or_missing_api_key_is_401(start_gateway):
    gw = start_gateway(server={"api_keys": ["sk-good"]})
    body = {"messages": [{"role": "user", "content": "x"}]}
    assert_openai_error(post(gw, body), 401, type_="authentication_error", mentions=("Bearer",))
    assert_openai_error(post(gw, body, headers={"Authorization": "Bearer sk-bad"}), 401)
    assert post(gw, body, headers={"Authorization": "Bearer sk-good"}).status_code == 200
    assert httpx.get(gw.base_url + "/models").status_code == 401
    assert httpx.get(gw.base_url + "/models", headers={"Authorization": "Bearer sk-good"}).status_code == 200


def test_unknown_route_is_an_openai_error(gateway):
    assert_openai_error(httpx.get(gateway.url + "/v2/nothing"), 404, mentions=("/v1/chat/completions",))


def test_an_internal_bug_is_500_with_request_id_and_no_traceback(gateway, caplog):
    def broken(_knobs):
        raise RuntimeError("secret internals")

    gateway.services.policies._factories["edge-only"] = broken  # simulate a bug inside a policy
    gateway.services.policies._instances.clear()
    response = post(gateway, {"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "x"}]})
    error = assert_openai_error(response, 500, type_="internal_error", mentions=("request id",))
    assert "secret internals" not in response.text
    assert response.headers["x-ecgw-request-id"] in error["message"]


def test_concurrent_requests_do_not_mix_sessions(gateway):
    results: dict[str, str] = {}

    def run(i: int) -> None:
        r = post(gateway, {"model": "ecgw/edge-only", "messages": [{"role": "user", "content": f"q{i}"}]},
                 headers={"X-Session-Id": f"s{i}"})
        results[r.headers["x-ecgw-session"]] = r.json()["choices"][0]["message"]["content"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {f"s{i}": f"edge reply to: q{i}" for i in range(16)}


def test_a_malformed_stream_event_from_the_edge_is_a_502_not_a_crash(start_gateway):
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from tests.fakes.threaded import ThreadedServer

    async def broken(request):
        async def events():
            yield b"data: {not json\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    with ThreadedServer(Starlette(routes=[Route("/v1/chat/completions", broken, methods=["POST"])])) as bad:
        gw = start_gateway(edge={"base_url": bad.url + "/v1"})
        response = post(gw, {"model": "ecgw/edge-only", "stream": True, "messages": [{"role": "user", "content": "x"}]})
        assert_openai_error(response, 502, mentions=("not JSON",))
