"""Fakes of the instance-group ports: a HyperPod API that records every mutating request and
applies it the way UpdateCluster does (a group entry replaces the group's configuration)."""

from __future__ import annotations

import copy
from typing import Any

from cluster_svc.domain.instance_groups.described import DescribedCluster

ROLE = "arn:aws:iam::111122223333:role/hp-exec"
SCRIPTS = "s3://hp-bucket/hyperpod/lifecycle/"
PLAN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-a"


def details(name: str = "gpu", **overrides: Any) -> dict[str, Any]:
    """A ClusterInstanceGroupDetails as DescribeCluster gives it."""
    described: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": "ml.g5.8xlarge",
        "CurrentCount": 2,
        "TargetCount": 2,
        "MinCount": 1,
        "Status": "InService",
        "ExecutionRole": ROLE,
        "LifeCycleConfig": {"SourceS3Uri": SCRIPTS, "OnCreate": "on_create.sh"},
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress"],
        "NetworkInterface": {"InterfaceType": "efa"},
        "CapacityRequirements": {"Spot": {}},
        "KubernetesConfig": {
            "CurrentLabels": {"team": "nlp"},
            "DesiredLabels": {"team": "nlp"},
            "CurrentTaints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
            "DesiredTaints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
    }
    described.update(overrides)
    return described


def cluster(*groups: dict[str, Any], status: str = "InService") -> DescribedCluster:
    return DescribedCluster(
        name="hp-one",
        arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abc",
        status=status,
        vpc_config={"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-home"]},
        groups={g["InstanceGroupName"]: g for g in (groups or (details(),))},
    )


class FakeHyperPod:
    def __init__(self, described: DescribedCluster | None = None) -> None:
        self.cluster = described or cluster()
        self.updates: list[dict[str, Any]] = []
        self.software: list[dict[str, Any]] = []

    async def describe_cluster_groups(self, name: str) -> DescribedCluster | None:
        return copy.deepcopy(self.cluster) if name == self.cluster.name else None

    async def update_cluster(self, request: dict[str, Any]) -> str:
        self.updates.append(copy.deepcopy(request))
        groups = dict(self.cluster.groups)
        for entry in request.get("InstanceGroups") or []:
            described = {
                k: v
                for k, v in entry.items()
                if k not in ("InstanceCount", "MinInstanceCount", "KubernetesConfig")
            }
            kube = entry.get("KubernetesConfig") or {}
            described.update(
                CurrentCount=entry["InstanceCount"],
                TargetCount=entry["InstanceCount"],
                Status="InService",
                KubernetesConfig={
                    "DesiredLabels": kube.get("Labels") or {},
                    "DesiredTaints": kube.get("Taints") or [],
                },
            )
            if "MinInstanceCount" in entry:
                described["MinCount"] = entry["MinInstanceCount"]
            groups[entry["InstanceGroupName"]] = described
        for name in request.get("InstanceGroupsToDelete") or []:
            groups.pop(name)
        self.cluster = DescribedCluster(
            name=self.cluster.name,
            arn=self.cluster.arn,
            status="InService",
            vpc_config=self.cluster.vpc_config,
            groups=groups,
        )
        return self.cluster.arn

    async def efa_supported(self, instance_type: str) -> bool | None:
        return not instance_type.startswith("ml.c5.")

    async def update_cluster_software(self, request: dict[str, Any]) -> str:
        self.software.append(copy.deepcopy(request))
        return self.cluster.arn
