"""Metering against a real model server that reports no usage when streaming (llama-cpp-python)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.accounting.conftest import MeteredGateway
from tests.real_parts import LLAMA_COMPAT, llama_url

pytestmark = pytest.mark.real_model


def test_llama_json_is_upstream_and_streams_are_estimated(
        start_metered_gateway: Callable[..., MeteredGateway]) -> None:
    gw = start_metered_gateway(edge={"base_url": llama_url(), "model": "smollm2-135m-instruct",
                                     "read_timeout_s": 120, "compat": LLAMA_COMPAT},
                               accounting={"edge_models": {"smollm2-135m-instruct": {"params": 1.35e8}}})
    ids = []
    with httpx.Client(timeout=120) as client:
        for stream in (False, True):
            body = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8, "stream": stream}
            response = client.post(gw.base_url + "/chat/completions", json=body)
            response.read()
            assert response.status_code == 200
            ids.append(response.headers["x-ecgw-request-id"])
        client.get(gw.base_url + "/usage").raise_for_status()
    [json_record] = gw.meter.store.rows(request_id=ids[0])
    [stream_record] = gw.meter.store.rows(request_id=ids[1])
    assert json_record["usage_source"] == "upstream" and json_record["prompt_tokens"] > 0
    assert stream_record["usage_source"] == "estimated" and stream_record["output_tokens"] > 0
    # the estimate (a different tokenizer) lands near the model's own count of the same prompt
    assert abs(stream_record["prompt_tokens"] - json_record["prompt_tokens"]) <= 0.5 * json_record["prompt_tokens"]
    for record in (json_record, stream_record):
        assert record["edge_flops"] == 2 * 1.35e8 * (record["raw_input_tokens"] + record["output_tokens"])
