"""AWS's rules for elastic training that depend on the HyperPod cluster (pure).

"Using elastic training in Amazon SageMaker HyperPod" (considerations):
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-elastic-training.html
elastic training currently excludes Spot Instances, HyperPod managed tiered checkpointing and
checkpointless training; "Special considerations" of checkpointless training says the same from
its side: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-checkpointless-considerations.html

Both facts are read from DescribeCluster, the cluster's live description: a group's
`CapacityRequirements` (`{"Spot": {}}` for a spot group) and `TieredStorageConfig.Mode`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.errors import PermanentError


@dataclass(frozen=True)
class HyperPodFacts:
    spot_groups: frozenset[str]
    tiered_checkpointing: bool


def hyperpod_facts(description: dict[str, Any]) -> HyperPodFacts:
    """The facts of a DescribeCluster answer the elastic rules need."""
    spot = frozenset(
        str(g.get("InstanceGroupName"))
        for g in description.get("InstanceGroups") or []
        if "Spot" in (g.get("CapacityRequirements") or {})
    )
    tiered = (description.get("TieredStorageConfig") or {}).get("Mode") == "Enable"
    return HyperPodFacts(spot_groups=spot, tiered_checkpointing=tiered)


def check_elastic(group: str, hyperpod: HyperPodFacts) -> None:
    """Refuse an elastic job AWS does not run: on a spot group, or with tiered checkpointing."""
    if group in hyperpod.spot_groups:
        raise PermanentError(
            "InvalidJob",
            f"instance_group: group {group} runs on Spot Instances, and HyperPod elastic"
            " training does not support Spot Instances",
            "run the elastic job on an on-demand or training-plan group, or drop elastic to run"
            " this job at a fixed size on the spot group",
        )
    if hyperpod.tiered_checkpointing:
        raise PermanentError(
            "InvalidJob",
            "elastic: the cluster has managed tiered checkpointing enabled, and HyperPod elastic"
            " training does not support managed tiered checkpointing",
            "drop elastic to run at a fixed size with tiered checkpointing, or disable tiered"
            " checkpointing first (PATCH /api/v1/clusters/{name}/features"
            ' {"tiered_checkpointing": {"enabled": false}})',
        )
