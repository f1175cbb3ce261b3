"""The built-in policies, by name."""

from __future__ import annotations

from collections.abc import Mapping

from router.policies.cloud_only import CloudOnly
from router.policies.edge_only import EdgeOnly
from router.policy import PolicyFactory


def builtin_policies() -> Mapping[str, PolicyFactory]:
    return {
        EdgeOnly.name: EdgeOnly,
        CloudOnly.name: CloudOnly,
    }
