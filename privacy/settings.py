"""The ``privacy:`` section of config.yaml."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PrivacySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True  # false sends cloud-bound requests unchanged (still through the one cloud door)
