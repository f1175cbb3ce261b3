"""``ecgw audit public-key`` (the checkpoints' Ed25519 key, PEM), ``ecgw audit rotate-key``, ``ecgw audit verify`` (walk the audit's
chain and checkpoints, name every break, exit 1 on any) and ``ecgw audit verify-receipt`` (an egress receipt's
signature and, given the body, its hash; exit 1 on a forged receipt or a body that does not match) and ``ecgw audit
query`` (did a data class reach a tier: from the receipts' claims, with the period's chain verified).

The keys are derived from the gateway's secrets key (``audit-sign``, then ``audit-sign-N`` per rotation), so the
same configuration finds the same keys; an auditor without the secrets key verifies with ``--public-key`` (the
PEMs the operator published).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from privacy.classes.names import CLASSES, TIERS

EXIT_BROKEN = 1
EXIT_INVALID = 2


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    sys.stderr.write(f"ecgw audit: {message}\n")
    return code


def _settings(config: str | None) -> Any:
    from gateway.cli.main import config_path
    from gateway.config.settings import load_settings

    return load_settings(config_path(config))


def _store(settings: Any, database_url: str | None = None) -> Any:
    """The audit store on the configured database, with the signing key's generations derived from the secrets
    key (the same configuration finds the same keys)."""
    from accounting.database import make_engine
    from gateway.state.keys import load_keys
    from gateway.state.stores import session_store_kind
    from privacy.audit import AuditStore, SigningKeys

    keys = load_keys(settings, persistent_sessions=session_store_kind(settings) != "memory")
    store = AuditStore(make_engine(database_url or settings.database_url), keys=SigningKeys(keys.derive))
    store.ensure()
    return store


def _generations(store: Any) -> int:
    from privacy.audit.chain import current_generation

    with store.engine.connect() as conn:
        return current_generation(conn)


def _trusted(store: Any, public_keys: list[str] | None) -> dict[str, Any]:
    """key id → public key: every PEM block of every ``--public-key`` file, else every generation derived."""
    from privacy.audit import key_id, load_public_pems

    if public_keys:
        return {key_id(k): k for path in public_keys for k in load_public_pems(Path(path).read_bytes())}
    ring: dict[str, Any] = store.keys.ring(_generations(store))
    return ring


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
    from accounting.database import StoreUnavailable
    from gateway.config.settings import ConfigError

    try:
        store = _store(_settings(args.config), args.database_url)
        generations = _generations(store)
    except (ConfigError, OSError, ValueError, StoreUnavailable) as exc:
        return _fail(str(exc))
    for generation in range(1 if args.all else generations, generations + 1):
        signer = store.keys.signer(generation)
        if args.all:
            sys.stdout.write(f"# generation {generation}, key id {signer.key_id}\n")
        sys.stdout.write(signer.public_pem())
    return 0


def rotate_key(args: argparse.Namespace) -> int:
    from accounting.database import StoreUnavailable
    from gateway.config.settings import ConfigError

    try:
        store = _store(_settings(args.config), args.database_url)
        signer = store.rotate_key()
    except (ConfigError, OSError, ValueError, StoreUnavailable) as exc:
        return _fail(str(exc))
    sys.stderr.write(f"ecgw audit: signing key rotated to generation {_generations(store)} (key id {signer.key_id});"
                     " running gateways sign with it from their next checkpoint; publish the new key below, keep the"
                     " old ones (ecgw audit public-key --all)\n")
    sys.stdout.write(signer.public_pem())
    return 0


def verify(args: argparse.Namespace) -> int:
    from accounting.database import StoreUnavailable
    from gateway.config.settings import ConfigError
    from privacy.audit import verify_trail

    try:
        since = _since(args.since)
        store = _store(_settings(args.config), args.database_url)
        report = verify_trail(store.engine, _trusted(store, args.public_key), since=since)
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


def query(args: argparse.Namespace) -> int:
    """``ecgw audit query --class C --tier T``: did any body holding class C reach a target of tier T (over the
    period, for the owner)? The count, the receipts, and whether the chain over the period verified."""
    import time

    from accounting.database import StoreUnavailable
    from gateway.cli.periods import scope as period
    from gateway.config.settings import ConfigError
    from privacy.report.build import trail
    from privacy.report.classes import matching
    from privacy.report.reads import receipt_claims

    now = time.time()
    try:
        scope = period(args.owner, args.since, args.until, now=now)
        store = _store(_settings(args.config), args.database_url)
        with store.engine.connect() as conn:
            found = matching(receipt_claims(conn, scope), args.data_class, args.tier)
        chain = trail(store.engine, _trusted(store, args.public_key), scope)
    except (ConfigError, OSError, ValueError, StoreUnavailable) as exc:
        return _fail(str(exc))
    answer: dict[str, Any] = {"question": {"class": args.data_class, "tier": args.tier, "owner": scope.owner,
                           "since": scope.since, "until": scope.until},
              "count": len(found), "receipts": found,
              "chain": {"verified": bool(chain.get("verified") and chain.get("intact")),
                        **{k: chain[k] for k in ("entries", "checkpoints", "anchored", "breaks") if k in chain}}}
    if args.format == "json":
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        sys.stdout.write(_query_markdown(answer))
    return 0 if answer["chain"]["verified"] else EXIT_BROKEN


def _query_markdown(answer: dict[str, Any]) -> str:
    q, chain = answer["question"], answer["chain"]
    when = (f"{datetime.datetime.fromtimestamp(q['since'], datetime.UTC):%Y-%m-%d %H:%M} UTC" if q["since"] is not None
            else "the first record")
    lines = [f"# Did {q['class']} data reach a {q['tier']} target?", "",
             f"Owner {q['owner']}, from {when} to "
             f"{datetime.datetime.fromtimestamp(q['until'], datetime.UTC):%Y-%m-%d %H:%M} UTC.", "",
             f"**{answer['count']}** bodies holding {q['class']} data were handed to a {q['tier']} target.", "",
             f"The audit chain over the period {'verified' if chain['verified'] else 'did NOT verify'}"
             + (f" ({chain.get('entries')} records, {chain.get('checkpoints')} signed checkpoints)." if 'entries' in chain
                else "."), ""]
    for found in chain.get("breaks") or ():
        lines.append(f"- BROKEN {found.get('what')} {found.get('where', '')} {found.get('detail', '')}".rstrip())
    if answer["receipts"]:
        lines += ["", "| receipt | request | target | when (UTC) | pseudonymised | raw |", "|---|---|---|---|---:|---:|"]
        for r in answer["receipts"]:
            counts = r[q["class"]]
            lines.append(f"| {r['id']} | {r['request_id']} | {r['target']} | "
                         f"{datetime.datetime.fromtimestamp(r['created_at'], datetime.UTC):%Y-%m-%d %H:%M:%S} | "
                         f"{counts['pseudonymised']} | {counts['raw']} |")
    return "\n".join(lines) + "\n"


def _tokens(value: str) -> list[str]:
    """The receipts an argument holds: a token, a header's comma-separated tokens, ``@FILE`` or ``-`` (stdin)."""
    if value == "-":
        value = sys.stdin.read()
    elif value.startswith("@"):
        value = Path(value[1:]).read_text(encoding="utf-8")
    return [token.strip() for token in value.split(",") if token.strip()]


