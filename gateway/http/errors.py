"""OpenAI-shaped error bodies: ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from accounting.errors import EcgwError
from gateway.http.jsonio import dumps


class StartupError(EcgwError):
    """Something the gateway needs at start is not there (e.g. the metering database); the message says what."""


class ClientError(EcgwError):
    """Bad input from the client; ``status`` and ``message`` go back as they are."""

    def __init__(self, status: int, message: str, *, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.param = param
        self.code = code


def bad(message: str, param: str) -> ClientError:
    """A 400 for a request field (``param``: where it is, e.g. ``messages[2].content``)."""
    return ClientError(400, message, param=param)


def error_body(message: str, type_: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_response(status: int, message: str, type_: str, *, param: str | None = None, code: str | None = None,
                   headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(error_body(message, type_, param=param, code=code)), status_code=status,
                    media_type="application/json", headers=headers)
