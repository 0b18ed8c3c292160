"""The actual state an instance-group decision reads: DescribeCluster, and a group's
described configuration as an UpdateCluster entry and in the contract's field names."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Protocol

from shared.contracts.cluster import CapacityType, InterfaceType
from shared.contracts.gpu import MIG_CONFIG_LABEL, profile_of_config
from shared.contracts.plan import FieldChange
from shared.errors import PermanentError

BUSY = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"})


@dataclass(frozen=True)
class DescribedCluster:
    """DescribeCluster, as the instance-group decisions read it."""

    name: str
    arn: str
    status: str
    failure_message: str | None = None
    vpc_config: dict[str, Any] = field(default_factory=dict)  # SecurityGroupIds, Subnets
    eks_cluster_arn: str | None = None
    # name -> ClusterInstanceGroupDetails as DescribeCluster returns it (JSON-safe)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)


class InstanceGroupApi(Protocol):
    async def describe_cluster_groups(self, name: str) -> DescribedCluster | None: ...
    async def update_cluster(self, request: dict[str, Any]) -> str: ...
    async def update_cluster_software(self, request: dict[str, Any]) -> str: ...
    async def efa_supported(self, instance_type: str) -> bool | None: ...


# The members of ClusterInstanceGroupSpecification that DescribeCluster reports under the same
# name. An update entry carries every one the group has, so nothing is dropped.
_SAME_NAME = (
    "InstanceGroupName",
    "InstanceType",
    "LifeCycleConfig",
    "ExecutionRole",
    "ThreadsPerCore",
    "InstanceStorageConfigs",
    "OnStartDeepHealthChecks",
    "TrainingPlanArn",
    "OverrideVpcConfig",
    "ScheduledUpdateConfig",
    "CapacityRequirements",
    "NetworkInterface",
)


def group_request(details: dict[str, Any]) -> dict[str, Any]:
    """The group's described configuration as a ClusterInstanceGroupSpecification."""
    request = {k: copy.deepcopy(details[k]) for k in _SAME_NAME if details.get(k) is not None}
    request["InstanceCount"] = int(details.get("TargetCount", details.get("CurrentCount", 0)))
    if details.get("MinCount") is not None:
        request["MinInstanceCount"] = details["MinCount"]
    kube = details.get("KubernetesConfig") or {}
    labels = kube.get("DesiredLabels", kube.get("CurrentLabels"))
    taints = kube.get("DesiredTaints", kube.get("CurrentTaints"))
    wanted: dict[str, Any] = {}
    if labels:
        wanted["Labels"] = dict(labels)
    if taints:
        wanted["Taints"] = [dict(t) for t in taints]
    if wanted:
        request["KubernetesConfig"] = wanted
    return request


def _ebs_size(request: dict[str, Any]) -> int | None:
    for config in request.get("InstanceStorageConfigs") or []:
        ebs = config.get("EbsVolumeConfig")
        if ebs and ebs.get("VolumeSizeInGB") is not None:
            return int(ebs["VolumeSizeInGB"])
    return None


def actual_view(details: dict[str, Any]) -> dict[str, Any]:
    """The group's described configuration in the contract's field names."""
    request = group_request(details)
    if request.get("TrainingPlanArn"):
        capacity = CapacityType.TRAINING_PLAN.value
    elif "Spot" in (request.get("CapacityRequirements") or {}):
        capacity = CapacityType.SPOT.value
    else:
        capacity = CapacityType.ON_DEMAND.value
    kube = request.get("KubernetesConfig") or {}
    return {
        "instance_type": request.get("InstanceType"),
        "count": request["InstanceCount"],
        "min_count": request.get("MinInstanceCount"),
        "capacity_type": capacity,
        "training_plan_arn": request.get("TrainingPlanArn"),
        "interface_type": (request.get("NetworkInterface") or {}).get(
            "InterfaceType", InterfaceType.EFA.value
        ),
        "ebs_volume_gb": _ebs_size(request),
        "threads_per_core": request.get("ThreadsPerCore"),
        "deep_health_checks": list(request.get("OnStartDeepHealthChecks") or []),
        "labels": dict(kube.get("Labels") or {}),
        "mig_profile": _mig_profile((kube.get("Labels") or {}).get(MIG_CONFIG_LABEL)),
        "taints": [
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
            for t in kube.get("Taints") or []
        ],
    }


def _mig_profile(config: str | None) -> str | None:
    """The contract's mig_profile of a group's nvidia.com/mig.config label (None: no label)."""
    if config is None:
        return None
    return profile_of_config(config) or "disabled"


def normal(name: str, value: Any) -> Any:
    if name == "deep_health_checks":
        return sorted(value or [])
    if name == "taints":
        return sorted((t["key"], t.get("value", "") or "", t["effect"]) for t in (value or []))
    if name == "labels":
        return dict(value or {})
    return value


def compute_diff(actual: dict[str, Any], change: dict[str, Any]) -> dict[str, FieldChange]:
    """Only the requested fields whose value differs from the actual one."""
    return {
        name: FieldChange(actual=actual.get(name), requested=requested)
        for name, requested in change.items()
        if normal(name, actual.get(name)) != normal(name, requested)
    }


async def describe(api: InstanceGroupApi, name: str) -> DescribedCluster:
    cluster = await api.describe_cluster_groups(name)
    if cluster is None:
        raise PermanentError(
            "ResourceNotFound",
            f"no HyperPod cluster named {name} in this account and region",
            "check the cluster with GET /api/v1/clusters; it may have been deleted outside "
            "Hyperpilot",
        )
    return cluster
