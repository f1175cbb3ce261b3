"""``ecgw audit public-key`` (the checkpoints' Ed25519 key, PEM), ``ecgw audit verify`` (walk the audit's
chain and checkpoints, name every break, exit 1 on any) and ``ecgw audit verify-receipt`` (an egress receipt's
signature and, given the body, its hash; exit 1 on a forged receipt or a body that does not match).

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
        erased = (f", {report.erased} calls erased by {report.erasures} erasures (content tombstoned, hashes kept)"
                  if report.erasures else "")
        sys.stdout.write(f"audit trail {state}: {report.entries} records, {report.checkpoints} signed checkpoints, "
                         f"{report.receipts} receipts{erased}, head {report.head_hash}\n")
    return 0 if report.intact else EXIT_BROKEN


def _receipt_keys(args: argparse.Namespace) -> dict[str, Any]:
    """key id → public key: every PEM block of every ``--public-key`` file, else the key the config derives."""
    from privacy.audit import key_id, load_public_pems

    if args.public_key:
        found = [key for path in args.public_key for key in load_public_pems(Path(path).read_bytes())]
        return {key_id(key): key for key in found}
    public = _signer(_settings(args.config)).public
    return {key_id(public): public}


def _tokens(value: str) -> list[str]:
    """The receipts an argument holds: a token, a header's comma-separated tokens, ``@FILE`` or ``-`` (stdin)."""
    if value == "-":
        value = sys.stdin.read()
    elif value.startswith("@"):
        value = Path(value[1:]).read_text(encoding="utf-8")
    return [token.strip() for token in value.split(",") if token.strip()]


def verify_receipt(args: argparse.Namespace) -> int:
    from gateway.settings import ConfigError
    from privacy.audit import ReceiptInvalid, verify_receipt_token

    try:
        keys = _receipt_keys(args)
        tokens = _tokens(args.receipt)
        body = Path(args.body).read_bytes() if args.body else None
    except (ConfigError, OSError, ValueError) as exc:
        return _fail(str(exc))
    if not tokens:
        return _fail("no receipt given: pass the x-ecgw-egress-receipt value, @FILE or - (stdin)")
    bad = 0
    for token in tokens:
        try:
            claims = verify_receipt_token(token, keys)
        except ReceiptInvalid as exc:
            bad += 1
            sys.stdout.write(f"FORGED {exc}\n")
            continue
        line = (f"receipt valid: request {claims.get('rid')}, target {claims.get('target')}, verdict "
                f"{claims.get('verdict')}, body_sha256 {claims.get('body_sha256')}")
        if body is not None:
            import hashlib

            if hashlib.sha256(body).hexdigest() == claims.get("body_sha256"):
                line += "; the body matches"
            else:
                bad += 1
                line = f"MISMATCH {line}; the body given hashes to {hashlib.sha256(body).hexdigest()}"
        sys.stdout.write((json.dumps(claims) if args.format == "json" and not line.startswith("MISMATCH")
                          else line) + "\n")
    return EXIT_BROKEN if bad else 0


def register(subparsers: Any) -> None:
    audit = subparsers.add_parser("audit", help="the tamper-evident audit trail: public key, verification, receipts")
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
    receipt = commands.add_parser("verify-receipt", help="check an egress receipt's signature and, with --body, "
                                                         "the hash of the body it covers; exit 1 when either fails")
    receipt.add_argument("receipt", help="the x-ecgw-egress-receipt value (one token or several, comma-separated), "
                                         "@FILE to read it from a file, or - for stdin")
    receipt.add_argument("--body", default=None, help="a file holding the exact body the receipt covers")
    receipt.add_argument("--public-key", action="append", default=None,
                         help="PEM file of the signing public key(s), repeatable (default: derived from --config)")
    receipt.add_argument("--config", default=None, help="YAML config file (finds the secrets key)")
    receipt.add_argument("--format", choices=("text", "json"), default="text",
                         help="text: one line per receipt; json: each valid receipt's claims")
    receipt.set_defaults(func=verify_receipt)
