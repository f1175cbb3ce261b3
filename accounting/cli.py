"""``ecgw usage``: usage reports from the metering store (registered by ``gateway.cli.main``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from accounting.database import StoreUnavailable, safe_url
from accounting.reports import FORMATS, BadReportRequest, parse_since, render, usage_report
from accounting.store import GROUPS, UsageStore

DEFAULT_DATABASE_URL = "sqlite:///ecgw.sqlite3"


def resolve_database_url(cli_url: str | None, config: str | None) -> str:
    """``--database-url``, then ``ECGW_DATABASE_URL``, then the config file's ``database_url``, then the default
    (the same precedence ``ecgw serve`` uses)."""
    if cli_url:
        return cli_url
    if os.environ.get("ECGW_DATABASE_URL"):
        return os.environ["ECGW_DATABASE_URL"]
    path = config or os.environ.get("ECGW_CONFIG_FILE")
    if path:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise StoreUnavailable(f"cannot read config file {path}: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("database_url"), str):
            return str(data["database_url"])
    return DEFAULT_DATABASE_URL


def _check_sqlite_file(database_url: str) -> None:
    try:
        url = make_url(database_url)
    except ArgumentError:
        return
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        if not Path(url.database).exists():
            raise StoreUnavailable(f"no metering database at {safe_url(database_url)} (file {url.database} does "
                                   "not exist): nothing has been recorded there yet, or database_url points "
                                   "elsewhere")


def report(args: argparse.Namespace) -> int:
    try:
        database_url = resolve_database_url(args.database_url, args.config)
        since = parse_since(args.since, now=time.time())
        _check_sqlite_file(database_url)
        store = UsageStore.from_url(database_url)
        try:
            try:
                with store.engine.connect() as conn:
                    has_table = inspect(conn).has_table("ecgw_usage_records")
            except (SQLAlchemyError, OSError) as exc:
                raise store.unavailable(exc) from None
            rows: list[dict[str, Any]] = usage_report(store, args.by, since=since) if has_table else []
        finally:
            store.dispose()
    except BadReportRequest as exc:
        print(f"ecgw usage: {exc}", file=sys.stderr)
        return 2
    except StoreUnavailable as exc:
        print(f"ecgw usage: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(rows, by=args.by, fmt=args.format))
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("usage", help="tokens, cost and edge PFLOPs from the metering store",
                              description="Usage per group: cloud tokens raw/cache/output (millions), cloud cost "
                                          "(USD), edge compute (PFLOPs).")
    p.add_argument("--by", choices=list(GROUPS), default="policy", help="grouping (default: policy)")
    p.add_argument("--since", default=None, help="only calls since: 7d, 24h, 30m or an ISO date/time (UTC)")
    p.add_argument("--format", choices=list(FORMATS), default="table", help="output format (default: table)")
    p.add_argument("--config", default=None, help="YAML config file whose database_url to read")
    p.add_argument("--database-url", default=None, help="overrides the config's database_url")
    p.set_defaults(func=report)
