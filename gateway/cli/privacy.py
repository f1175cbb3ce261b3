"""``ecgw scrub`` (what would the cloud see?) and ``ecgw privacy-report``."""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.cli.report import add_arguments as add_period_arguments
from gateway.state.sessions import MemorySessionStore
from privacy.detect import EdgeEndpoint
from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from privacy.settings import PrivacySettings

EXIT_INVALID = 2
EXIT_BLOCKED = 3
EXIT_UNAVAILABLE = 4


def _config(path: str | None) -> tuple[PrivacySettings, str]:
    """The ``privacy:`` section and ``database_url`` of a config file (defaults without one)."""
    data: dict[str, Any] = {}
    if path:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"config file {path}: expected a mapping of sections")
        data = loaded
    return PrivacySettings.model_validate(data.get("privacy") or {}), str(data.get("database_url")
                                                                         or "sqlite:///ecgw.sqlite3")


def _edge(path: str | None) -> EdgeEndpoint:
    """The ``edge:`` section of a config file (defaults without one), for ``privacy.edge_detector``."""
    from gateway.config.settings import EdgeSettings, edge_endpoint

    data = (yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}) if path else {}
    return edge_endpoint(EdgeSettings.model_validate(data.get("edge") or {}))


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    print(f"ecgw: {message}", file=sys.stderr)
    return code


def scrub(args: argparse.Namespace) -> int:
    from privacy.audit import Hasher, safe_location
    from privacy.detect import UnitsDocument
    from privacy.factory import build_privacy_protector

    try:
        settings, _ = _config(args.config)
        edge = _edge(args.config) if settings.edge_detector.enabled else None
        units = UnitsDocument.from_file(args.units) if args.units else None
    except (OSError, ValueError, ValidationError) as exc:
        return _fail(f"invalid configuration or units file: {exc}")
    raw = sys.stdin.read()
    try:
        body = json.loads(raw)
    except ValueError as exc:
        return _fail(f"standard input is not JSON ({exc}); send one chat-completions request body")
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return _fail('standard input must be a chat-completions request body: a JSON object with "messages"')
    if not settings.enabled:
        sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
        return 0
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore(), edge=edge)

    async def run() -> Any:
        if units is not None:
            await protector.register_units(args.session, units)
        return await protector.scrub(body, session_id=args.session)

    try:
        result = asyncio.run(run())
    except PrivacyBlocked as exc:
        return _fail(f"this request would stay on the edge: {exc.reason}", EXIT_BLOCKED)
    except Exception as exc:
        return _fail(f"privacy protection failed, nothing would be sent: {exc}", EXIT_UNAVAILABLE)
    sys.stdout.write(json.dumps(result.body, ensure_ascii=False) + "\n")
    if args.report:
        hasher = Hasher((settings.hash_key or secrets.token_hex(16)).encode())
        findings = [{"type": a.finding.type, "layer": a.finding.layer, "action": a.action,
                     "location": safe_location(a.finding.location, hasher), "unit_id": a.finding.unit_id, "field": a.finding.field,
                     "dimension": a.finding.dimension, "value_hash": hasher(a.finding.value)}
                    for a in result.applied]
        Path(args.report).write_text(json.dumps({"session_id": args.session, "findings": findings}, indent=2,
                                                ensure_ascii=False), encoding="utf-8")
    return 0


def _body_opener(config: str | None) -> Any:
    """Opens the audit's bodies, which the gateway seals with a key derived from its secrets key (the same
    configuration finds the same key); the key is looked up only when a body is sealed."""
    from privacy.audit import PrivacyCall, body_opener
    from privacy.seal import Sealer

    opener: Any = None

    def open_body(call: PrivacyCall) -> str:
        nonlocal opener
        if not Sealer.is_sealed(call.body):
            return call.body
        if opener is None:
            from gateway.config.settings import load_settings
            from gateway.state.keys import load_keys
            from gateway.state.stores import session_store_kind

            settings = load_settings(config)
            keys = load_keys(settings, persistent_sessions=session_store_kind(settings) != "memory")
            opener = body_opener(Sealer(keys.derive("audit-body")))
        result: str = opener(call)
        return result

    return open_body


def privacy_report(args: argparse.Namespace) -> int:
    from accounting.database import make_engine
    from privacy.audit import AuditStore, benchmark_export, session_report, sessions_of, to_html, to_markdown

    if args.owner is not None:  # the period report (gateway.cli.report)
        from gateway.cli.report import period_report

        return period_report(args)
    if args.format == "pdf":
        return _fail("--format pdf is for the period report: use --owner (with --since/--until)")
    try:
        _, database_url = _config(args.config)
    except (OSError, ValueError, ValidationError) as exc:
        return _fail(f"invalid configuration: {exc}")
    store = AuditStore(make_engine(args.database_url or database_url))
    store.ensure()  # the audit's schema, migrated to this version's (egress verdicts included)
    session_ids = [args.session] if args.session else sessions_of(store.engine, args.experiment)
    if not session_ids:
        return _fail(f"no cloud calls recorded for experiment {args.experiment!r}", 1)
    reports = [session_report(store.engine, s) for s in session_ids]
    if args.format == "json":
        out = json.dumps(reports if args.experiment else reports[0], indent=2, ensure_ascii=False)
    elif args.format == "html":
        out = to_html(reports)
    else:
        out = to_markdown(reports)
    sys.stdout.write(out + "\n")
    if args.export:
        try:
            lines = benchmark_export(store.engine, session_ids, open_body=_body_opener(args.config))
        except PrivacyUnavailable as exc:
            return _fail(f"cannot export the bodies: {exc.reason}", 1)
        Path(args.export).write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                                     encoding="utf-8")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("scrub", help="print the body the gateway would send to the cloud for a request")
    p.add_argument("--config", default=None, help="YAML config file (its privacy: section applies)")
    p.add_argument("--units", default=None, help="sensitive_items.json to register for the session")
    p.add_argument("--session", default="cli", help="session id (placeholders are per session)")
    p.add_argument("--report", default=None, help="write the findings (no raw values) to this JSON file")
    p.set_defaults(func=scrub)
    r = subparsers.add_parser("privacy-report", help="units exposed and protected per session, and exposure; or "
                                                     "the period report of an owner (--owner)")
    who = r.add_mutually_exclusive_group(required=True)
    who.add_argument("--session", default=None, help="report this session")
    who.add_argument("--experiment", default=None, help="report every session of this experiment")
    who.add_argument("--owner", default=None, help="the period report of this tenant (or all): cloud calls, "
                                                   "placeholders, what left raw, blocks, the trail's verification")
    r.add_argument("--format", choices=("md", "html", "json", "pdf"), default="md",
                   help="output format (pdf: the period report only)")
    r.add_argument("--config", default=None, help="YAML config file (for database_url)")
    r.add_argument("--database-url", default=None, help="overrides the config's database_url")
    r.add_argument("--export", default=None,
                   help="also write the benchmark's cloud_assistant_audit.jsonl lines to this file")
    add_period_arguments(r)
    r.set_defaults(func=privacy_report)
