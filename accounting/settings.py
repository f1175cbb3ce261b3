"""The ``accounting:`` section of config.yaml."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class AccountingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True  # false records nothing
