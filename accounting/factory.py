"""Build the meter the gateway injects into every channel."""

from __future__ import annotations

from accounting.calls import Meter, NullMeter
from accounting.settings import AccountingSettings


def build_meter(settings: AccountingSettings, *, database_url: str) -> Meter:
    return NullMeter()
