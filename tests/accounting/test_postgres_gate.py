"""The PostgreSQL tests skip loudly on a laptop without the server, but fail under CI."""

from __future__ import annotations

import pytest

from tests.accounting.conftest import POSTGRES_ENV, postgres_server_url


def test_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POSTGRES_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="scripts/postgres.sh"):
        postgres_server_url()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI"):
        postgres_server_url()
    monkeypatch.setenv(POSTGRES_ENV, "postgresql://postgres@127.0.0.1:5432/postgres")
    assert postgres_server_url() == "postgresql://postgres@127.0.0.1:5432/postgres"
