"""The data classes and the one table of which finding type belongs to which (``privacy.class_of`` moves a type).

A class groups types that a deployment treats alike when it decides where data may go: ``secrets`` (credentials,
keys, PINs), ``identifiers`` (government, financial and account numbers), ``contact`` (how to reach someone),
``online`` (links, paths, handles, addresses on a network), ``people`` (who someone is), ``organisations_places``
(where and with whom), ``special`` (the special categories of data-protection law: health, ethnicity and
nationality, religion, politics, sexual orientation, biometrics), ``listed`` (units registered for the session
whose dimension names no other class) and ``other``. A type this table does not name is ``secrets`` when its name
says it is a credential (``is_credential_type``), else ``other``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from privacy.classes.names import DataClass
from privacy.detect import is_credential_type


def _each(data_class: DataClass, *types: str) -> dict[str, DataClass]:
    return dict.fromkeys(types, data_class)


# Every type a detector emits today (privacy.detect: secrets, patterns, identifiers, labels, people, NER, the edge
# layer) and those the real-prompts detectors add. Secret rules' own types (GITHUB_TOKEN, …) are credentials by name.
DEFAULT_CLASS_OF: Mapping[str, DataClass] = MappingProxyType({
    **_each("secrets", "PASSWORD", "DB_PASSWORD", "API_TOKEN", "API_KEY", "PRIVATE_KEY", "JWT", "BASIC_AUTH",
            "BEARER_TOKEN", "CARD_SECURITY_CODE", "ACCESS_CODE"),
    **_each("identifiers", "ID_NUMBER", "NATIONAL_ID", "US_SSN", "CN_RESIDENT_ID", "PASSPORT", "DRIVERS_LICENSE",
            "MEDICAL_RECORD", "TFN", "CREDIT_CARD", "IBAN_CODE", "BANK_ACCOUNT", "ACCOUNT_NUMBER", "ROUTING_NUMBER",
            "ALIPAY_ACCOUNT"),
    **_each("contact", "EMAIL_ADDRESS", "PHONE_NUMBER"),
    **_each("online", "URL", "FILE_PATH", "USERNAME", "APP_ID", "IP_ADDRESS"),
    **_each("people", "PERSON", "DATE_OF_BIRTH"),
    **_each("organisations_places", "ORGANIZATION", "LOCATION", "STREET_ADDRESS"),
    **_each("special", "HEALTH", "NRP", "RELIGION", "POLITICAL_OPINION", "SEXUAL_ORIENTATION", "BIOMETRIC"),
    **_each("other", "AMOUNT", "DATE_TIME"),
})

# A listed unit's dimension (``sensitive_items.json``) → its class; a dimension not here leaves the unit ``listed``.
DIMENSION_CLASS: Mapping[str, DataClass] = MappingProxyType({
    **_each("secrets", "credential", "credentials", "secret", "secrets"),
    **_each("identifiers", "government_id", "financial", "finance", "account", "accounts", "identifier",
            "identifiers", "id"),
    **_each("contact", "contact"),
    **_each("online", "network", "online"),
    **_each("people", "identity", "person", "people", "name"),
    **_each("organisations_places", "location", "address", "organisation", "organization", "place"),
    **_each("special", "health", "medical", "religion", "politics", "ethnicity", "biometric", "sexual_orientation"),
})


def default_class(type_: str, *, listed: bool, dimension: str | None) -> DataClass:
    """The class of a finding before any ``privacy.class_of``: a listed unit's (``listed``) by its dimension (else
    ``listed``), any other by its type."""
    if listed:
        return DIMENSION_CLASS.get((dimension or "").strip().lower(), "listed")
    found = DEFAULT_CLASS_OF.get(type_)
    if found is not None:
        return found
    return "secrets" if is_credential_type(type_) else "other"
