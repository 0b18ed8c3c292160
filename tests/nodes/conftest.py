"""A simulated AWS whose EKS clusters get an emulated Kubernetes API, and one HyperPod cluster
of 30 nodes on an ACTIVE EKS cluster, made with boto3 (what the node adapter runs against)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import hyperpod_clusters

ACCOUNT = "444455556666"
INSTANCE_TYPE = "ml.g5.2xlarge"
NODE_COUNT = 30


@dataclass(frozen=True)
class HyperPodCluster:
    name: str
    arn: str
    eks: dict[str, Any]


@pytest.fixture(scope="session")
def sim() -> Iterator[SimulatedAws]:
    profile = get_profile("fast")
    world = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=world, account_id=ACCOUNT).start()
    yield aws
    aws.stop()
    world.close()


@pytest.fixture(scope="module")
def hyperpod(sim: SimulatedAws) -> HyperPodCluster:
    name = f"nodes-{uuid.uuid4().hex[:8]}"
    [(arn, cluster)] = hyperpod_clusters(
        sim, {name: NODE_COUNT}, instance_type=INSTANCE_TYPE, timeout=15
    ).values()
    return HyperPodCluster(name=name, arn=arn, eks=cluster)
