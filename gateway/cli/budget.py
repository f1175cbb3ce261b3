"""``ecgw usage --budgets``: spend against every budget of the config's ``limits`` (each key's, by its label, and
each arm's), from the metering database — the truth the gateway's counters are seeded from; calls in flight
(reserved, not yet settled) are not in it. Registered onto ``ecgw usage`` (``accounting.cli``), which it extends."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from accounting.cli import resolve_database_url
from accounting.database import StoreUnavailable
from accounting.factory import build_record_builder
from accounting.store import UsageStore
from gateway.config.settings import ConfigError, load_settings
from gateway.live.budget_overview import COLUMNS, budget_overview
from gateway.live.limits import prices_of, usage_seeder
from gateway.state.keys import load_keys
from gateway.state.sessions import MemorySessionStore
from gateway.state.tenancy import Tenancy
from router.budgets.errors import BudgetUnavailable
from router.budgets.limits import Budgets
from router.budgets.measures import Estimator


def budget_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings = load_settings(args.config)
    keys = load_keys(settings, persistent_sessions=True)  # the owners of bare keys are keyed hashes
    tenancy = Tenancy(settings.server, settings.sessions, owner_key=keys.derive("owner"),
                      session_id_key=keys.derive("session-id"))
    store = UsageStore.from_url(resolve_database_url(args.database_url, args.config))
    try:
        estimator = Estimator(prices_of(settings), build_record_builder(settings.accounting),
                              default_max_tokens=settings.limits.default_max_tokens)
        # An empty store of counters: every figure comes from the metering database
        budgets = Budgets(settings.limits, store=MemorySessionStore(), seeder=usage_seeder(store),
                          estimator=estimator, hash_key=keys.derive("budget"))
        return asyncio.run(budget_overview(budgets, tenancy.configured()))
    finally:
        store.dispose()


def _render(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    cells = [[_cell(row.get(c)) for c in COLUMNS] for row in rows if row["kind"] not in ("rpm", "tpm")]
    header = list(COLUMNS)
    if fmt in ("md", "csv"):
        sep = "," if fmt == "csv" else " | "
        lines = [sep.join(header), *(sep.join(c) for c in cells)]
        if fmt == "md":
            lines = ["| " + line + " |" for line in lines]
            lines.insert(1, "|" + "---|" * len(header))
        return "\n".join(lines) + "\n"
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(header)]
    lines = ["Spend against each budget of limits (from the metering database; USD, tokens, calls, edge PFLOPs).",
             "", "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    if not cells:
        lines.append("(no budgets configured under limits)")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def report(args: argparse.Namespace, plain: Any) -> int:
    if not args.budgets:
        return int(plain(args))
    if not args.config:
        print("ecgw usage --budgets: name the config whose limits to report (--config FILE)", file=sys.stderr)
        return 2
    try:
        rows = budget_rows(args)
    except ConfigError as exc:
        print(f"ecgw usage --budgets: {exc}", file=sys.stderr)
        return 2
    except (StoreUnavailable, BudgetUnavailable) as exc:
        print(f"ecgw usage --budgets: the metering database cannot be read: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(_render(rows, args.format))
    return 0


def register(subparsers: Any) -> None:
    usage = subparsers.choices["usage"]  # ``accounting.cli`` registers ``ecgw usage`` first
    plain = usage.get_default("func")
    usage.add_argument("--budgets", action="store_true",
                       help="spend against each budget of the config's limits (each key, each arm) instead of usage "
                            "per group; needs --config")
    usage.set_defaults(func=lambda args: report(args, plain))
