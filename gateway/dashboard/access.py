"""Who may open the dashboard: everyone in single-tenant mode (no keys configured); once keys are configured, only
admin keys (``server.admin_keys``): an ordinary key must not see other tenants' sessions. A browser
signs in once with a form; the key then rides in an HttpOnly, SameSite=Strict cookie scoped to ``/ui``."""

from __future__ import annotations

import hmac
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


def presented(request: Request) -> str | None:
    return presented_key(request.headers) or request.cookies.get(COOKIE) or None


def allowed(settings: Settings, request: Request) -> bool:
    keys = admin_keys(settings)
    return keys is None or _matches(presented(request), keys)


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


async def login(settings: Settings, request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    key = (form.get("key") or [""])[0].strip()
    keys = admin_keys(settings)
    if keys is None:
        return RedirectResponse("/ui", status_code=303)
    if not _matches(key, keys):
        return login_page("<span class='err'>That key is not an admin key (server.admin_keys).</span>")
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(COOKIE, key, path="/ui", httponly=True, samesite="strict")
    return response
