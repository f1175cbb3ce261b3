"""The last check after a session's vault is erased (or expires) and begins again under the same id: what it
remembered of the old vault (its search list, the parts it searched) must neither hide the new vault's values nor
keep the erased ones. Found in review: the search list was keyed by the session id and the vault's size alone, so a
regrown vault's first values went unsearched and left raw (fail open)."""

from __future__ import annotations

import json

from gateway.state.sessions import MemorySessionStore
from privacy.factory import build_privacy_protector
from privacy.settings import PrivacySettings
from tests.privacy.helpers import protector

THREE = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content":
         "passport no.: E48213377; passport no.: K11223344; passport no.: X99887766"}]}
LABELLED = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": "passport no.: P55501234"}]}
BARE = {"model": "m", "messages": [{"role": "user", "content": "check P55501234 against the file"}]}


async def test_a_vault_begun_again_after_erasure_is_searched_whole() -> None:
    p = protector(database_url=None, layers={"ner": False})
    assert len((await p.scrub(THREE, session_id="a")).values) == 3
    await p.erase_session("a")
    await p.scrub(LABELLED, session_id="a")  # the new vault's first value: found under its label
    out = await p.scrub(BARE, session_id="a")  # then written bare: only the vault search finds it
    assert "P55501234" not in json.dumps(out.body), out.body


async def test_another_replica_that_never_saw_the_erasure_searches_the_new_vault() -> None:
    """Two replicas share the session store; the erasure reaches only one of them (the other keeps its caches)."""
    store = MemorySessionStore()
    first, second = (build_privacy_protector(PrivacySettings(layers={"ner": False}), database_url=None,
                                             sessions=store) for _ in range(2))
    await second.scrub(THREE, session_id="a")  # the second replica remembers a vault of three values
    await first.erase_session("a")
    await first.scrub(LABELLED, session_id="a")  # the vault begins again on the first replica
    out = await second.scrub(BARE, session_id="a")
    assert "P55501234" not in json.dumps(out.body), out.body


async def test_after_erasure_the_last_check_keeps_none_of_the_erased_values() -> None:
    p = protector(database_url=None, layers={"ner": False})
    await p.scrub({"model": "m", "messages": [{"role": "tool", "tool_call_id": "c",
                                              "content": "passport no.: E48213377"}]}, session_id="a")
    await p.scrub({"model": "m", "messages": [{"role": "system", "content": "notes " * 500 + "on file"}]},
                  session_id="a")  # a long part: it remembers which vault values it holds
    await p.scrub({"model": "m", "messages": [{"role": "user", "content": "E48213377 again"}]},
                  session_id="a")  # found by the vault search alone: a part's remembered hits hold it
    await p.erase_session("a")
    check = p._last_check._check  # type: ignore[union-attr]
    remembered = [v for _, _, known in check._vaults.values() for v in known]
    remembered += [v for part in check._parts.values() for v in part.held]
    remembered += [v for _, found in check._vault_seen.values() for _, v, _ in found]
    assert "E48213377" not in remembered, remembered
