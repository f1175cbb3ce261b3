"""A worker's copy of the virtual keys: a key made after its last read is found by its hash, a copy too old to
know of a revocation refuses every virtual key (503, fail closed), and a database that cannot be read is a 503 in
OpenAI's shape, never a traceback — over a real SQLite admin database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.admin.database import AdminDatabase
from gateway.admin.virtual_keys import VirtualKeys, new_secret
from gateway.http.errors import ClientError


def _made(db: AdminDatabase, keys: VirtualKeys) -> str:
    secret = new_secret()
    db.create(key_hash=keys.hash(secret), tenant="acme", session=None, policies=None, limits=None, expires_at=None,
              created_by="test")
    return secret


def test_a_copy_too_old_refuses_and_a_new_key_is_found_by_its_hash(tmp_path: Path) -> None:
    db = AdminDatabase.from_url(f"sqlite:///{tmp_path / 'keys.sqlite3'}")
    db.open()
    now = [1000.0]
    keys = VirtualKeys(db, b"k" * 32, poll_s=2.0, clock=lambda: now[0])
    first = _made(db, keys)
    keys.load()
    assert keys.find(first) is not None
    later = _made(db, keys)  # made after this worker's read (on another worker, say)
    assert keys.find(later) is None and asyncio.run(keys.fetch(later)) and keys.find(later) is not None
    assert not asyncio.run(keys.fetch(new_secret()))  # a secret nobody was given
    now[0] += keys.stale_after_s + 0.5  # the reads failed meanwhile: a revocation could have been missed
    with pytest.raises(ClientError) as refused:
        keys.find(first)
    assert refused.value.status == 503 and refused.value.code == "keys_unavailable"
    keys.load()
    assert keys.find(first) is not None
    db.dispose()


def test_an_unreadable_database_is_a_503_not_a_traceback(tmp_path: Path) -> None:
    gone = AdminDatabase.from_url(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite3'}")
    keys = VirtualKeys(gone, b"k" * 32)
    with pytest.raises(ClientError) as refused:
        asyncio.run(keys.fetch(new_secret()))
    assert refused.value.status == 503 and refused.value.code == "keys_unavailable"
    gone.dispose()
