"""Errors raised by protection. Both mean: this request does not go to the cloud."""

from __future__ import annotations


class PrivacyUnavailable(Exception):
    """Protection could not run (a detector failed), so the cloud call did not happen: fail closed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PrivacyBlocked(Exception):
    """A finding whose action is ``block``: the step must stay on the edge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SessionStoreUnavailable(Exception):
    """The session store (SQLite file, Redis) cannot be read or written: a step that needs session state (the
    vault, a sticky choice) stops here, so nothing leaves unprotected. ``store`` names it for the 503."""

    def __init__(self, store: str, reason: str) -> None:
        super().__init__(f"the session store ({store}) is unavailable: {reason}")
        self.store = store
        self.reason = reason
