"""Reloading the configuration without a restart: ``POST /admin/v1/reload`` (an admin key) or ``SIGHUP`` to
``ecgw serve``.

A reload reads the config file once (the environment and the command line's overrides over it, as at start),
validates it whole (settings, then every part of a snapshot: policies and knobs, experiments, keys, the parts
others register) and only then swaps it in; a bad file keeps the running configuration, and the answer (400 in
OpenAI's shape, the bad key in ``param``), the log and the admin audit name the key. An empty file is refused, and so
is a file that would switch authentication off — leave no key where there were keys, or no admin key where there
was one — unless it says ``server.auth: none`` (``check_keys_kept``); removing some keys is allowed, and the answer
and the audit name them.

How every worker and replica converges: the version is store-wide. A reload writes ``{"version", "digest",
"text"}`` to the session store (the SQLite file every worker of a machine shares, or the Redis every replica shares;
sealed, like every value there) with the store's atomic ``update``: the text is the file exactly as the reloading
worker read and validated it. Every worker polls that record every ``poll_s`` seconds and loads the text, never its
own copy of the file, so a file changed again before a worker polled (or a ConfigMap still propagating) cannot split
the workers. The memory store is one worker's: there the version is local.

``ecgw serve`` with several workers takes ``SIGHUP`` in its supervisor, which reads no file: it passes the signal
to one worker, which reloads as ``POST /admin/v1/reload`` does (``pass_sighup``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.config.reference import restart_reason
from gateway.config.settings import ConfigError, ServerSettings, Settings, parse_config, read_config, settings_from
from gateway.http.errors import error_response
from gateway.live.snapshot import Configuration
from gateway.state.polling import Poller
from privacy.session_store import SessionStore

log = logging.getLogger("ecgw")

VERSION_SESSION, VERSION_KEY = "\0ecgw-config", "version"
POLL_S = 2.0


class KeysDropped(ConfigError):
    """A reload refused because it would switch authentication off; ``names``: the keys it drops, as messages
    name them (never a secret)."""

    def __init__(self, message: str, *, param: str, names: Sequence[str]) -> None:
        super().__init__(message, param=param)
        self.names = list(names)


def _keys(server: ServerSettings) -> dict[tuple[str, str], str]:
    """Every configured key, ``(list, secret)`` → how a message names it: its name, or a bare key's place in its
    list (a bare key's name is its secret)."""
    out: dict[tuple[str, str], str] = {}
    for where, keys in (("api_keys", server.keys()), ("admin_keys", server.admins())):
        for index, key in enumerate(keys):
            out[(where, key.secret)] = (f"server.{where}: {key.name}" if key.named
                                        else f"server.{where}.{index} (a bare key)")
    for secret, session in server.session_keys.items():
        out[("session_keys", secret)] = f"server.session_keys: the key bound to session {session!r}"
    return out


def removed_keys(running: ServerSettings, new: ServerSettings) -> list[str]:
    """The running keys ``new`` no longer has (a rotated key's old secret counts as removed)."""
    after = _keys(new)
    return [name for key, name in _keys(running).items() if key not in after]


def check_keys_kept(running: ServerSettings, new: ServerSettings) -> list[str]:
    """The keys a reload to ``new`` removes; ``KeysDropped`` when it would leave no key where there were keys, or no
    admin key where there was one, and ``new`` does not say ``server.auth: none``."""
    removed = removed_keys(running, new)
    if new.auth == "none":
        return removed
    if running.has_keys() and not new.has_keys():
        raise KeysDropped(
            f"the new file has no key at all: every route would answer anyone, and no admin could reload again. It "
            f"drops {', '.join(removed)}. Put the keys back, or write server.auth: none to run without keys on purpose",
            param="server.api_keys", names=removed)
    if running.admin_keys and not new.admin_keys:
        dropped = [name for name in removed if name.startswith("server.admin_keys")]
        raise KeysDropped(
            f"the new file has no admin key: nobody could reload again or manage keys. It drops "
            f"{', '.join(dropped)}. Keep at least one in server.admin_keys (to rotate one, add the new key first and "
            "remove the old one in a later reload); to run without an admin key, restart with the new file",
            param="server.admin_keys", names=dropped)
    return removed


@dataclass(frozen=True)
class Reloaded:
    version: int
    not_reloadable: list[str]
    removed_keys: list[str] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        """``not_reloadable``: the changed paths that keep their running value; ``why``: each one's reason;
        ``removed_keys``: the keys that no longer open the gateway."""
        return {"reloaded": True, "version": self.version, "not_reloadable": self.not_reloadable,
                "why": {path: restart_reason(path) for path in self.not_reloadable},
                "removed_keys": self.removed_keys}

    def audit_detail(self) -> str | None:
        return f"removed keys: {'; '.join(self.removed_keys)}" if self.removed_keys else None


def refusal_detail(exc: ConfigError) -> str:
    """What the admin audit keeps of a refused reload: the bad key and the keys it would drop, never the message
    (a YAML error quotes the file's line, which may hold a secret)."""
    if isinstance(exc, KeysDropped):
        return f"refused: would drop {'; '.join(exc.names)}"
    return f"refused (bad key: {exc.param or 'see the log'})"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Seen:
    """A store version as a worker knows it: its number and the reload's own id (the store forgets a record idle
    for ``sessions.ttl_s``, and numbering starts again: a worker tells versions apart by id, not by order)."""

    version: int = 0
    id: str = ""

    @classmethod
    def of(cls, record: Any) -> Seen:
        if not isinstance(record, Mapping):
            return cls()
        return cls(int(record["version"]), str(record.get("id", record.get("digest", ""))))


def _next(text: str) -> Any:
    def bump(current: Any | None) -> Any:
        return {"version": Seen.of(current).version + 1, "id": os.urandom(8).hex(), "digest": _digest(text),
                "text": text}

    return bump


async def bump_version(store: SessionStore, text: str) -> Seen:
    """The next store-wide version, holding ``text`` (the file it loads), taken atomically (two reloads at once get
    two versions)."""
    return Seen.of(await store.update(VERSION_SESSION, VERSION_KEY, _next(text)))


async def stored_version(store: SessionStore) -> Seen:
    return Seen.of(await store.get(VERSION_SESSION, VERSION_KEY))


class Audit(Protocol):
    """Where a reload no HTTP call asked for (a signal) is audited: the admin audit (``AdminDatabase``)."""

    def record(self, *, who: str, action: str, target: str | None, status: int, detail: str | None = None) -> None:
        ...


class Reloader:
    """One worker's reloads: on request, on its signal, and when another worker or replica reloaded.

    ``adopt_after``: the store version this worker's own configuration stands for (a worker that ``ecgw serve``
    started again after a reload starts from the file serve started with, and adopts any other version at its first
    poll). None: the store's current version."""

    def __init__(self, config: Configuration, store: SessionStore, *, path: str | None,
                 overrides: Mapping[str, Any] | None = None, poll_s: float = POLL_S, audit: Audit | None = None,
                 adopt_after: Seen | None = None) -> None:
        self._config = config
        self._store = store
        self._path = path
        self._overrides = dict(overrides or {})
        self._audit = audit
        self._adopt_after = adopt_after
        self._poller = Poller(self.catch_up, interval_s=poll_s,
                              failing="cannot read the configuration version from the session store")
        self._lock = asyncio.Lock()
        self._seen = Seen()  # the store version this worker adopted or refused last

    def _text(self) -> str:
        """The file, read once; ``ConfigError`` when it is missing, not UTF-8, or empty. No file: the built-in
        defaults and the environment."""
        if self._path is None:
            return ""
        text = read_config(self._path)
        if not parse_config(text, self._path):
            raise ConfigError(f"config file {self._path} is empty: a reload loads the whole configuration, and an "
                              "empty file would reset every section (its keys included); the running one stays")
        return text

    def _settings(self, text: str) -> Settings:
        return settings_from(parse_config(text, self._path or "(none)"), self._path, **self._overrides)

    async def reload(self) -> Reloaded:
        """Read, validate, bump the store-wide version, swap. ``ConfigError``: nothing changed."""
        async with self._lock:
            try:
                text = self._text()
                settings = self._settings(text)
                removed = check_keys_kept(self._config.latest().settings.server, settings.server)
                snapshot, not_reloadable = self._config.prepare(settings, 0)
            except ConfigError as exc:
                log.error("configuration reload refused, the running configuration stays (bad key: %s): %s",
                          exc.param or "?", exc)
                raise
            try:
                self._seen = await bump_version(self._store, text)
            except BaseException:
                await self._config.discard(snapshot)
                raise
            version = self._seen.version
            await self._config.swap(dataclasses.replace(snapshot, version=version))
        if removed:
            log.warning("configuration version %d removes keys: %s", version, "; ".join(removed))
        if not_reloadable:
            log.warning("configuration version %d loaded; these changes need a restart: %s", version,
                        "; ".join(f"{p} ({restart_reason(p)})" for p in not_reloadable))
        else:
            log.info("configuration version %d loaded", version)
        return Reloaded(version, not_reloadable, removed)

    async def signalled(self) -> None:
        """A reload asked by ``SIGHUP``: answered in the log and the admin audit (who: ``SIGHUP``); never raises."""
        status, detail = 200, None
        try:
            done = await self.reload()
            detail = done.audit_detail()
        except ConfigError as exc:  # logged by reload
            status, detail = 400, refusal_detail(exc)
        except Exception:
            log.exception("configuration reload failed, the running configuration stays")
            status, detail = 500, "failed: see the log"
        if self._audit is not None:
            try:
                await asyncio.to_thread(self._audit.record, who="SIGHUP", action="config.reload", target=None,
                                        status=status, detail=detail)
            except Exception:
                log.exception("the reload by SIGHUP (status %d) could not be audited", status)

    async def catch_up(self) -> None:
        """Adopt a version another worker or replica loaded, if there is one this worker has not seen: the text
        that worker validated, never this worker's own copy of the file."""
        record = await self._store.get(VERSION_SESSION, VERSION_KEY)
        if not isinstance(record, Mapping) or Seen.of(record) == self._seen:
            return
        seen = Seen.of(record)
        version = seen.version
        async with self._lock:
            if seen == self._seen:
                return
            self._seen = seen
            try:
                text = record.get("text")
                if not isinstance(text, str):  # written by a gateway that stored the digest only
                    text = read_config(self._path) if self._path is not None else ""
                snapshot, _ = self._config.prepare(self._settings(text), version)
            except ConfigError as exc:
                log.error("configuration version %d does not load here, the running configuration stays (bad key: "
                          "%s): %s", version, exc.param or "?", exc)
                return
            await self._config.swap(snapshot)
        log.info("configuration version %d adopted", version)

    async def start(self) -> None:
        self._seen = await stored_version(self._store) if self._adopt_after is None else self._adopt_after
        self._config.renumber(self._seen.version)
        self._poller.start()

    async def aclose(self) -> None:
        await self._poller.aclose()


def on_sighup(reloader: Reloader) -> None:
    """SIGHUP reloads (one-worker ``ecgw serve``, or a worker its supervisor passed the signal to)."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    def start() -> None:
        task = loop.create_task(reloader.signalled())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop.add_signal_handler(signal.SIGHUP, start)


def pass_sighup(workers: Sequence[int | None]) -> None:
    """SIGHUP to ``ecgw serve`` with several workers, in the supervisor: passed to the first of ``workers`` (those
    that have finished starting) still alive, which
    reloads (validated whole, audited) and bumps the store-wide version every other worker adopts at its next poll.
    The supervisor reads no file, so nothing a file holds can end its loop; this never raises."""
    for pid in workers:
        if pid is None:
            continue
        try:
            os.kill(pid, signal.SIGHUP)
        except OSError:
            continue
        log.info("SIGHUP passed to worker %d: it reloads the configuration, and the others follow within %g s",
                 pid, POLL_S)
        return
    log.error("SIGHUP: no worker is serving yet to reload the configuration; send it again once one is")


def reload_endpoint(reloader: Reloader) -> Any:
    async def reload(request: Request) -> Response:
        try:
            done = await reloader.reload()
        except ConfigError as exc:
            request.state.audit_detail = refusal_detail(exc)
            return error_response(400, f"The configuration was not reloaded (the running one stays): {exc}",
                                  "invalid_request_error", param=exc.param, code="invalid_config")
        except Exception:
            log.exception("configuration reload failed, the running configuration stays")
            request.state.audit_detail = "failed: see the log"
            return error_response(500, "The configuration was not reloaded (the running one stays): the gateway "
                                  "failed while building it; its log says why.", "internal_error",
                                  code="reload_failed")
        request.state.audit_detail = done.audit_detail()
        return JSONResponse(done.body())

    return reload
