"""Phone numbers in national and international formats, validated with ``phonenumbers`` (Google's libphonenumber).

A candidate is a run of digits with the separators phones use. It is a phone when it is valid: with ``+`` or ``00``
for any country; with a national trunk ``0`` for one of ``regions`` (the UK, Germany, France, the Netherlands,
Japan, India, China… — such numbers rarely start an ordinary figure). A bare number without ``+`` or ``0`` is left to
the labelled layer (``phone: …``) and the NANP/China patterns, since it is as likely a count or an id.
"""

from __future__ import annotations

import re

import phonenumbers

from privacy.detect.findings import Finding

DEFAULT_REGIONS = ("GB", "DE", "FR", "NL", "JP", "IN", "CN", "IT", "ES", "AU", "KR", "BE", "CH", "AT", "SE", "BR")
_CANDIDATE = re.compile(r"(?<![\w+\-./:#])(?:\+|00)?\(?\d[\d\s\-().]{5,18}\d(?![\w\-]|\.\d)")
_SEPARATORS = re.compile(r"[\s\-().]")


class PhoneDetector:
    def __init__(self, regions: tuple[str, ...] = DEFAULT_REGIONS) -> None:
        self._regions = regions

    def warm(self) -> None:
        """Read a fixed-line and a mobile example number of each of its regions and of +1 now (~50 ms, once per
        process): libphonenumber loads a region's metadata and compiles its patterns on the region's first number
        (~2–5 ms), which would otherwise fall on the first request that holds one."""
        for region in (*self._regions, "US"):
            for kind in (phonenumbers.PhoneNumberType.FIXED_LINE, phonenumbers.PhoneNumberType.MOBILE):
                example = phonenumbers.example_number_for_type(region, kind)
                if example is not None:
                    self.find(phonenumbers.format_number(example, phonenumbers.PhoneNumberFormat.INTERNATIONAL))

    def _valid(self, candidate: str) -> str | None:
        """The E.164 form of a valid number, or None."""
        compact = _SEPARATORS.sub("", candidate)
        if not 8 <= len(compact.lstrip("+")) <= 16 or "\n" in candidate:
            return None
        attempts: list[tuple[str, str | None]] = []
        if compact.startswith("+"):
            attempts.append((compact, None))
        elif compact.startswith("00"):
            attempts.append(("+" + compact[2:], None))
        elif compact.startswith("0"):
            attempts += [(compact, region) for region in self._regions]
        for number, region in attempts:
            try:
                parsed = phonenumbers.parse(number, region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(parsed):
                return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)
        return None

    def find(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        for m in _CANDIDATE.finditer(text):
            value = m.group(0).rstrip(" -(")
            if value.count("(") != value.count(")"):
                value = value.lstrip("(")
            e164 = self._valid(value)
            if e164 is not None:
                start = m.start() + m.group(0).find(value)
                out.append(Finding(type="PHONE_NUMBER", start=start, end=start + len(value), value=value,
                                   layer="patterns", key=f"PHONE_NUMBER:{e164}"))
        return out
