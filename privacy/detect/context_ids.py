"""Identifiers by their context or their shape, where no check digit and no label rule finds them: a student,
employee or member number, a booking or order reference, a case or application id, the last digits of a card or
account (``ID_NUMBER``).

After a word that makes it a person's (``student number``, ``booking reference``, ``PNR``, ``card ending``,
``工号``, ``尾号``) the next token with a digit counts, bare numbers included (a commit hash does not). The
business references agents need (``order #``, ``invoice``, ``ticket``, ``ref``) and shapes with no word before
them count in ``strict`` only: capitals and at least four digits joined by dashes (``ACC-3391827``), 6 to 14
capitals and digits with three digits (``HL8823917``), any run of 6+ letters and digits with three digits, a bare
number of 7+ digits; public standards (``CVE-…``, ``ISO-…``, ``SHA256``) never. Bounded patterns: linear."""

from __future__ import annotations

import re
from collections.abc import Iterator

from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast

LAYER = "ids"

_CONNECT = (r"(?:[ \t]*(?:no|nr|number|num|id|ref|reference|code|is|was|in|=|:|#|\.)(?![A-Za-z0-9]))*"
            r"[ \t:#=.]*")
# Words that say the number is a person's (a student, an employee, a traveller, an account holder); the business
# references agents need (order, invoice, ticket: ``privacy.detect.references``) only in strict.
_PERSONAL = compile_fast(
    r"(?i)(?:\b(?:student|employee|staff|personnel|passport|member|membership|application|sevis|gwf|cedula|"
    r"profesional|patient|tenant|customer|client|account|acct|ending|ends|policy|licen[cs]e|registration|permit|"
    r"pnr|booking|reservation|visa|appointment|locator|case)\b" + _CONNECT +
    r"|(?:工号|学号|护照号|身份证号|卡号|尾号|账号|会员号|申请号|预订号|贷款合同号)[：: \t]*)")
_DOCUMENT = compile_fast(r"(?i)(?:\b(?:id|no|nr|number|num|ref|reference|order|invoice|inv|ticket|contract|po|"
                       r"tracking|serial|matter|docket|confirmation)\b|#)" + _CONNECT +
                       r"|(?:编号|单号|订单号|合同号|流水号|案号|号码)[：: \t]*")
_TOKEN = compile_fast(r"[A-Za-z0-9](?:[A-Za-z0-9\-./]{0,30}[A-Za-z0-9])?")
_DASHED = compile_fast(r"(?<![\w\-])[A-Z]{1,5}(?:-[A-Z0-9]{1,8}){0,3}-\d{4,}(?![\w\-])")
_CAPS = compile_fast(r"(?<![\w\-])(?=[A-Z0-9]{6,14}(?![\w\-]))(?=(?:[A-Z]*\d){3})(?=\d*[A-Z])[A-Z0-9]{6,14}(?![\w\-])")
_LOOSE = compile_fast(r"(?<![\w\-./])(?=[A-Za-z0-9]{6,20}(?![\w\-]))(?=(?:[A-Za-z]*\d){3})(?=\d*[A-Za-z])"
                    r"[A-Za-z0-9]{6,20}(?![\w\-./])")
_BARE = compile_fast(r"(?<![\w\-.,/:])\d{7,}(?![\w\-/:]|[.,]\d)")
_PUBLIC = compile_fast(r"(?i)^(?:cve|cwe|ghsa|iso|iec|rfc|pep|eip|erc|bip|kb|utf|covid|ecma|ieee|astm|din|sha|aes|rsa|md|"
                     r"rtx|gtx|rx|stm|atmega|esp|lm|cr|mp|pt|x|h|ipv|tls|ssl|http|gpt|llama|qwen|iphone|galaxy|"
                     r"windows|win|macos|ios|android|python|py|node|java|jdk|es|ecmascript|cuda|sm|ddr|lpddr|usb|"
                     r"pcie|hdmi|wpa|ieee|en|gb|bs|eu|nist|sp|fips|hipaa|gdpr|soc)\d*$")
_HEX = compile_fast(r"^[0-9a-f]{7,64}$")
_YEAR = compile_fast(r"^(?:19|20)\d\d$")
_DATE = compile_fast(r"^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4})$|^\d{1,2}(?:\.\d{1,3}){1,3}$")


def _prefix(token: str) -> str:
    return re.split(r"[-\d]", token, maxsplit=1)[0]


class ContextIdentifiers:
    """``find(text, strict)``: identifiers after a word that makes them a person's; in strict also after a
    document word, and reference-shaped tokens."""

    @staticmethod
    def _contexts(text: str, strict: bool) -> Iterator[tuple[re.Match[str], bool]]:
        """Each context word's match, and whether it names a document (a commit hash is no person's)."""
        for m in _PERSONAL.finditer(text):
            yield m, False
        if strict:
            for m in _DOCUMENT.finditer(text):
                yield m, True

    def find(self, text: str, *, strict: bool) -> list[Finding]:
        spans: list[tuple[int, int]] = []
        for m, document in self._contexts(text, strict):
            t = _TOKEN.match(text, m.end())
            if t is None or m.end() == m.start():
                continue
            token = t.group(0)
            if document and _HEX.match(token):
                continue  # a commit or an object id
            digits = sum(ch.isdigit() for ch in token)
            if digits == 0 or len(token) < 4 or _DATE.match(token) \
                    or (_YEAR.match(token) and "end" not in m.group(0).lower()):
                continue
            if digits < 3 and not (len(token) == 6 and token.isalnum() and token.isupper()):
                continue  # "3pm", "Apache-2.0": not an identifier; a six-letter booking code (PNR) is
            spans.append((t.start(), t.end()))
        for pattern in (_DASHED, _CAPS, _LOOSE, _BARE) if strict else ():
            for m in pattern.finditer(text):
                if pattern is _BARE or not (_PUBLIC.match(_prefix(m.group(0))) or _HEX.match(m.group(0))):
                    spans.append((m.start(), m.end()))
        return [Finding(type="ID_NUMBER", start=s, end=e, value=text[s:e], layer=LAYER, key=f"ID_NUMBER:{text[s:e]}")
                for s, e in spans]
