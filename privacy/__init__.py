"""Detection, reversible pseudonymisation, restore (streaming too), audit of cloud-bound payloads."""

from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from privacy.protection import PassThroughProtector, Protection, Protector, StreamRestorer

__all__ = ["PassThroughProtector", "PrivacyBlocked", "PrivacyUnavailable", "Protection", "Protector", "StreamRestorer"]
