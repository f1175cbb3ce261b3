"""``ecgw audit rotate-key``: the next generation of the signing key, derived from the secrets key; a gateway's
store signs its next checkpoint (and its receipts) with it, and every checkpoint and receipt the old key signed
still verifies — with the derived keys, or with the published PEMs of every generation."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from sqlalchemy import text

from accounting.database import make_engine
from gateway.cli.main import main
from gateway.state.keys import Keys
from privacy.audit import AuditStore, AuditWriter, ReceiptIssuer, SigningKeys, body_bytes
from privacy.audit.receipts import parse


def _ecgw(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _receipt(store: AuditStore) -> str:
    assert store.anchor is not None
    writer = AuditWriter(store)
    token = ReceiptIssuer(store.anchor, writer).issue(
        call_id="c", request_id="r", session_id="s", target="primary", body=body_bytes({"messages": []}),
        placeholders={}, raw_units=[], verdict="clean")
    writer.close()
    return token


def test_a_rotated_key_signs_from_the_next_checkpoint_and_the_old_one_still_verifies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    master = secrets.token_bytes(32)
    (tmp_path / "ecgw.key").write_text(master.hex() + "\n")
    (tmp_path / "ecgw.key").chmod(0o600)
    database = f"sqlite:///{tmp_path / 'audit.sqlite3'}"
    config = tmp_path / "config.yaml"
    config.write_text(f"database_url: {database}\nsecrets:\n  key_file: {tmp_path / 'ecgw.key'}\n")
    keys = SigningKeys(Keys(master, "test").derive)
    store = AuditStore(make_engine(database), keys=keys)  # a running gateway's store, started before the rotation
    store.apply({"kind": "units", "session_id": "s1", "units": []})
    store.apply({"kind": "checkpoint"})
    old_receipt = _receipt(store)

    code, new_pem, said = _ecgw(capsys, "audit", "rotate-key", "--config", str(config))
    assert code == 0, said
    assert "generation 2" in said and new_pem == keys.signer(2).public_pem() != keys.signer(1).public_pem()

    store.apply({"kind": "units", "session_id": "s2", "units": []})
    store.apply({"kind": "checkpoint"})  # the running store picks the new generation up here
    with store.engine.connect() as conn:
        signed_by = [r[0] for r in conn.execute(text("SELECT key_id FROM privacy_checkpoint ORDER BY seq"))]
    assert signed_by == [keys.signer(1).key_id, keys.signer(2).key_id, keys.signer(2).key_id]
    assert parse(_receipt(store))[0]["kid"] == keys.signer(2).key_id
    assert parse(old_receipt)[0]["kid"] == keys.signer(1).key_id

    code, out, _ = _ecgw(capsys, "audit", "verify", "--config", str(config))
    assert code == 0 and "intact" in out, out
    code, out, _ = _ecgw(capsys, "audit", "verify-receipt", old_receipt, "--config", str(config))
    assert code == 0 and out.startswith("receipt valid"), out

    (tmp_path / "new.pem").write_text(new_pem)  # only the new key: the old checkpoints are not its
    code, out, _ = _ecgw(capsys, "audit", "verify", "--config", str(config), "--public-key", str(tmp_path / "new.pem"))
    assert code == 1 and f"signed by key {keys.signer(1).key_id}" in out, out
    code, every, _ = _ecgw(capsys, "audit", "public-key", "--all", "--config", str(config))
    assert every.count("BEGIN PUBLIC KEY") == 2 and "# generation 2" in every
    (tmp_path / "all.pem").write_text(every)
    code, out, _ = _ecgw(capsys, "audit", "verify", "--config", str(config), "--public-key", str(tmp_path / "all.pem"))
    assert code == 0, out
    code, current, _ = _ecgw(capsys, "audit", "public-key", "--config", str(config))
    assert current == new_pem
