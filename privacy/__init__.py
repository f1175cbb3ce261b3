"""Detection, reversible pseudonymisation, restore (streaming too), audit of cloud-bound payloads."""

from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from privacy.protection import PassThroughProtector, Protection, Protector, StreamRestorer

__all__ = ["PrivacyBlocked", "PrivacyUnavailable", "PassThroughProtector", "Protection", "Protector", "StreamRestorer"]
