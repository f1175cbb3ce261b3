"""Checksums that separate real identifiers from look-alike numbers."""

from __future__ import annotations

_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    compact = iban.replace(" ", "").upper()
    if len(compact) < 15 or len(compact) > 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def cn_resident_id_ok(value: str) -> bool:
    """Mainland China resident identity card (GB 11643-1999): 17 digits and a mod-11 check character."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    total = sum(int(value[i]) * _CN_ID_WEIGHTS[i] for i in range(17))
    return _CN_ID_CHECK[total % 11] == value[17].upper()