def verify_receipt(args: argparse.Namespace) -> int:
    from accounting.database import StoreUnavailable
    from gateway.config.settings import ConfigError
    from privacy.audit import ReceiptInvalid, verify_receipt_token

    try:
        keys = _trusted(None if args.public_key else _store(_settings(args.config)), args.public_key)
        tokens = _tokens(args.receipt)
        body = Path(args.body).read_bytes() if args.body else None
    except (ConfigError, OSError, ValueError, StoreUnavailable) as exc:
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
    key = commands.add_parser("public-key", help="print the signing key's Ed25519 public key (PEM)")
    key.add_argument("--config", default=None, help="YAML config file (the secrets key, database_url)")
    key.add_argument("--database-url", default=None, help="overrides the config's database_url")
    key.add_argument("--all", action="store_true", help="every generation's key (after rotations), oldest first")
    key.set_defaults(func=public_key)
    rotate = commands.add_parser("rotate-key", help="sign with a new key from now on; old checkpoints and receipts "
                                                    "still verify with the old public keys")
    rotate.add_argument("--config", default=None, help="YAML config file (the secrets key, database_url)")
    rotate.add_argument("--database-url", default=None, help="overrides the config's database_url")
    rotate.set_defaults(func=rotate_key)
    check = commands.add_parser("verify", help="walk the chain and its checkpoints; exit 1 on any break")
    check.add_argument("--config", default=None, help="YAML config file (database_url, the secrets key)")
    check.add_argument("--database-url", default=None, help="overrides the config's database_url")
    check.add_argument("--since", default=None, help="re-hash the records made at or after this time "
                                                     "(unix seconds or ISO 8601); links are always walked in full")
    check.add_argument("--public-key", action="append", default=None,
                       help="PEM file of the public key(s), repeatable (default: every generation, derived)")
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
    ask = commands.add_parser("query", help="did a data class reach a target tier? the count, the receipts, and "
                                            "whether the chain over the period verified (exit 1 if it did not)")
    ask.add_argument("--class", dest="data_class", required=True, choices=CLASSES, help="the data class")
    ask.add_argument("--tier", required=True, choices=TIERS, help="the targets' tier")
    ask.add_argument("--owner", default="all", help="a tenant (acme), an owner as the gateway names it (t.acme), "
                                                    "or all (default: all)")
    ask.add_argument("--since", default=None, help="from this time: unix seconds, ISO 8601, or a duration back "
                                                   "from now such as 90d (default: the first record)")
    ask.add_argument("--until", default=None, help="up to (not including) this time; default now")
    ask.add_argument("--public-key", action="append", default=None,
                     help="PEM file of the public key(s), repeatable (default: every generation, derived)")
    ask.add_argument("--config", default=None, help="YAML config file (database_url, the secrets key)")
    ask.add_argument("--database-url", default=None, help="overrides the config's database_url")
    ask.add_argument("--format", choices=("json", "md"), default="md", help="json: the answer as one object")
    ask.set_defaults(func=query)
