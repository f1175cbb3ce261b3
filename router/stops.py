"""Why the cloud door did not make a call: one name per reason, kept in the step record (``cloud_stopped`` in its
signal) so that the period report (``privacy.report``) counts the steps and consultations a privacy block or a
budget kept on the edge, and every fail-closed event, whichever policy made the call."""

from __future__ import annotations

from privacy.classes.policy import ClassBlocked
from privacy.errors import PrivacyBlocked, PrivacyFailedToEdge, PrivacyUnavailable
from privacy.session_store import SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable, CloudBudgetSpent

# The first match names it: a subclass before its base (on_privacy_error: edge is a block that failed closed).
_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (PrivacyFailedToEdge, "privacy-error-edge"), (ClassBlocked, "data-class"), (PrivacyBlocked, "privacy-blocked"),
    (PrivacyUnavailable, "privacy-unavailable"), (SessionStoreUnavailable, "session-store-unavailable"),
    (CloudBudgetSpent, "budget"), (BudgetUnavailable, "budget-unavailable"))


def stop_reason(exc: BaseException) -> str | None:
    """The name of what stopped a cloud call before it left; None for anything else (a bug, a cancellation)."""
    return next((name for kind, name in _REASONS if isinstance(exc, kind)), None)
