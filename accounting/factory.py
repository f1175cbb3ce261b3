"""Build the meter the gateway injects into every channel."""

from __future__ import annotations

from pathlib import Path

from accounting.builder import RecordBuilder
from accounting.calls import Meter, NullMeter
from accounting.estimate import TokenEstimator
from accounting.flops import FlopsCalculator
from accounting.metrics import MeteringMetrics
from accounting.pricing import Pricer, bundled_litellm_cost_map
from accounting.settings import AccountingSettings
from accounting.store import UsageStore
from accounting.writer import StoreMeter


def build_pricer(settings: AccountingSettings) -> Pricer:
    """The price table ``accounting.prices`` describes (a reload builds a new one for the calls after it)."""
    return Pricer(settings.prices, price_version=settings.price_version,
                  fallback=bundled_litellm_cost_map if settings.litellm_fallback else None)


def build_record_builder(settings: AccountingSettings) -> RecordBuilder:
    pricer = build_pricer(settings)
    flops = FlopsCalculator(settings.edge_models, formula=settings.flops_formula, attention=settings.flops_attention)
    return RecordBuilder(pricer, flops, TokenEstimator())


def usage_store(meter: Meter) -> UsageStore | None:
    """The metering database a meter writes to (None: a meter that keeps nothing, or a test's own)."""
    return meter.store if isinstance(meter, StoreMeter) else None


def build_meter(settings: AccountingSettings, *, database_url: str) -> Meter:
    """A ``StoreMeter`` writing to ``database_url``; nothing connects until ``start()``."""
    if not settings.enabled:
        return NullMeter()
    return StoreMeter(UsageStore.from_url(database_url), build_record_builder(settings), MeteringMetrics(),
                      settings.writer, spill_path=Path(settings.spill_path) if settings.spill_path else None)
