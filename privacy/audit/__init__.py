"""The audit: per cloud call, what was found, where and what was done (keyed hashes, never values), and what left.

``tables`` holds the tables, ``store`` the store, ``writer`` the durable background writer, ``migrations`` the schema's
steps, ``exposure`` the egress scan of what was sent, ``session_report`` and ``dashboard`` the reads (a session's exposure,
the dashboard's), ``inbound`` what cloud answers carried that no request did, ``audited`` the audit side shared by the protector and the pass-through, and ``locations`` the
keyless paths a finding is recorded under, ``sets`` the finding sets a session's repeated findings are written once
as (and ``all_findings``, what every reader counts); ``chain`` the tamper-evident trail over every record and its signed
checkpoints, ``verify`` its walk, ``receipts`` the signed egress receipts a client keeps. Code outside this folder imports the names below from here.
"""

from privacy.audit.audited import AuditedUnits
from privacy.audit.chain import Anchor, ChainSigner, SigningKeys, key_id, load_public_pem, load_public_pems, public_pem
from privacy.audit.dashboard import cloud_bodies, overview
from privacy.audit.exposure import ExposureRecorder, units_left_raw
from privacy.audit.inbound import inbound_counts, inbound_record
from privacy.audit.locations import safe_location
from privacy.audit.receipts import HEADER as RECEIPT_HEADER
from privacy.audit.receipts import ReceiptInvalid, ReceiptIssuer, body_bytes, placeholder_counts, request_receipts
from privacy.audit.receipts import verify as verify_receipt_token
from privacy.audit.session_report import (
    benchmark_export,
    session_exposure,
    session_report,
    sessions_of,
    to_html,
    to_markdown,
)
from privacy.audit.sets import FindingSet, all_findings
from privacy.audit.store import (
    AuditStore,
    Hasher,
    body_opener,
    call_row,
    chain_row,
    chained,
    ensure_schema,
    finding_row,
    seal_body,
)
from privacy.audit.tables import (
    PrivacyCall,
    PrivacyCallSet,
    PrivacyChain,
    PrivacyCheckpoint,
    PrivacyEgress,
    PrivacyFinding,
    PrivacyFindingSet,
    PrivacyInbound,
    PrivacyReceipt,
    PrivacyUnit,
)
from privacy.audit.verify import Break, TrailReport, verify_trail
from privacy.audit.writer import AuditWriter, Record

__all__ = [
    "RECEIPT_HEADER", "Anchor", "SigningKeys", "PrivacyChain", "PrivacyCheckpoint", "PrivacyReceipt", "ReceiptInvalid", "ReceiptIssuer", "body_bytes", "key_id",
    "load_public_pems", "placeholder_counts", "chain_row", "chained", "ensure_schema", "request_receipts", "verify_receipt_token",
    "AuditStore", "AuditWriter", "FindingSet", "PrivacyCallSet", "PrivacyFindingSet", "all_findings", "AuditedUnits", "Break", "ChainSigner", "ExposureRecorder", "Hasher", "PrivacyCall",
    "PrivacyEgress", "PrivacyFinding", "PrivacyInbound", "inbound_counts", "inbound_record", "TrailReport", "PrivacyUnit", "Record", "benchmark_export", "body_opener", "call_row", "cloud_bodies",
    "finding_row", "overview", "safe_location", "seal_body", "session_exposure", "session_report", "sessions_of",
    "load_public_pem", "public_pem", "to_html", "to_markdown", "units_left_raw", "verify_trail",
]
