"""The gate for real services and data: a skip with its reason on a laptop, a failure naming the part in CI,
whatever truthy value CI has."""

from __future__ import annotations

import pytest

from tests.real_parts import acebench_data, in_ci, postgres_url


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("1", True), ("TRUE", True), ("yes", True),
                                                 ("", False), ("0", False), ("false", False)])
def test_ci_is_any_truthy_value(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_a_missing_service_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ECGW_TEST_POSTGRES_URL", raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="scripts/postgres.sh"):
        postgres_url()
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="in CI every real-parts test must run.*ECGW_TEST_POSTGRES_URL"):
        postgres_url()
    monkeypatch.setenv("ECGW_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    assert postgres_url() == "postgresql://postgres@127.0.0.1:5432/postgres"


def test_missing_benchmark_data_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("ECGW_ACEBENCH_DIR", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="ECGW_ACEBENCH_DIR"):
        acebench_data()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="AceBench data"):
        acebench_data()
