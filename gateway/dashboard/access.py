"""Who may open the dashboard: everyone in single-tenant mode (no keys configured); once keys are configured, only
admin keys (``server.admin_keys``): an ordinary key must not see other tenants' sessions. A browser signs in once
with a form and gets a signed, expiring token (never the key itself) in an HttpOnly, SameSite=Strict cookie scoped
to ``/ui`` — ``Secure`` when the request came over TLS or ``server.behind_tls_proxy`` says a proxy ends TLS. The
token names which admin key signed in (by a keyed hash), so removing that key from the configuration ends its
sessions; ``POST /ui/logout`` revokes it in the session store (shared by every worker and replica), so a copied
token stops working too.

Sign-in is hardened against a caller without a key: the form's body is capped (``LOGIN_MAX_BYTES``, checked before
it is read), every attempt counts as a failure before its body is read (a success takes it back), and failures are
throttled per client address — the connection's peer, or what ``X-Forwarded-For`` says only when the peer is one of
``server.forwarded_allow_ips`` (``gateway.app`` applies it; none by default). Every ``/ui`` answer carries a
``Content-Security-Policy`` (nothing but the gateway's own files; no framing) and ``X-Frame-Options: DENY``."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import time
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from gateway.config.settings import Settings
from gateway.state.tenancy import presented_key
from privacy.session_store import SessionStore, SessionStoreUnavailable

COOKIE = "ecgw_ui"
LOGIN_MAX_BYTES = 4096  # a sign-in form holds one key: anything longer is refused before it is read
_SIGNED_OUT = "~ui-signed-out/"  # + a token's keyed id: the session-store entry that says it was signed out
TOKEN_TTL_S = 8 * 3600.0


def admin_keys(settings: Settings) -> list[str] | None:
    """The keys that open the dashboard; None when no key is configured at all (single-tenant: open)."""
    server = settings.server
    if not (server.api_keys or server.session_keys or server.admin_keys):
        return None
    return [k.secret for k in server.admins()]  # none configured: the dashboard stays closed


def _matches(key: str | None, keys: list[str]) -> bool:
    return key is not None and any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)


class UiSessions:
    """Signed dashboard sessions (HMAC-SHA256 with a key derived from the secrets key), the tokens signed out (in
    the session ``store``, so every worker and replica knows), and the sign-in throttle (per worker: each worker
    counts the attempts it saw)."""

    def __init__(self, key: bytes, store: SessionStore, *, ttl_s: float = TOKEN_TTL_S, max_failures: int = 5,
                 window_s: float = 60.0, clock: Callable[[], float] = time.time) -> None:
        """``ttl_s``: a token's life; at most the session store's (``sessions.ttl_s``), which keeps a sign-out
        exactly as long as a session left alone."""
        self._key = key
        self._store = store
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
        """``expiry.key id.nonce.mac``: the nonce tells two sign-ins in one second apart, so one can sign out
        alone."""
        payload = f"{int(self._clock() + self._ttl)}.{self._key_id(admin_key)}.{os.urandom(12).hex()}"
        return f"{payload}.{self._mac('ui-session' + chr(0) + payload)[:32]}"

    def valid(self, token: str | None, keys: list[str]) -> bool:
        """A token this gateway signed, not expired, for an admin key still configured (signing out is not
        looked at here: ``signed_in``)."""
        parts = (token or "").split(".")
        if len(parts) != 4 or not parts[0].isdigit():
            return False
        payload = ".".join(parts[:3])
        if not hmac.compare_digest(parts[3], self._mac("ui-session" + chr(0) + payload)[:32]):
            return False
        return int(parts[0]) > self._clock() and any(hmac.compare_digest(parts[1], self._key_id(k)) for k in keys)

    async def signed_in(self, token: str | None, keys: list[str]) -> bool:
        """``valid``, and not signed out; a session store that cannot be read lets nobody in (fail closed)."""
        if token is None or not self.valid(token, keys):
            return False
        try:
            return await self._store.get(_SIGNED_OUT + self._token_id(token), "signed_out") is None
        except SessionStoreUnavailable:
            return False

    async def sign_out(self, token: str, keys: list[str]) -> None:
        """Revoke a valid token everywhere (an invalid one needs nothing: it opens nothing already)."""
        if self.valid(token, keys):
            await self._store.set(_SIGNED_OUT + self._token_id(token), "signed_out", int(token.split(".", 1)[0]))

    def _token_id(self, token: str) -> str:
        return self._mac("ui-token\0" + token)[:32]

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

    def succeeded(self, client: str) -> None:
        """Take back the failure an attempt counted before its key was known to be right."""
        attempts = self._failures.get(client)
        if attempts:
            attempts.pop()


async def allowed(settings: Settings, sessions: UiSessions, request: Request) -> bool:
    keys = admin_keys(settings)
    if keys is None:
        return True
    return _matches(presented_key(request.headers), keys) or await sessions.signed_in(request.cookies.get(COOKIE),
                                                                                      keys)


@functools.cache
def _policy() -> str:
    """The dashboard's Content-Security-Policy: its own files only, the sign-in page's one inline style by hash."""
    style = _LOGIN[_LOGIN.index("<style>") + 7:_LOGIN.index("</style>")].replace("{{", "{").replace("}}", "}")
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    return (f"default-src 'self'; style-src 'self' 'sha256-{digest}'; img-src 'self'; object-src 'none'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def hardened(response: Response) -> Response:
    """``response`` with the headers every ``/ui`` answer carries: no framing, no other origin's code."""
    response.headers["content-security-policy"] = _policy()
    response.headers["x-frame-options"] = "DENY"
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["referrer-policy"] = "no-referrer"
    return response


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


