"""Every step on the cloud, through the protected channel."""

from __future__ import annotations

from typing import ClassVar

from router.policies._fixed import FixedSide


class CloudOnly(FixedSide):
    name: ClassVar[str] = "cloud-only"
    side = "cloud"
