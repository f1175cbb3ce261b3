"""A cloud target's key (``cloud.api_key_env``), read once at construction, for either cloud transport: the key,
what ``/readyz`` says of it, and the error a call gets before any network attempt when it is missing."""

from __future__ import annotations

import os

from gateway.config.settings import CloudSettings, missing_cloud_key
from router.errors import UpstreamError


class CloudKey:
    def __init__(self, settings: CloudSettings) -> None:
        self.value = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        self._model = settings.model
        self._env = settings.api_key_env
        self._missing = missing_cloud_key(settings)

    def ready(self) -> tuple[bool, str]:
        if self._missing is not None:
            return False, f"{self._model}: environment variable {self._env} is not set"
        return True, f"{self._model}: configured"

    def check(self) -> None:
        """Before any network attempt: without its key the call can only fail, and less clearly."""
        if self._missing is not None:
            raise UpstreamError(503, self._missing[0].upper() + self._missing[1:], upstream="cloud",
                                type_="cloud_not_configured")
