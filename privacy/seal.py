"""Authenticated encryption for what rests on disk (AES-256-GCM from ``cryptography``).

A sealed value is text: ``ecgw-sealed:v1:`` + base64(nonce ‖ ciphertext ‖ tag). The associated data binds it to
where it belongs (a session and key, an audit call), so a value copied elsewhere or altered does not open.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privacy.errors import PrivacyUnavailable

PREFIX = "ecgw-sealed:v1:"


class SealBroken(PrivacyUnavailable):
    """A stored value could not be decrypted: the wrong secrets key, or the value was altered."""


class Sealer:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    @staticmethod
    def is_sealed(value: object) -> bool:
        return isinstance(value, str) and value.startswith(PREFIX)

    def seal(self, plain: bytes, aad: bytes) -> str:
        nonce = os.urandom(12)
        return PREFIX + base64.b64encode(nonce + self._aead.encrypt(nonce, plain, aad)).decode("ascii")

    def open(self, sealed: str, aad: bytes, *, what: str = "a stored value") -> bytes:
        try:
            raw = base64.b64decode(sealed[len(PREFIX):], validate=True)
            return self._aead.decrypt(raw[:12], raw[12:], aad)
        except (InvalidTag, ValueError, binascii.Error):
            raise SealBroken(f"{what} could not be decrypted (a different secrets key, or the stored value was "
                             "altered); nothing was sent and nothing was overwritten") from None
