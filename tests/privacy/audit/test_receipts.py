"""Egress receipts: signed (JWS, EdDSA) by the checkpoints' key, chained as audit records on real SQLite and
PostgreSQL, and checked by ``ecgw audit verify-receipt`` — a receipt with an altered claim, or signed by another
key, is rejected, and so is a body that is not the one it covers."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from privacy.audit import (
    AuditStore,
    AuditWriter,
    ChainSigner,
    ReceiptInvalid,
    ReceiptIssuer,
    body_bytes,
    placeholder_counts,
    verify_receipt_token,
    verify_trail,
)
from privacy.audit.receipts import parse
from tests.privacy.audit_engines import engine

__all__ = ["engine"]

SEED = bytes(range(32))
BODY = {"messages": [{"role": "user", "content": "mail [EMAIL_ADDRESS_001] and [EMAIL_ADDRESS_002], call [PHONE_001]"}],
        "temperature": 0.2}


def _issue(store: AuditStore, **overrides: object) -> str:
    writer = AuditWriter(store)
    assert store.anchor is not None
    fields: dict[str, object] = {
        "call_id": "c1", "request_id": "req-1", "session_id": "t.acme/s1", "target": "primary",
        "body": body_bytes(BODY), "raw_units": [], "verdict": "replaced", "tier": "trusted",
        "classes": {"contact": {"pseudonymised": 3, "raw": 0}},
        "placeholders": placeholder_counts(["[EMAIL_ADDRESS_001]", "[EMAIL_ADDRESS_002]", "[PHONE_001]"])}
    fields.update(overrides)
    token = ReceiptIssuer(store.anchor, writer).issue(**fields)  # type: ignore[arg-type]
    writer.close()
    return token


def _keys(signer: ChainSigner) -> dict[str, object]:
    return {signer.key_id: signer.public}


def _b64(value: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_a_receipt_is_signed_names_the_latest_checkpoint_and_is_chained(engine: Engine) -> None:
    signer = ChainSigner(SEED)
    store = AuditStore(engine, signer=signer)
    store.apply({"kind": "units", "session_id": "s1", "units": []})
    store.apply({"kind": "checkpoint"})
    token = _issue(store)
    claims = verify_receipt_token(token, _keys(signer))  # type: ignore[arg-type]
    with engine.connect() as conn:  # closed here: left to the collector, its open transaction held up the schema's drop
        point = conn.execute(text("SELECT hash FROM privacy_checkpoint")).scalar_one()
    assert claims == {"rid": "req-1", "call": "c1", "ts": claims["ts"], "target": "primary", "tier": "trusted",
                      "classes": {"contact": {"pseudonymised": 3, "raw": 0}},
                      "body_sha256": hashlib.sha256(body_bytes(BODY)).hexdigest(),
                      "placeholders": {"EMAIL_ADDRESS": 2, "PHONE": 1}, "raw_units": [], "verdict": "replaced",
                      "checkpoint": point}
    assert "@" not in token and "content" not in json.dumps(parse(token))  # counts and hashes, never content
    report = verify_trail(engine, signer.public)
    assert report.intact, report.breaks
    assert (report.entries, report.receipts) == (2, 1)

    with engine.begin() as conn:  # a receipt rewritten in the database: its chain entry no longer matches
        conn.execute(text("UPDATE privacy_receipt SET target = 'elsewhere'"))
    assert [b.what for b in verify_trail(engine, signer.public).breaks] == ["altered"]


def test_a_receipt_with_an_altered_claim_or_another_key_or_no_algorithm_is_rejected(tmp_path: Path) -> None:
    from accounting.database import make_engine

    signer = ChainSigner(SEED)
    token = _issue(AuditStore(make_engine(f"sqlite:///{tmp_path / 'a.sqlite3'}"), signer=signer))
    header, claims = parse(token)
    signature = token.rsplit(".", 1)[1]
    altered = f"{_b64(header)}.{_b64({**claims, 'target': 'cheap'})}.{signature}"
    with pytest.raises(ReceiptInvalid, match="does not verify"):
        verify_receipt_token(altered, _keys(signer))  # type: ignore[arg-type]
    other = ChainSigner(secrets.token_bytes(32))
    with pytest.raises(ReceiptInvalid, match="signed by key"):
        verify_receipt_token(token, _keys(other))  # type: ignore[arg-type]
    unsigned = f"{_b64({**header, 'alg': 'none'})}.{token.split('.')[1]}."
    with pytest.raises(ReceiptInvalid, match="not EdDSA"):
        verify_receipt_token(unsigned, _keys(signer))  # type: ignore[arg-type]
    with pytest.raises(ReceiptInvalid, match="not a receipt"):
        verify_receipt_token("hello", _keys(signer))  # type: ignore[arg-type]


def test_ecgw_audit_verify_receipt_checks_the_signature_and_the_body(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from accounting.database import make_engine
    from gateway.cli.main import main
    from gateway.state.keys import Keys

    master = secrets.token_bytes(32)
    (tmp_path / "ecgw.key").write_text(master.hex() + "\n")
    (tmp_path / "ecgw.key").chmod(0o600)
    config = tmp_path / "config.yaml"
    config.write_text(f"database_url: sqlite:///{tmp_path / 'a.sqlite3'}\n"
                      f"secrets:\n  key_file: {tmp_path / 'ecgw.key'}\n")
    signer = ChainSigner(Keys(master, "test").derive("audit-sign"))
    token = _issue(AuditStore(make_engine(f"sqlite:///{tmp_path / 'a.sqlite3'}"), signer=signer))
    (tmp_path / "body.json").write_bytes(body_bytes(BODY))
    (tmp_path / "other.json").write_bytes(body_bytes({**BODY, "temperature": 0.3}))
    (tmp_path / "key.pem").write_text(signer.public_pem())
    (tmp_path / "wrong.pem").write_text(ChainSigner(secrets.token_bytes(32)).public_pem())

    def ecgw(*args: str) -> tuple[int, str]:
        code = main(["audit", "verify-receipt", *args])
        out = capsys.readouterr()
        return code, out.out + out.err

    code, out = ecgw(token, "--body", str(tmp_path / "body.json"), "--config", str(config))
    assert code == 0 and "receipt valid: request req-1, target primary" in out and "the body matches" in out, out
    code, out = ecgw(f"{token}, {token}", "--public-key", str(tmp_path / "key.pem"))
    assert code == 0 and out.count("receipt valid") == 2, out
    code, out = ecgw(token, "--body", str(tmp_path / "other.json"), "--config", str(config))
    assert code == 1 and out.startswith("MISMATCH"), out
    code, out = ecgw(token, "--public-key", str(tmp_path / "wrong.pem"))
    assert code == 1 and out.startswith("FORGED the receipt is signed by key"), out
    head, claims, signature = token.split(".")
    forged = f"{head}.{_b64({**parse(token)[1], 'verdict': 'clean'})}.{signature}"
    (tmp_path / "forged.txt").write_text(forged)
    code, out = ecgw("@" + str(tmp_path / "forged.txt"), "--config", str(config))
    assert code == 1 and "does not verify" in out, out


def test_verify_names_a_receipt_chained_by_whoever_holds_the_database_but_not_signed_by_the_key(
        engine: Engine) -> None:
    """The holder of the database can chain a row of its own making, not sign it: every stored receipt's signature
    is checked."""
    signer, forger = ChainSigner(SEED), ChainSigner(secrets.token_bytes(32))
    store = AuditStore(engine, signer=signer)
    _issue(store)
    _issue(AuditStore(engine, signer=forger), call_id="c-forged")
    breaks = verify_trail(engine, signer.public).breaks
    assert [b.what for b in breaks] == ["receipt"] and "call c-forged" in breaks[0].where
    assert f"signed by key '{forger.key_id}'" in breaks[0].detail
