"""Messages-surface calls land in the metering store like chat calls, and `ecgw usage` reports them."""

from __future__ import annotations

import json
from collections.abc import Callable

import anthropic
import httpx
import pytest

from gateway.cli.main import main
from tests.accounting.conftest import MeteredGateway
from tests.fakes.anthropic_server import AnthropicReply, AnthropicServer
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer

PRICES = {"gpt-test": {"input": 2.0, "cache_read": 0.5, "output": 10.0}}


def test_ecgw_usage_shows_messages_calls_with_tokens_and_cost(
        start_metered_gateway: Callable[..., MeteredGateway], cloud: ModelServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    gw = start_metered_gateway(accounting={"prices": PRICES})
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0,
                                 default_headers={"X-Claude-Code-Session-Id": "cc-usage"})
    cloud.script(Reply(content="one two three"), Reply(content="four five"))
    client.messages.create(model="ecgw/cloud-only", max_tokens=64, messages=[{"role": "user", "content": "a b c"}])
    with client.messages.stream(model="ecgw/cloud-only", max_tokens=64,
                                messages=[{"role": "user", "content": "d e"}]) as stream:
        stream.get_final_message()
    httpx.get(gw.base_url + "/usage", timeout=10).raise_for_status()  # flushes the writer
    assert main(["usage", "--by", "session", "--format", "json", "--database-url", gw.settings.database_url]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)}
    row = rows["cc-usage"]
    assert row["cloud_calls"] == 2 and row["cloud_output_tokens"] == 5
    # the fake's prompts: "<user> a b c" (4 words) and "<user> d e" (3): 7 uncached tokens at 2 $/M, 5 out at 10
    assert row["cloud_raw_input_tokens"] == 7
    assert row["cloud_cost_usd"] == pytest.approx((7 * 2.0 + 5 * 10.0) / 1e6)


def test_anthropic_cache_reads_and_writes_are_metered(start_metered_gateway: Callable[..., MeteredGateway]) -> None:
    provider = AnthropicServer()
    with ThreadedServer(provider.app) as server:
        gw = start_metered_gateway(cloud={"model": "anthropic/claude-sonnet-4-5", "api_base": server.url})
        provider.script(AnthropicReply(input_tokens=7, cache_read=100, cache_write=20, output_tokens=9))
        client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
        response = client.messages.with_raw_response.create(
            model="ecgw/cloud-only", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
        request_id = response.headers["x-ecgw-request-id"]
        httpx.get(gw.base_url + "/usage", timeout=10).raise_for_status()  # flushes the writer
        [record] = gw.meter.store.rows(request_id=request_id)
    assert (record["raw_input_tokens"], record["cache_read_tokens"], record["cache_write_tokens"],
            record["output_tokens"]) == (7, 100, 20, 9)
    assert record["cost_usd"] and record["cost_usd"] > 0  # claude-sonnet-4-5 is in litellm's cost map
