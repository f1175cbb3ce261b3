"""Errors that cross the router boundary; the gateway turns them into OpenAI error bodies."""

from __future__ import annotations

from accounting.errors import EcgwError
from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from privacy.session_store import SessionStoreUnavailable

__all__ = ["PrivacyBlocked", "PrivacyUnavailable", "SessionStoreUnavailable", "UpstreamError"]


class UpstreamError(EcgwError):
    """An upstream (edge or cloud) failed; ``status`` is what the client should receive."""

    def __init__(self, status: int, message: str, *, upstream: str, type_: str = "upstream_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.upstream = upstream
        self.type = type_
