"""Reloading the configuration without a restart: ``POST /admin/v1/reload`` (an admin key) or ``SIGHUP`` to
``ecgw serve``.

A reload re-reads the config file (the environment and the command line's overrides over it, as at start),
validates it whole (settings, then every part of a snapshot: policies and knobs, experiments, keys, the parts
others register) and only then swaps it in; a bad file keeps the running configuration, and the answer (400 in
OpenAI's shape, the bad key in ``param``) and the log name the key.

How every worker and replica converges: the version is store-wide. A reload increments
``{"version", "digest"}`` in the session store (the SQLite file every worker of a machine shares, or the Redis every
replica shares) with the store's atomic ``update``; every worker polls that record every ``poll_s`` seconds, and on
a newer version re-reads its own config file and swaps. The digest (SHA-256 of the file the reloading worker read)
makes a replica whose copy of the file has not caught up yet (a ConfigMap still propagating) wait and retry rather
than adopt an older file under the new version. The memory store is one worker's: there the version is local.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.errors import error_response
from gateway.polling import Poller
from gateway.settings import ConfigError, Settings, load_settings
from gateway.settings_reference import restart_reason
from gateway.snapshot import Configuration
from privacy.session_store import SessionStore

log = logging.getLogger("ecgw")

VERSION_SESSION, VERSION_KEY = "\0ecgw-config", "version"
POLL_S = 2.0


@dataclass(frozen=True)
class Reloaded:
    version: int
    not_reloadable: list[str]

    def body(self) -> dict[str, Any]:
        """``not_reloadable``: the changed paths that keep their running value; ``why``: each one's reason."""
        return {"reloaded": True, "version": self.version, "not_reloadable": self.not_reloadable,
                "why": {path: restart_reason(path) for path in self.not_reloadable}}


def file_digest(path: str | None) -> str:
    if path is None:
        return ""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _next(digest: str) -> Any:
    def bump(current: Any | None) -> Any:
        version = int(current["version"]) if isinstance(current, Mapping) else 0
        return {"version": version + 1, "digest": digest}

    return bump


async def bump_version(store: SessionStore, digest: str) -> int:
    """The next store-wide version, taken atomically (two reloads at once get two versions)."""
    record = await store.update(VERSION_SESSION, VERSION_KEY, _next(digest))
    return int(record["version"])


class Reloader:
    """One worker's reloads: on request, on its signal, and when another worker or replica reloaded."""

    def __init__(self, config: Configuration, store: SessionStore, *, path: str | None,
                 overrides: Mapping[str, Any] | None = None, poll_s: float = POLL_S) -> None:
        self._config = config
        self._store = store
        self._path = path
        self._overrides = dict(overrides or {})
        self._poller = Poller(self.catch_up, interval_s=poll_s,
                              failing="cannot read the configuration version from the session store")
        self._lock = asyncio.Lock()
        self._seen = 0  # the newest store version this worker adopted or refused

    def _read(self) -> Settings:
        return load_settings(self._path, **self._overrides)

    async def reload(self) -> Reloaded:
        """Read, validate, bump the store-wide version, swap. ``ConfigError``: nothing changed."""
        async with self._lock:
            digest = file_digest(self._path)
            try:
                snapshot, not_reloadable = self._config.prepare(self._read(), 0)
            except ConfigError as exc:
                log.error("configuration reload refused, the running configuration stays (bad key: %s): %s",
                          exc.param or "?", exc)
                raise
            try:
                version = await bump_version(self._store, digest)
            except BaseException:
                await self._config.discard(snapshot)
                raise
            await self._config.swap(dataclasses.replace(snapshot, version=version))
            self._seen = version
        if not_reloadable:
            log.warning("configuration version %d loaded; these changes need a restart: %s", version,
                        "; ".join(f"{p} ({restart_reason(p)})" for p in not_reloadable))
        else:
            log.info("configuration version %d loaded", version)
        return Reloaded(version, not_reloadable)

    async def catch_up(self) -> None:
        """Adopt a version another worker or replica loaded, if there is one this worker has not seen."""
        record = await self._store.get(VERSION_SESSION, VERSION_KEY)
        if not isinstance(record, Mapping) or int(record["version"]) <= self._seen:
            return
        version, digest = int(record["version"]), str(record.get("digest", ""))
        async with self._lock:
            if version <= self._seen:
                return
            if digest and file_digest(self._path) != digest:
                log.warning("configuration version %d was loaded from a file that differs from %s here; waiting "
                            "for this copy to match", version, self._path)
                return  # tried again at the next poll
            self._seen = version
            try:
                snapshot, _ = self._config.prepare(self._read(), version)
            except ConfigError as exc:
                log.error("configuration version %d does not load here, the running configuration stays (bad key: "
                          "%s): %s", version, exc.param or "?", exc)
                return
            await self._config.swap(snapshot)
        log.info("configuration version %d adopted", version)

    async def start(self) -> None:
        record = await self._store.get(VERSION_SESSION, VERSION_KEY)
        self._seen = int(record["version"]) if isinstance(record, Mapping) else 0
        self._config.renumber(self._seen)
        self._poller.start()

    async def aclose(self) -> None:
        await self._poller.aclose()


def on_sighup(reloader: Reloader) -> None:
    """SIGHUP reloads (one-worker ``ecgw serve``: the running loop is this process's only one)."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def run() -> None:
        with contextlib.suppress(ConfigError):  # logged, and the running configuration stays
            await reloader.reload()

    def start() -> None:
        task = loop.create_task(run())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop.add_signal_handler(signal.SIGHUP, start)


def reload_endpoint(reloader: Reloader) -> Any:
    async def reload(request: Request) -> Response:
        try:
            done = await reloader.reload()
        except ConfigError as exc:
            return error_response(400, f"The configuration was not reloaded (the running one stays): {exc}",
                                  "invalid_request_error", param=exc.param, code="invalid_config")
        return JSONResponse(done.body())

    return reload
