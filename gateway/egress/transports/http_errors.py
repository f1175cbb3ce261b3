"""What an OpenAI-compatible server's error body says, whichever of the shapes servers use it takes."""

from __future__ import annotations

from gateway.http.jsonio import JSONDecodeError, loads


def error_message(raw: bytes) -> str:
    """The message of an error body: OpenAI's ``{"error": {"message": …}}``, FastAPI's ``{"detail": …}``,
    ``{"error": "…"}``, or the body's first 2,000 characters."""
    message = raw.decode("utf-8", "replace")[:2000]
    try:
        parsed = loads(raw)
    except JSONDecodeError:
        return message
    if isinstance(parsed, dict):
        err = parsed.get("error", parsed)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(parsed.get("detail"), str):
            return str(parsed["detail"])
        if isinstance(err, str):
            return err
    return message