def _client(request: Request) -> str:
    """The address attempts are counted under: the peer (a trusted proxy's ``X-Forwarded-For`` has already been
    applied by then, and no one else's is)."""
    return request.client.host if request.client else "-"


async def _form(request: Request) -> bytes | None:
    """The sign-in body, or None past ``LOGIN_MAX_BYTES`` (said in advance, or found on the way: reading stops)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > LOGIN_MAX_BYTES):
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > LOGIN_MAX_BYTES:
            return None
    return body


async def login(settings: Settings, sessions: UiSessions, request: Request) -> Response:
    keys = admin_keys(settings)
    if keys is None:
        return RedirectResponse("/ui", status_code=303)
    client = _client(request)
    wait = sessions.wait(client)
    if wait > 0:
        response = login_page(f"<span class='err'>Too many failed sign-ins; try again in {int(wait) + 1} s.</span>",
                              status=429)
        response.headers["retry-after"] = str(int(wait) + 1)
        return response
    sessions.failed(client)  # counted before the body is read; a right key takes it back
    try:
        raw = await _form(request)
    except ClientDisconnect:
        raw = b""
    if raw is None:
        return login_page(f"<span class='err'>A sign-in form is at most {LOGIN_MAX_BYTES} bytes.</span>", status=413)
    form = parse_qs(raw.decode("utf-8", "replace"))
    key = (form.get("key") or [""])[0].strip()
    if not _matches(key, keys):
        return login_page("<span class='err'>That key is not an admin key (server.admin_keys).</span>")
    sessions.succeeded(client)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(COOKIE, sessions.issue(key), path="/ui", httponly=True, samesite="strict",
                        secure=_secure(settings, request))
    return response


async def logout(settings: Settings, sessions: UiSessions, request: Request) -> Response:
    """Ends the session everywhere: the token is revoked in the session store, the cookie deleted."""
    keys = admin_keys(settings)
    token = request.cookies.get(COOKIE)
    if keys is not None and token is not None:
        try:
            await sessions.sign_out(token, keys)
        except SessionStoreUnavailable:
            return login_page("<span class='err'>Signing out failed: the session store cannot be written now, so "
                              "this session is still open. Try again shortly.</span>", status=503)
    response = RedirectResponse("/ui", status_code=303)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict", secure=_secure(settings, request))
    return response
