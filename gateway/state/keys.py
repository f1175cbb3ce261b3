"""The gateway's secret key: where it comes from, and the purpose keys derived from it.

One 32-byte secret, never stored in a database: from the environment variable named by ``secrets.key_env``, or a
key file (``secrets.key_file``, else ``ecgw.key`` beside the SQLite session store or database) created with mode
0600 on first start. When nothing the gateway keeps outlives the process (memory session store, in-memory
database), a random key per process is enough. Each use gets its own key by HKDF, so one never stands in for
another: ``vault`` (AES-GCM of session state), ``audit`` (value hashes), ``owner`` (API keys → session owners),
``session-id`` (session ids taken from ``user``/``metadata``), ``session-trace`` (the session as logs and spans
show it), ``audit-body`` (the audit's copy of each outgoing body).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from gateway.config.settings import ConfigError, Settings

KEY_BYTES = 32
KEY_FILE_NAME = "ecgw.key"


@dataclass(frozen=True)
class Keys:
    master: bytes
    source: str  # where it came from, for messages: "env ECGW_KEY", "file /path", "ephemeral"

    def derive(self, purpose: str) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None,
                    info=b"ecgw/" + purpose.encode()).derive(self.master)


def _decode(text: str) -> bytes | None:
    text = text.strip()
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        try:
            raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_" if "-" in text or "_" in text
                                   else None, validate=True)
        except (binascii.Error, ValueError):
            return None
    return raw if len(raw) == KEY_BYTES else None


_HOW = "32 random bytes as 64 hex digits or base64 (e.g. python -c 'import secrets; print(secrets.token_hex(32))')"


def _sqlite_file(database_url: str) -> Path | None:
    try:
        url = make_url(database_url)
    except ArgumentError:
        return None
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def default_key_path(settings: Settings, *, persistent_sessions: bool) -> Path | None:
    """Beside the SQLite session store, else beside the SQLite database; ``ecgw.key`` in the working directory
    when state persists elsewhere (PostgreSQL); None when nothing persists."""
    if persistent_sessions:
        return Path(settings.sessions.sqlite_path).resolve().parent / KEY_FILE_NAME
    database = _sqlite_file(settings.database_url)
    if database is not None:
        return database.resolve().parent / KEY_FILE_NAME
    if not settings.database_url.startswith("sqlite"):
        return Path(KEY_FILE_NAME).resolve()
    return None


def _read_file(path: Path) -> bytes:
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"secrets.key_file: cannot read {path} ({exc}); fix its permissions or point "
                          "secrets.key_file elsewhere") from None
    if mode & 0o077:
        raise ConfigError(f"secrets.key_file: {path} may be read by other users (mode {mode & 0o777:o}); run "
                          f"chmod 600 {path}")
    key = _decode(text)
    if key is None:
        raise ConfigError(f"secrets.key_file: {path} does not hold a key; it must hold {_HOW}")
    return key


def _create_file(path: Path) -> bytes:
    """Created once, atomically (O_EXCL): of workers starting together, one writes and the others read it."""
    key = secrets.token_bytes(KEY_BYTES)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_file(path)
    except OSError as exc:
        raise ConfigError(f"secrets.key_file: cannot create {path} ({exc}); make its folder writable or set "
                          "secrets.key_env") from None
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key.hex() + "\n")
        out.flush()
        os.fsync(out.fileno())
    return key


def load_keys(settings: Settings, *, persistent_sessions: bool) -> Keys:
    """The key, or ``ConfigError`` naming the setting to fix (``ecgw serve`` exits 2)."""
    name = settings.secrets.key_env
    if name:
        value = os.environ.get(name)
        if not value:
            raise ConfigError(f"secrets.key_env names the environment variable {name}, which is not set; set it to "
                              f"{_HOW}")
        key = _decode(value)
        if key is None:
            raise ConfigError(f"secrets.key_env: {name} does not hold a key; it must hold {_HOW}")
        return Keys(key, f"environment variable {name}")
    path = Path(settings.secrets.key_file) if settings.secrets.key_file else default_key_path(
        settings, persistent_sessions=persistent_sessions)
    if path is None:
        return Keys(secrets.token_bytes(KEY_BYTES), "a random key for this process (nothing persists)")
    key = _read_file(path) if path.exists() else _create_file(path)
    return Keys(key, f"key file {path}")
