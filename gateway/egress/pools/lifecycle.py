"""What a retiring pool asks of the pools still in use: whether one of them shares a member's transport (a reload
kept it), so that it is not closed under them."""

from __future__ import annotations

from typing import Protocol


class Sharing(Protocol):
    def shares(self, upstream: object) -> bool: ...
