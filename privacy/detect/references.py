"""Business references agents need: an expense, invoice, contract, claim, order or ticket reference with a letter
prefix, a year and a serial (``EXP-2024-0113``, ``CLM-2023-88412``, ``PO/2025/1633``), or a prefix and a serial under
a label that names an expense, invoice, contract, order or ticket (``ref``, ``invoice``, ``合同编号``). They identify
a document, not a person. A policy, membership, account, customer or case number stays an account number whatever
its shape, and so does a claim number without a year (``claim #: CL-20994812``)."""

from __future__ import annotations

import re

_YEAR_REF = re.compile(r"[A-Z]{2,6}[-/_]20[0-3]\d[-/_]\d{2,7}")
_SERIAL_REF = re.compile(r"[A-Z]{2,6}[-_]\d{3,8}")
_DOCUMENT = re.compile(r"(?i)ref|reference|expense|invoice|\binv|contract|order|ticket|\bpo\b|lease|"
                       r"单号|合同|协议|报销|发票|订单|工单")
_PERSONAL = re.compile(r"(?i)polic|\bpol\b|member|account|acct|customer|\bcase|card|loan|mortgage|subscriber|patient|"
                       r"保单|会员|账|帐|客户|案件|病")


def business_reference(label: str, value: str) -> bool:
    """Whether ``value`` under ``label`` is a document reference the agent needs, not a personal identifier."""
    value = value.strip()
    if _PERSONAL.search(label):
        return False
    if _YEAR_REF.fullmatch(value):
        return True
    return _SERIAL_REF.fullmatch(value) is not None and _DOCUMENT.search(label) is not None
