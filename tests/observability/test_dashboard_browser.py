"""The dashboard in a real browser (Debian's headless Chromium, driven by Playwright): after a known mix of traffic
the page shows the route mix, cost, an experiment's arms and a session's steps with the numbers ``/v1/usage``
reports; docs/observability.md's screenshots come from it (``ECGW_SCREENSHOTS_DIR=docs``)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import ModelServer
from tests.observability.gateways import running_gateway
from tests.observability.traffic import NAME, PHONE, PRIVATE_SESSION, drive, settings
from tests.real_parts import require_env


def shots() -> Path:
    """Where screenshots go: ``$ECGW_SCREENSHOTS_DIR`` (e.g. ``docs/``, to refresh docs/observability.md's) or a temporary
    folder, so that a test run never rewrites files the repository tracks."""
    configured = os.environ.get("ECGW_SCREENSHOTS_DIR")
    folder = Path(configured) if configured else Path(tempfile.mkdtemp(prefix="ecgw-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture()
def page(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    chromium = require_env("ECGW_TEST_CHROMIUM", "Debian's chromium (scripts/chromium.sh install)")
    from playwright.sync_api import sync_playwright

    with running_gateway(edge, cloud, **settings(tmp_path)) as (url, _):
        drive(url, edge, cloud)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=FLAGS, headless=True)
            try:
                tab = browser.new_page(viewport={"width": 1440, "height": 1000})
                tab.goto(url + "/ui?since=1h")
                tab.select_option("#since", "1h")
                tab.uncheck("#live")
                tab.wait_for_selector("body[data-loaded='true']")
                _until(tab, "document.querySelectorAll('#policies tbody tr[data-policy]').length >= 4")
                _until(tab, "[...document.images].every((i) => i.complete)")
                yield tab, url
            finally:
                browser.close()


def _until(tab: Any, condition: str) -> None:
    """Until ``condition`` (a JS expression) holds in the page. Not ``wait_for_function``: its predicate is built
    with eval inside the page, which the dashboard's Content-Security-Policy forbids (``evaluate`` runs outside
    the page's policy, as a devtools protocol call)."""
    deadline = time.monotonic() + 30
    while not tab.evaluate(condition):
        assert time.monotonic() < deadline, condition
        time.sleep(0.1)


def _cell(page: Any, row: str, field: str) -> str:
    return str(page.locator(f"{row} td[data-field='{field}']").first.inner_text()).strip()


def test_the_page_shows_what_the_usage_endpoint_reports(page: tuple[Any, str]) -> None:
    tab, url = page
    usage = httpx.get(url + "/v1/usage?by=policy", timeout=30).json()["data"]
    for row in usage:
        selector = f"#policies tr[data-policy='{row['group']}']"
        assert _cell(tab, selector, "requests") == f"{row['requests']:,}"
        assert _cell(tab, selector, "cloud_cost_usd") == f"{row['cloud_cost_usd']:.6f}"
        assert _cell(tab, selector, "cloud_raw_input_tokens") == f"{row['cloud_raw_input_tokens']:,}"
        assert _cell(tab, selector, "cloud_cache_read_tokens") == f"{row['cloud_cache_read_tokens']:,}"
    mix = httpx.get(url + "/ui/api/overview?since=1h", timeout=30).json()["route_mix"]
    for row in mix:
        selector = f"#policies tr[data-policy='{row['policy']}']"
        assert [_cell(tab, selector, k) for k in ("edge", "cloud", "mixed")] == [
            str(row["edge"]), str(row["cloud"]), str(row["mixed"])]
    total = sum(r["cloud_cost_usd"] for r in usage)
    assert tab.locator("[data-tile='cost'] b").first.inner_text() == f"{total:.6f}"
    for chart in ("rate", "routes", "cost", "tokens", "flops", "exposure"):
        assert tab.evaluate(f"document.querySelector('#chart-{chart}').naturalWidth") > 0, chart

    arms = {r["group"]: r for r in httpx.get(url + "/v1/usage?by=arm", timeout=30).json()["data"]}
    for arm in ("cloud", "step"):
        selector = f"[data-experiment='router-ab'] tr[data-arm='{arm}']"
        assert _cell(tab, selector, "requests") == str(arms[arm]["requests"])
        shown = float(_cell(tab, selector, "cloud_cost_usd"))
        assert shown == pytest.approx(arms[arm]["cloud_cost_usd"], abs=1.01e-6)
    assert "[" in _cell(tab, "[data-experiment='router-ab'] tr[data-arm='step']", "cost_delta")  # an interval
    tab.screenshot(path=str(shots() / "dashboard.png"), full_page=True)


def test_a_sessions_steps_show_decision_signal_side_cost_and_what_the_cloud_saw(page: tuple[Any, str]) -> None:
    tab, url = page
    tab.click("#session-table tr[data-session='ab-step-1']")
    _until(tab, "document.querySelectorAll('#steps tbody tr').length === 2")
    first = "#steps tbody tr:nth-child(1)"
    assert _cell(tab, first, "decision").splitlines()[0] == "cloud"
    assert "entropy 2.996 > τ 1.5" in _cell(tab, first, "signal")
    assert _cell(tab, first, "route") == "mixed"
    assert "edge:probe" in _cell(tab, first, "calls") and "cloud:step" in _cell(tab, first, "calls")
    tab.locator("#drill").screenshot(path=str(shots() / "dashboard-steps.png"))

    sessions = {r["group"]: r for r in httpx.get(url + "/v1/usage?by=session", timeout=30).json()["data"]}
    tab.click(f"#session-table tr[data-session='{PRIVATE_SESSION}']")
    _until(tab, f"document.querySelector('#drill-id').textContent === '{PRIVATE_SESSION}'")
    _until(tab, "document.querySelectorAll('#steps tbody tr').length === 2")
    steps = tab.locator("#steps tbody tr")
    shown_cost = sum(float(steps.nth(i).locator("td[data-field='cloud_cost_usd']").inner_text()) for i in range(2))
    assert shown_cost == pytest.approx(sessions[PRIVATE_SESSION]["cloud_cost_usd"], abs=2e-6)
    assert "privacy-blocked" in steps.nth(1).locator("td[data-field='route']").inner_text()
    tab.locator("#steps details.cloudbody summary").first.click()
    seen = str(tab.locator("#steps pre.body").first.inner_text())
    assert tab.locator("#steps pre.body .placeholder").count() >= 2
    assert NAME not in seen and PHONE not in seen and NAME not in tab.content()
    tab.locator("#drill").screenshot(path=str(shots() / "dashboard-session.png"))
