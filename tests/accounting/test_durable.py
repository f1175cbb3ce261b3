"""The durable-writer core both writers stand on (``accounting.durable``): a spill is private (0600), claimed by
one worker only, and given back whole when it cannot be written; the metering writer keeps those guarantees."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from sqlalchemy import text

from accounting.database import StoreUnavailable
from accounting.durable import SpillFile
from accounting.store import UsageStore
from tests.accounting.rows import call
from tests.accounting.test_writer import meter_for


def test_a_spill_is_claimed_by_one_worker_and_given_back_whole(tmp_path: Path) -> None:
    spill = SpillFile(tmp_path / "spill.jsonl")
    assert spill.append([{"n": 1}, {"n": 2, "text": "Zoë"}]) == 2
    claim = spill.claim()
    assert claim is not None and [r["n"] for r in claim.records] == [1, 2]
    assert spill.claim() is None  # renamed: a second worker finds nothing to replay
    spill.append([{"n": 3}])  # another worker spilled meanwhile
    spill.give_back(claim)
    again = spill.claim()
    assert again is not None and sorted(r["n"] for r in again.records) == [1, 2, 3]
    again.done()
    assert list(tmp_path.iterdir()) == []


async def test_the_metering_spill_is_private_and_a_refused_replay_keeps_it(tmp_path: Path) -> None:
    url, path = f"sqlite:///{tmp_path / 'usage.sqlite3'}", tmp_path / "spill.jsonl"
    old = os.umask(0o022)  # the usual default, under which a plain open() makes a 0644 file
    try:
        meter = meter_for(url, spill=path)
        await meter.start()
        store = UsageStore.from_url(url)
        with store.engine.begin() as conn:
            conn.execute(text("ALTER TABLE ecgw_usage_records RENAME TO away"))
        for n in range(5):
            meter.record(call(n))
        await meter.aclose()
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(path.read_text().splitlines()) == 5
    with pytest.raises(StoreUnavailable, match="5 records saved"):
        await meter_for(url, spill=path).start()  # the table is still away: the start fails, the spill stays
    assert len(path.read_text().splitlines()) == 5 and not list(tmp_path.glob("*.replay"))
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE away RENAME TO ecgw_usage_records"))
    store.dispose()
    again = meter_for(url, spill=path)
    await again.start()
    await again.aclose()
    assert UsageStore.from_url(url).count() == 5 and not path.exists()


_KILLED_WRITER = """
import logging, os, signal, sys
from pathlib import Path
from accounting.durable import Journal
journal = Journal(Path(sys.argv[1]), log=logging.getLogger("t"))
journal.append([{"n": 1}, {"n": 2}])
mark = journal.mark()
journal.append([{"n": 3}])
journal.written(mark)  # 1 and 2 are stored; 3 is not
journal.append([{"n": 4}])
print(journal.path, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_journal_outlives_its_process_killed_and_only_its_unwritten_records_are_claimed(tmp_path: Path) -> None:
    import logging
    import subprocess
    import sys

    from accounting.durable import Journal

    base = tmp_path / "spill.jsonl.journal"
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(base)], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert killed.returncode == -9, killed.stderr
    path = Path(killed.stdout.strip())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    mine = Journal(base, log=logging.getLogger("t"))
    mine.append([{"n": "mine"}])  # this process's own journal is never an orphan
    claims = mine.orphans()
    assert [[r["n"] for r in c.records] for c in claims] == [[3, 4]] and claims[0].path == path
    assert Journal(base, log=logging.getLogger("t")).orphans() == []  # held by this claim: nobody else takes it
    claims[0].done()
    assert not path.exists()
    mark = mine.mark()
    mine.written(mark)  # nothing came since: emptied
    assert mine.path.stat().st_size == 0
    mine.close()
    assert list(tmp_path.iterdir()) == []


def test_a_journal_past_its_size_keeps_only_its_unwritten_tail(tmp_path: Path) -> None:
    import logging

    from accounting.durable import Journal

    journal = Journal(tmp_path / "spill.jsonl.journal", log=logging.getLogger("t"), compact_bytes=16)
    journal.append([{"n": 1}, {"n": 2}])
    written = journal.mark()
    journal.append([{"n": 3}])
    stale = journal.mark()
    journal.written(written)  # 1 and 2 stored while 3 came: past 16 bytes, the file is rewritten with 3 alone
    assert journal.path.read_text().splitlines() == ['{"n":3}']
    journal.written(stale)  # a mark of the file before it was rewritten says nothing of this one
    assert journal.path.read_text().splitlines() == ['{"n":3}']
    journal.append([{"n": 4}])
    journal.written(journal.mark())
    assert journal.path.stat().st_size == 0
    journal.close()


def test_a_journal_built_before_a_fork_is_each_process_own(tmp_path: Path) -> None:
    """``ecgw serve`` builds the metering writer once and forks its workers: each worker journals to a file of its
    own (two sharing one would each take the other's file for an orphan's)."""
    import logging

    from accounting.durable import Journal

    journal = Journal(tmp_path / "spill.jsonl.journal", log=logging.getLogger("t"))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            journal.append([{"n": os.getpid()}])
            code = 0 if journal.path.name.endswith(f".{os.getpid()}") else 2
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    journal.append([{"n": 0}])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"spill.jsonl.journal.{pid}", f"spill.jsonl.journal.{os.getpid()}"])
    journal.close()
