"""The built-in policies, by name."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from router.policies.advisor import Advisor
from router.policies.cloud_only import CloudOnly
from router.policies.delegate import Delegate
from router.policies.edge_only import EdgeOnly
from router.policies.learned_routing import LearnedRouting
from router.policies.random_matched import CloudRateSource, RandomMatched
from router.policies.sensitivity_routing import SensitivityRouting
from router.policies.sketch import Sketch
from router.policies.step_routing import StepRouting
from router.policies.task_routing import TaskRouting
from router.policy import PolicyFactory


def builtin_policies(*, cloud_rates: CloudRateSource | None = None) -> Mapping[str, PolicyFactory]:
    """``cloud_rates`` lets ``random-matched`` take p from another arm's measured cloud-call rate."""
    return {
        EdgeOnly.name: EdgeOnly,
        CloudOnly.name: CloudOnly,
        TaskRouting.name: TaskRouting,
        StepRouting.name: StepRouting,
        LearnedRouting.name: LearnedRouting,
        Sketch.name: Sketch,
        Advisor.name: Advisor,
        Delegate.name: Delegate,
        RandomMatched.name: partial(RandomMatched, cloud_rates=cloud_rates),
        SensitivityRouting.name: SensitivityRouting,
    }
