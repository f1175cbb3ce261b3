"""A SQLite session store built before ``ecgw serve`` forks its workers: each worker opens its own connection (SQLite
must not be used across a fork: a connection's lock bookkeeping would be copied without the locks)."""

from __future__ import annotations

import asyncio
import os

from gateway.state.sessions import SQLiteSessionStore


def test_a_worker_forked_after_the_store_was_built_queries_through_a_connection_of_its_own(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.sqlite3"))  # built in the parent, unused there (as serve does)
    at_fork = vars(store).get("_db") or vars(store).get("_conn")  # whatever connection the parent holds
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            asyncio.run(store.set("s2", "k", {"from": "worker"}))
            own = store._db  # noqa: SLF001
            code = 0 if own is not at_fork else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # 2: the worker used the parent's connection
    assert asyncio.run(store.get("s2", "k")) == {"from": "worker"}
    asyncio.run(store.aclose())
