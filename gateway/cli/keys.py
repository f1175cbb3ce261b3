"""``ecgw keys create|list|revoke``: virtual keys over the metering database, for an operator at a shell (the same
rows ``/admin/v1/keys`` manages; the gateway's replicas pick changes up within seconds). Registered by
``gateway.cli.main``. Every action is audited as ``cli:<user>``."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import time
from typing import Any

from pydantic import ValidationError

from gateway.admin.database import AdminDatabase
from gateway.admin.routes import NewKey
from gateway.admin.virtual_keys import POLL_S, key_hash, new_secret, stale_after
from gateway.config.settings import ConfigError, Settings, load_settings


def register(subparsers: Any) -> None:
    keys = subparsers.add_parser("keys", help="create, list and revoke virtual keys (over the metering database)")
    actions = keys.add_subparsers(dest="keys_action", required=True)
    create = actions.add_parser("create", help="a new key, printed once as JSON {id, key}")
    create.add_argument("--tenant", required=True, help="the tenant that owns the key's sessions and usage")
    create.add_argument("--session", default=None, help="bind the key to this one session")
    create.add_argument("--policies", default=None, help="comma-separated policies the key may use (default: all)")
    create.add_argument("--expires-at", default=None, help="ISO 8601 time with a zone, e.g. 2027-01-01T00:00:00Z")
    listed = actions.add_parser("list", help="every key, as JSON lines (never the key itself)")
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("id", help="the key's id (vk_…)")
    for parser in (create, listed, revoke):
        parser.add_argument("--config", default=None, help="YAML config file (database_url, secrets)")
        parser.set_defaults(func=run)


def _parts(settings: Settings) -> tuple[AdminDatabase, bytes]:
    from gateway.state.keys import load_keys
    from gateway.state.stores import session_store_kind

    keys = load_keys(settings, persistent_sessions=session_store_kind(settings) != "memory")
    db = AdminDatabase.from_url(settings.database_url)
    db.open()
    return db, keys.derive("virtual-keys")


def run(args: argparse.Namespace) -> int:
    from gateway.cli.main import config_path
    from gateway.live.policy_choice import build_router

    settings = load_settings(config_path(args.config))
    who = f"cli:{getpass.getuser()}"
    db, hash_key = _parts(settings)
    try:
        if args.keys_action == "list":
            for key in db.keys():
                print(json.dumps(key.listed()))
            db.record(who=who, action="keys.list", target=None, status=200)
            return 0
        if args.keys_action == "revoke":
            done = db.revoke(args.id)
            db.record(who=who, action="keys.revoke", target=args.id, status=200 if done else 404)
            if not done:
                print(f"ecgw keys: no active key {args.id} (ecgw keys list shows them)", file=sys.stderr)
                return 1
            time.sleep(stale_after(POLL_S))  # until every serving worker has read it or refuses virtual keys
            print(json.dumps({"id": args.id, "revoked": True}))
            return 0
        try:
            new = NewKey.model_validate({"tenant": args.tenant, "session": args.session, "expires_at": args.expires_at,
                                         "policies": args.policies.split(",") if args.policies else None})
        except ValidationError as exc:
            error = exc.errors()[0]
            raise ConfigError(f"--{'-'.join(str(p) for p in error['loc']).replace('_', '-')}: {error['msg']}") from None
        known = build_router(settings)[0].names
        if unknown := [p for p in new.policies or () if p not in known]:
            raise ConfigError(f"--policies: unknown {', '.join(unknown)}; the policies are {', '.join(known)}")
        secret = new_secret()
        key = db.create(key_hash=key_hash(hash_key, secret), tenant=new.tenant, session=new.session,
                        policies=new.policies, limits=None,
                        expires_at=new.expires_at.timestamp() if new.expires_at else None, created_by=who)
        db.record(who=who, action="keys.create", target=key.id, status=201)
        print(json.dumps({"id": key.id, "key": secret}))
        return 0
    finally:
        db.dispose()
