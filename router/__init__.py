"""Policies: who answers each agent step, and the two channels they may use."""

from router.channels import Channel, CloudChannel, EdgeChannel
from router.context import CallContext, RouteTracker
from router.errors import PrivacyUnavailable, UpstreamError
from router.policy import Policy, PolicyRegistry, StepResult
from router.step import SessionState, Step
from router.upstreams import Upstream

__all__ = [
    "CallContext",
    "Channel",
    "CloudChannel",
    "EdgeChannel",
    "Policy",
    "PolicyRegistry",
    "PrivacyUnavailable",
    "RouteTracker",
    "SessionState",
    "Step",
    "StepResult",
    "Upstream",
    "UpstreamError",
]
