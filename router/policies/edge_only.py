"""Every step on the edge; the cloud sees nothing."""

from __future__ import annotations

from typing import ClassVar

from router.policies._fixed import FixedSide


class EdgeOnly(FixedSide):
    name: ClassVar[str] = "edge-only"
    side = "edge"
