"""``ecgw serve`` with several workers: the app is built and its detectors' models loaded once, in this process;
then it forks the workers, which share those pages (copy-on-write, and ``gc.freeze()`` keeps the cyclic collector
from writing to them), each running its own event loop and uvicorn server on the one listening socket.

The parent serves nothing: it restarts a worker that dies, passes SIGTERM and SIGINT to every worker (uvicorn's
graceful drain: no new connections, requests in flight finish) and waits for them, and hands SIGHUP to one worker
that has finished starting (``on_hup``: the reload, which the others follow through the session store). No thread
may run at the fork (a lock another thread held would stay locked in the child), so the parent starts none."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from accounting.errors import EcgwError
from gateway.launch.supervisor import die_with_parent

log = logging.getLogger("ecgw.launch")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass
class _Worker:
    pid: int
    ready_fd: int  # the worker writes one byte here once it serves
    started_at: float
    ready: bool = False


@dataclass
class _Backoff:
    """A worker that dies within ``min_uptime_s`` of its start is restarted after a delay doubling up to
    ``max_s``; one that lasted is restarted at once."""

    min_uptime_s: float = 10.0
    max_s: float = 30.0
    current: float = field(default=0.0)

    def after(self, lasted_s: float) -> float:
        self.current = 0.0 if lasted_s >= self.min_uptime_s else min(max(self.current * 2, 0.5), self.max_s)
        return self.current


class ThreadsRunning(EcgwError, RuntimeError):
    """A thread runs in the process that is about to fork: its locks could stay held in every worker."""


def frozen_heap() -> None:
    """What start-up built moved out of the cyclic collector's sight before the fork, so that no worker's collection
    writes to (and so copies) the pages it shares with the others. Never undone."""
    gc.collect()
    gc.freeze()


class Prefork:
    """``serve(ready_fd)`` runs one worker's server (in the child, after the fork) and returns its exit code;
    ``on_hup(pids)``: SIGHUP, given the workers that have finished starting; ``tolerated``: the names of threads
    that may run at a fork (a launched edge's watcher, which takes no lock a worker needs)."""

    def __init__(self, serve: Callable[[int], int], *, workers: int, on_hup: Callable[[list[int]], None],
                 tolerated: Collection[str] = (), backoff: _Backoff | None = None) -> None:
        self._serve = serve
        self._count = workers
        self._on_hup = on_hup
        self._tolerated = frozenset(tolerated)
        self._backoff = backoff or _Backoff()
        self._workers: dict[int, _Worker] = {}
        self._stopping = False
        self._hups = 0
        self._stops = 0
        self._wake_r, self._wake_w = -1, -1
        self.restarts = 0

    def run(self) -> int:
        """Fork the workers and supervise them until SIGTERM or SIGINT, then until every worker has drained."""
        running = [t.name for t in threading.enumerate()
                   if t is not threading.main_thread() and t.name not in self._tolerated]
        if running:
            raise ThreadsRunning("threads run before the fork: " + ", ".join(running))
        frozen_heap()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        previous = {sig: signal.signal(sig, self._signalled) for sig in (*_STOP_SIGNALS, signal.SIGHUP, signal.SIGCHLD)}
        wakeup = signal.set_wakeup_fd(self._wake_w)
        try:
            for _ in range(self._count):
                self._spawn()
            self._supervise()
        finally:
            signal.set_wakeup_fd(wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.close(self._wake_r)
            os.close(self._wake_w)
        return 0

    def _signalled(self, sig: int, frame: Any) -> None:
        if sig in _STOP_SIGNALS:
            self._stops += 1
        elif sig == signal.SIGHUP:
            self._hups += 1
        # SIGCHLD: only wakes the loop (the wake-up fd), which reaps

    def _spawn(self) -> None:
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            os.close(ready_r)
            code = 1
            try:
                self._in_child()
                code = self._serve(ready_w)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                log.exception("worker %d failed", os.getpid())
            finally:
                logging.shutdown()  # the log writer's lines, before the process ends without the parent's atexit
                os._exit(code)
        os.close(ready_w)
        os.set_blocking(ready_r, False)
        self._workers[pid] = _Worker(pid, ready_r, time.monotonic())
        log.info("worker %d started", pid)

    def _in_child(self) -> None:
        """The parent's signal handling undone; a process group of its own (a terminal's Ctrl-C reaches the parent
        alone, which asks each worker to drain once); ended by the kernel if the parent is killed."""
        signal.set_wakeup_fd(-1)
        os.close(self._wake_r)
        os.close(self._wake_w)
        for worker in self._workers.values():
            os.close(worker.ready_fd)
        self._workers.clear()
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until it serves: then the app takes it (gateway.live.reload)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        die_with_parent()

    def _supervise(self) -> None:
        stops_seen, hups_seen = 0, 0
        respawn_at: list[float] = []
        while self._workers or (respawn_at and not self._stopping):
            timeout = max(0.0, min(respawn_at) - time.monotonic()) if respawn_at else 1.0
            fds = [self._wake_r, *(w.ready_fd for w in self._workers.values() if not w.ready)]
            with contextlib.suppress(InterruptedError):
                readable, _, _ = select.select(fds, [], [], timeout)
                for fd in readable:
                    self._drain(fd)
            if self._stops > stops_seen:
                stops_seen = self._stops
                self._stop_all(force=self._stopping)
                self._stopping = True
                respawn_at.clear()
            if self._hups > hups_seen:
                hups_seen = self._hups
                self._on_hup([w.pid for w in self._workers.values() if w.ready])
            for lasted in self._reap():
                if not self._stopping:
                    delay = self._backoff.after(lasted)
                    respawn_at.append(time.monotonic() + delay)
            now = time.monotonic()
            due = [at for at in respawn_at if at <= now]
            for at in due:
                respawn_at.remove(at)
                self.restarts += 1
                self._spawn()

    def _drain(self, fd: int) -> None:
        if fd == self._wake_r:
            with contextlib.suppress(BlockingIOError):
                os.read(fd, 512)
            return
        for worker in self._workers.values():
            if worker.ready_fd == fd:
                with contextlib.suppress(BlockingIOError):
                    worker.ready = bool(os.read(fd, 1))

    def _reap(self) -> list[float]:
        """The workers that ended: how long each had run."""
        ended = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            worker = self._workers.pop(pid, None)
            if worker is None:
                continue
            os.close(worker.ready_fd)
            lasted = time.monotonic() - worker.started_at
            level = logging.INFO if self._stopping else logging.WARNING
            log.log(level, "worker %d exited (%s) after %.0f s%s", pid, _described(status), lasted,
                    "" if self._stopping else "; starting another")
            ended.append(lasted)
        return ended

    def _stop_all(self, *, force: bool) -> None:
        """SIGTERM to every worker: uvicorn drains (a second stop signal: SIGINT, which it takes as 'now')."""
        sig = signal.SIGINT if force else signal.SIGTERM
        for pid in list(self._workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        log.info("%s passed to %d workers: %s", signal.Signals(sig).name, len(self._workers),
                 "they stop now" if force else "each drains its requests, then stops")


def _described(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"code {os.waitstatus_to_exitcode(status)}"


def worker_server(app: Any, sock: socket.socket, ready_fd: int, *, options: dict[str, Any]) -> int:
    """One worker: uvicorn's server with ``app`` on the parent's listening socket; one byte to ``ready_fd`` once
    it serves (the app's start-up done)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if not self.should_exit:
                os.write(ready_fd, b"1")

    config = uvicorn.Config(app, **options)
    server = Server(config)
    # after a drain uvicorn raises the signal again; the process ends here instead, by its own return
    for sig in _STOP_SIGNALS:
        signal.signal(sig, lambda *_: None)
    server.run(sockets=[sock])
    os.close(ready_fd)
    return 0 if server.started else 3


def listening_socket(host: str, port: int) -> socket.socket:
    """The one socket every worker accepts on (uvicorn's own binding: address reuse, IPv6 when the host is one)."""
    import uvicorn

    return uvicorn.Config("", host=host, port=port).bind_socket()  # the app is not read for this
