"""``ecgw privacy-report --owner <tenant|all> --since … --until … --format json|md|html|pdf``: the period report an
auditor reads (``privacy.report``), from the audit's and the metering store's tables on ``database_url``, with the
trail verified against the checkpoints' public key (derived from the secrets key, or ``--public-key``).

This is the operator's command (it reads the database directly): ``--owner all`` shows every owner, ``--owner
acme`` only the sessions of tenant ``acme`` (``t.acme/…``); an owner as the gateway names it (``t.…``, ``o.…``,
``k.…``) is taken as given.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

EXIT_INVALID = 2


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    sys.stderr.write(f"ecgw privacy-report: {message}\n")
    return code


def period_report(args: argparse.Namespace) -> int:
    from accounting.database import StoreUnavailable
    from accounting.store import UsageStore
    from gateway.cli.audit import _settings, _store, _trusted
    from gateway.cli.periods import scope as period
    from gateway.config.settings import ConfigError
    from gateway.state.tenancy import owner_of
    from privacy.report import build_report, render

    now = time.time()
    try:
        scope = period(args.owner, args.since, args.until, now=now)
        settings = _settings(args.config)
        url = args.database_url or settings.database_url
        audit = _store(settings, url)
        public = _trusted(audit, [args.public_key] if args.public_key else None)  # every generation of the key
        usage = UsageStore.from_url(url) if settings.accounting.enabled else None
        report = build_report(audit.engine, scope, usage=usage, public=public, owner_of=owner_of)
        out = render(report, args.format)
    except (ConfigError, OSError, ValueError, StoreUnavailable) as exc:
        return _fail(str(exc))
    if args.output:
        Path(args.output).write_bytes(out)
    elif args.format == "pdf" and sys.stdout.isatty():
        return _fail("a PDF is binary: write it with --output FILE (or redirect standard output)")
    else:
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    return 0


def add_arguments(parser: Any) -> None:
    """The period form's options on ``ecgw privacy-report`` (``--owner`` joins ``--session``/``--experiment``)."""
    parser.add_argument("--since", default=None, help="with --owner: from this time (unix seconds, ISO 8601, or a "
                                                      "duration back from now such as 7d)")
    parser.add_argument("--until", default=None, help="with --owner: up to (not including) this time; default now")
    parser.add_argument("--public-key", default=None, help="with --owner: PEM of the checkpoints' public key "
                                                           "(default: derived from the secrets key)")
    parser.add_argument("--output", default=None, help="with --owner: write the report to this file")
