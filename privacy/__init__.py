"""Detection, reversible pseudonymisation, restore (streaming too), audit of cloud-bound payloads."""

from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from privacy.hook import PassThroughProtector, Protection, Protector, SessionPrivacy, StreamRestorer

__all__ = ["PassThroughProtector", "PrivacyBlocked", "PrivacyUnavailable", "Protection", "Protector", "SessionPrivacy",
           "StreamRestorer"]
