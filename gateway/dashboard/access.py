"""Who may open the dashboard: everyone in single-tenant mode (no keys configured); once keys are configured, only
admin keys (``server.admin_keys``): an ordinary key must not see other tenants' sessions. A browser signs in once
with a form and gets a signed, expiring token (never the key itself) in an HttpOnly, SameSite=Strict cookie scoped
to ``/ui`` — ``Secure`` when the request came over TLS or ``server.behind_tls_proxy`` says a proxy ends TLS. The
token names which admin key signed in (by a keyed hash), so removing that key from the configuration ends its
sessions. Failed sign-ins are throttled per client address; ``POST /ui/logout`` ends the session."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from gateway.settings import Settings
from gateway.tenancy import presented_key

COOKIE = "ecgw_ui"


def admin_keys(settings: Settings) -> list[str] | None:
    """The keys that open the dashboard; None when no key is configured at all (single-tenant: open)."""
    server = settings.server
    if not (server.api_keys or server.session_keys or server.admin_keys):
        return None
    return [k.secret for k in server.admins()]  # none configured: the dashboard stays closed


def _matches(key: str | None, keys: list[str]) -> bool:
    return key is not None and any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)


class UiSessions:
    """Signed dashboard sessions (HMAC-SHA256 with a key derived from the secrets key) and the sign-in throttle
    (per worker: each worker counts the failures it saw)."""

    def __init__(self, key: bytes, *, ttl_s: float = 8 * 3600, max_failures: int = 5, window_s: float = 60.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._ttl = ttl_s
        self._max_failures = max_failures
        self._window = window_s
        self._clock = clock
        self._failures: dict[str, list[float]] = {}

    def _mac(self, text: str) -> str:
        return hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def _key_id(self, admin_key: str) -> str:
        return self._mac("admin-key\0" + admin_key)[:24]

    def issue(self, admin_key: str) -> str:
        payload = f"{int(self._clock() + self._ttl)}.{self._key_id(admin_key)}"
        return f"{payload}.{self._mac('ui-session' + chr(0) + payload)[:32]}"

    def valid(self, token: str | None, keys: list[str]) -> bool:
        """A token this gateway signed, not expired, for an admin key still configured."""
        parts = (token or "").split(".")
        if len(parts) != 3 or not parts[0].isdigit():
            return False
        payload = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(parts[2], self._mac("ui-session" + chr(0) + payload)[:32]):
            return False
        return int(parts[0]) > self._clock() and any(hmac.compare_digest(parts[1], self._key_id(k)) for k in keys)

    def wait(self, client: str) -> float:
        """Seconds before ``client`` may try again (0: now)."""
        now = self._clock()
        recent = [t for t in self._failures.get(client, ()) if t > now - self._window]
        if recent:
            self._failures[client] = recent
        else:
            self._failures.pop(client, None)
        return recent[0] + self._window - now if len(recent) >= self._max_failures else 0.0

    def failed(self, client: str) -> None:
        if len(self._failures) > 10_000:  # many addresses: forget the oldest rather than grow without end
            self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(client, []).append(self._clock())


def allowed(settings: Settings, sessions: UiSessions, request: Request) -> bool:
    keys = admin_keys(settings)
    if keys is None:
        return True
    return _matches(presented_key(request.headers), keys) or sessions.valid(request.cookies.get(COOKIE), keys)


_LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ecgw dashboard — sign in</title>
<style>body{{font-family:system-ui,sans-serif;display:grid;place-items:center;height:90vh;color:#222}}
form{{border:1px solid #ddd;padding:24px 28px;border-radius:8px}}input{{font-size:14px;padding:6px;width:22em}}
button{{font-size:14px;padding:6px 14px;margin-top:10px}}.err{{color:#b00020}}</style></head><body>
<form method="post" action="/ui/login"><h2>ecgw dashboard</h2><p>{message}</p>
<label>Admin key<br><input type="password" name="key" autofocus autocomplete="off"></label><br>
<button type="submit">Sign in</button></form></body></html>"""


def login_page(message: str = "This gateway has keys configured: sign in with an admin key.",
               status: int = 401) -> Response:
    return HTMLResponse(_LOGIN.format(message=message), status_code=status)


def _secure(settings: Settings, request: Request) -> bool:
    return request.url.scheme == "https" or settings.server.behind_tls_proxy


async def login(settings: Settings, sessions: UiSessions, request: Request) -> Response:
    keys = admin_keys(settings)
    if keys is None:
        return RedirectResponse("/ui", status_code=303)
    client = request.client.host if request.client else "-"
    wait = sessions.wait(client)
    if wait > 0:
        response = login_page(f"<span class='err'>Too many failed sign-ins; try again in {int(wait) + 1} s.</span>",
                              status=429)
        response.headers["retry-after"] = str(int(wait) + 1)
        return response
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    key = (form.get("key") or [""])[0].strip()
    if not _matches(key, keys):
        sessions.failed(client)
        return login_page("<span class='err'>That key is not an admin key (server.admin_keys).</span>")
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(COOKIE, sessions.issue(key), path="/ui", httponly=True, samesite="strict",
                        secure=_secure(settings, request))
    return response


async def logout(settings: Settings, request: Request) -> Response:
    response = RedirectResponse("/ui", status_code=303)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict", secure=_secure(settings, request))
    return response
