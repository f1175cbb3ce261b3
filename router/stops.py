"""Why the cloud door did not make a call: one name per reason, kept in the step record (``cloud_stopped`` in its
signal) so that the period report (``privacy.report``) counts the steps and consultations a privacy block or a
budget kept on the edge, and every fail-closed event, whichever policy made the call."""

from __future__ import annotations

from privacy.errors import PrivacyBlocked, PrivacyFailedToEdge, PrivacyUnavailable
from privacy.session_store import SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable, CloudBudgetSpent


def stop_reason(exc: BaseException) -> str | None:
    """The name of what stopped a cloud call before it left; None for anything else (a bug, a cancellation)."""
    if isinstance(exc, PrivacyFailedToEdge):
        return "privacy-error-edge"
    if isinstance(exc, PrivacyBlocked):
        return "privacy-blocked"
    if isinstance(exc, PrivacyUnavailable):
        return "privacy-unavailable"
    if isinstance(exc, SessionStoreUnavailable):
        return "session-store-unavailable"
    if isinstance(exc, CloudBudgetSpent):
        return "budget"
    if isinstance(exc, BudgetUnavailable):
        return "budget-unavailable"
    return None
