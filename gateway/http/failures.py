"""What a failed step tells its client: one mapping from exceptions to status, type and message, shared by every
surface (each surface only chooses its own envelope)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gateway.http.errors import ClientError
from privacy.detect import ScanOverBudget
from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from privacy.session_store import SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable, OverBudget, RateLimited
from router.errors import UpstreamError

log = logging.getLogger("ecgw")


@dataclass(frozen=True)
class Failure:
    status: int
    message: str
    type: str
    code: str | None = None
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Retry-After and x-ratelimit-* on a 429


def client_failure(exc: ClientError) -> Failure:
    return Failure(exc.status, exc.message, exc.type, code=exc.code, param=exc.param)


def classify(exc: BaseException, request_id: str, *, mid_stream: bool = False) -> Failure:
    """The client-facing failure for ``exc``; anything unexpected is logged with its traceback and becomes a 500
    that names the request id (never the traceback)."""
    if isinstance(exc, ClientError):
        return client_failure(exc)
    if isinstance(exc, UpstreamError):
        return Failure(exc.status, exc.message, exc.type, code=exc.upstream)
    if isinstance(exc, SessionStoreUnavailable):
        return Failure(503, f"The session store ({exc.store}) is unavailable, so this step was not served and nothing "
                            f"was sent to the cloud: {exc.reason}. Retry shortly; the gateway reconnects by itself "
                            "when the store is back.", "session_store_unavailable", code="session_store_unavailable")
    if isinstance(exc, ScanOverBudget):
        return Failure(413, f"This request is too large for the privacy scan, so nothing was sent to the cloud: "
                            f"{exc.reason}. Send less new text in one request, or raise {exc.setting} in the "
                            f"gateway's configuration.", "privacy_scan_too_large", code="privacy_scan_too_large")
    if isinstance(exc, PrivacyUnavailable):
        return Failure(503, f"Privacy protection is unavailable, so nothing was sent to the cloud: {exc.reason}",
                       "privacy_unavailable", code="privacy_unavailable")
    if isinstance(exc, RateLimited):
        return Failure(429, exc.message, "rate_limit_exceeded", code="rate_limit_exceeded", headers=exc.headers)
    if isinstance(exc, OverBudget):
        return Failure(429, f"Budget exceeded: {exc.reason}.", "budget_exceeded", code="budget_exceeded",
                       headers={"retry-after": str(exc.retry_after_s)} if exc.resets_at is not None else {})
    if isinstance(exc, BudgetUnavailable):
        return Failure(503, f"A budget that applies to this step cannot be read, so the step was not served: "
                            f"{exc.reason}. Retry shortly.", "budget_unavailable", code="budget_unavailable")
    if isinstance(exc, PrivacyBlocked):
        return Failure(403, f"This step may not go to the cloud: {exc.reason}", "privacy_blocked",
                       code="privacy_blocked")
    where = "mid-stream" if mid_stream else "on this request"
    log.exception("request %s failed %s", request_id, where, exc_info=exc)
    return Failure(500, f"The gateway failed {where} (request id {request_id}); see its log.", "internal_error")
