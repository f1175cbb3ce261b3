"""Errors raised by protection. Both mean: this request does not go to the cloud."""

from __future__ import annotations

from accounting.errors import EcgwError


class PrivacyError(EcgwError):
    """The root of privacy's errors: each means this request does not go to the cloud."""


class PrivacyUnavailable(PrivacyError):
    """Protection could not run (a detector failed), so the cloud call did not happen: fail closed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PrivacyBlocked(PrivacyError):
    """A finding whose action is ``block``: the step must stay on the edge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PrivacyFailedToEdge(PrivacyBlocked):
    """Protection could not run and ``privacy.on_privacy_error`` is ``edge``: kept on the edge like a block, and
    counted as a fail-closed event."""
