"""``ecgw audit public-key`` (the checkpoints' Ed25519 key, PEM) and ``ecgw audit verify`` (walk the audit's
chain and checkpoints, name every break, exit 1 on any).

The key is derived from the gateway's secrets key (``audit-sign``), so the same configuration finds the same key;
an auditor without the secrets key verifies with ``--public-key`` (the PEM the operator published).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

EXIT_BROKEN = 1
EXIT_INVALID = 2


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    sys.stderr.write(f"ecgw audit: {message}\n")
    return code


def _settings(config: str | None) -> Any:
    from gateway.cli import config_path
    from gateway.settings import load_settings

    return load_settings(config_path(config))


def _signer(settings: Any) -> Any:
    from gateway.app import session_store_kind
    from gateway.keys import load_keys
    from privacy.audit import ChainSigner

    keys = load_keys(settings, persistent_sessions=session_store_kind(settings) != "memory")
    return ChainSigner(keys.derive("audit-sign"))


def _since(value: str | None) -> float | None:
    """Unix seconds or an ISO 8601 time (UTC unless it says otherwise)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    moment = datetime.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def public_key(args: argparse.Namespace) -> int:
    from gateway.settings import ConfigError

    try:
        signer = _signer(_settings(args.config))
    except (ConfigError, OSError, ValueError) as exc:
        return _fail(str(exc))
    sys.stdout.write(signer.public_pem())
    return 0


def verify(args: argparse.Namespace) -> int:
    from accounting.database import StoreUnavailable, make_engine
    from gateway.settings import ConfigError
    from privacy.audit import AuditStore, load_public_pem, verify_trail

    try:
        settings = _settings(args.config)
        since = _since(args.since)
        public = (load_public_pem(Path(args.public_key).read_bytes()) if args.public_key
                  else _signer(settings).public)
        store = AuditStore(make_engine(args.database_url or settings.database_url))
        store.ensure()
        report = verify_trail(store.engine, public, since=since)
    except (ConfigError, OSError, ValueError, StoreUnavailable) as exc:
        return _fail(str(exc))
    if args.format == "json":
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        for found in report.breaks:
            sys.stdout.write(f"BROKEN {found}\n")
        state = "intact" if report.intact else f"BROKEN ({len(report.breaks)} breaks)"
        sys.stdout.write(f"audit trail {state}: {report.entries} records, {report.checkpoints} signed checkpoints, "
                         f"head {report.head_hash}\n")
    return 0 if report.intact else EXIT_BROKEN


def register(subparsers: Any) -> None:
    audit = subparsers.add_parser("audit", help="the tamper-evident audit trail: public key, verification")
    commands = audit.add_subparsers(dest="audit_command", required=True, metavar="AUDIT_COMMAND")
    key = commands.add_parser("public-key", help="print the checkpoints' Ed25519 public key (PEM)")
    key.add_argument("--config", default=None, help="YAML config file (finds the secrets key)")
    key.set_defaults(func=public_key)
    check = commands.add_parser("verify", help="walk the chain and its checkpoints; exit 1 on any break")
    check.add_argument("--config", default=None, help="YAML config file (database_url, the secrets key)")
    check.add_argument("--database-url", default=None, help="overrides the config's database_url")
    check.add_argument("--since", default=None, help="re-hash the records made at or after this time "
                                                     "(unix seconds or ISO 8601); links are always walked in full")
    check.add_argument("--public-key", default=None, help="PEM file of the public key (default: derived)")
    check.add_argument("--format", choices=("text", "json"), default="text",
                       help="text: one line per break; json: the breaks as a JSON list")
    check.set_defaults(func=verify)
