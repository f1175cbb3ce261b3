"""Shared builders for privacy tests."""

from __future__ import annotations

from typing import Any

from gateway.state.sessions import MemorySessionStore
from privacy.detect import UnitsDocument
from privacy.factory import build_privacy_protector
from privacy.protector import PrivacyProtector
from privacy.settings import PrivacySettings

UNITS = {"items": [
    {"entity_id": "cust-7", "name": "customer", "sensitive_fields": [
        {"field": "phone", "value": "415-555-0132", "dimension": "contact", "weight": 2},
        {"field": "email", "value": "Maria.Gonzalez@acme-mail.com", "dimension": "contact", "weight": 1},
        {"field": "full_name", "value": "Maria Gonzalez", "dimension": "identity", "weight": 3},
        {"field": "id_card", "value": "11010519491231002X", "dimension": "identity", "weight": 3},
    ]},
    {"entity_id": "emp-2", "name": "员工", "sensitive_fields": [
        {"field": "姓名", "value": "张伟", "dimension": "identity", "weight": 2},
        {"field": "salary", "value": "38500", "dimension": "financial", "weight": 1},
    ]},
]}


def units_document() -> UnitsDocument:
    return UnitsDocument.model_validate(UNITS)


def protector(database_url: str | None = "sqlite://", **settings: Any) -> PrivacyProtector:
    return build_privacy_protector(PrivacySettings(**settings), database_url=database_url,
                                   sessions=MemorySessionStore())


def strings_of(value: Any) -> str:
    """Every string in a JSON value, joined: what to search for leaks."""
    import json

    return json.dumps(value, ensure_ascii=False)
