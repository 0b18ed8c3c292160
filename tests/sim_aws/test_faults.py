"""Hardware faults of HyperPod nodes: each one where HyperPod and Kubernetes show it
(DescribeClusterNode, the node's labels and Warning events, cluster events), what a reboot, a
replacement and a deep health check do to it, and NodeRecovery=Automatic escalating from a
reboot that does not heal to a replacement."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import AdminClient, aws_client, wait_for

HEALTH = "sagemaker.amazonaws.com/node-health-status"
INSTANCE_TYPE = "ml.g5.8xlarge"


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[SimulatedAws, KubeWorld]]:
    profile = get_profile("fast")
    kube = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=kube, account_id="777788889999").start()
    aws.account.set_quota("sagemaker", f"{INSTANCE_TYPE} for cluster usage", 1000)
    yield aws, kube
    aws.stop()
    kube.close()


def _hyperpod(sim: SimulatedAws, recovery: str, count: int = 2) -> tuple[str, str]:
    """A HyperPod cluster of `count` nodes on an EKS cluster of its own: (its name, EKS name)."""
    ec2, iam, eks, sm = (aws_client(sim, s) for s in ("ec2", "iam", "eks", "sagemaker"))
    suffix = uuid.uuid4().hex[:8]
    vpc = ec2.create_vpc(CidrBlock="10.80.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.80.{i * 16}.0/20", AvailabilityZoneId=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(("use1-az2", "use1-az4"))
    ]
    group = ec2.create_security_group(GroupName=f"f-{suffix}", Description="f", VpcId=vpc)[
        "GroupId"
    ]
    role = iam.create_role(RoleName=f"faults-{suffix}", AssumeRolePolicyDocument="{}")["Role"][
        "Arn"
    ]
    name = f"faults-{suffix}"
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
    )
    cluster = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=15,
    )
    sm.create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": INSTANCE_TYPE,
                "InstanceCount": count,
                "ExecutionRole": role,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "on_create.sh"},
            }
        ],
        VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
        Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        NodeRecovery=recovery,
    )
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService", 15)
    return name, name


def _status(sim: SimulatedAws, cluster: str, node_id: str) -> dict[str, Any]:
    details = aws_client(sim, "sagemaker").describe_cluster_node(
        ClusterName=cluster, NodeId=node_id
    )
    status: dict[str, Any] = details["NodeDetails"]["InstanceStatus"]
    return status


def _node(kube: KubeWorld, eks: str, node_id: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = next(
        (
            n
            for n in kube.api_server(eks).list_objects("v1", "Node")
            if n["metadata"]["name"] == f"hyperpod-{node_id}"
        ),
        None,
    )
    return found


def _labels(kube: KubeWorld, eks: str, node_id: str) -> dict[str, str]:
    node = _node(kube, eks, node_id)
    assert node is not None, f"no Node for {node_id}"
    labels: dict[str, str] = node["metadata"]["labels"]
    return labels


def _node_events(kube: KubeWorld, eks: str, node_id: str) -> list[dict[str, Any]]:
    return [
        e
        for e in kube.api_server(eks).list_objects("v1", "Event", "default")
        if e["involvedObject"]["kind"] == "Node"
        and e["involvedObject"]["name"] == f"hyperpod-{node_id}"
    ]


def _cluster_events(sim: SimulatedAws, cluster: str, node_id: str) -> list[str]:
    events = aws_client(sim, "sagemaker").list_cluster_events(
        ClusterName=cluster, NodeId=node_id, SortOrder="Ascending", MaxResults=100
    )["Events"]
    return [str(e["Description"]) for e in events]


def _ids(sim: SimulatedAws, cluster: str) -> list[str]:
    summaries = aws_client(sim, "sagemaker").list_cluster_nodes(ClusterName=cluster)[
        "ClusterNodeSummaries"
    ]
    return sorted(str(n["InstanceId"]) for n in summaries)


def test_a_reboot_that_does_not_heal_asks_for_a_replacement(
    world: tuple[SimulatedAws, KubeWorld],
) -> None:
    sim, kube = world
    cluster, eks = _hyperpod(sim, "None")
    sm = aws_client(sim, "sagemaker")
    victim, other = _ids(sim, cluster)
    fault = AdminClient(sim.endpoint_url).inject_fault(
        "reboot_does_not_heal", cluster=cluster, node_ids=[victim]
    )
    assert fault["node_ids"] == [victim]
    status = _status(sim, cluster, victim)
    assert status["Status"] == "Failure" and "Xid" in status["Message"]
    labels = _labels(kube, eks, victim)
    assert labels[HEALTH] == "UnschedulablePendingReboot"
    assert labels["sagemaker.amazonaws.com/fault-type"] == "GpuHealth"
    assert labels["sagemaker.amazonaws.com/fault-reason"] == "XidError48"
    [event] = _node_events(kube, eks, victim)
    assert event["type"] == "Warning" and event["reason"] == "GpuXidError"
    assert "Xid" in event["message"] and ": 48," in event["message"]
    assert _labels(kube, eks, other)[HEALTH] == "Schedulable"

    assert sm.batch_reboot_cluster_nodes(ClusterName=cluster, NodeIds=[victim])["Successful"] == [
        victim
    ]
    assert _status(sim, cluster, victim)["Status"] == "Pending"
    wait_for(lambda: _status(sim, cluster, victim)["Status"] == "Failure", timeout=10)
    assert "the reboot did not clear it" in _status(sim, cluster, victim)["Message"]
    wait_for(
        lambda: _labels(kube, eks, victim)[HEALTH] == "UnschedulablePendingReplacement", timeout=5
    )
    assert any(
        "the reboot did not clear it" in e["message"] for e in _node_events(kube, eks, victim)
    )
    described = _cluster_events(sim, cluster, victim)
    assert any("reboot started" in d for d in described)
    assert any("the reboot did not clear it" in d for d in described)

    sm.batch_replace_cluster_nodes(ClusterName=cluster, NodeIds=[victim])
    wait_for(lambda: victim not in _ids(sim, cluster), timeout=10)
    [replacement] = [i for i in _ids(sim, cluster) if i != other]
    wait_for(lambda: _status(sim, cluster, replacement)["Status"] == "Running", timeout=10)
    wait_for(lambda: _node(kube, eks, replacement) is not None, timeout=5)
    assert _labels(kube, eks, replacement)[HEALTH] == "Schedulable"
    assert "sagemaker.amazonaws.com/fault-type" not in _labels(kube, eks, replacement)


def test_automatic_recovery_reboots_then_replaces(world: tuple[SimulatedAws, KubeWorld]) -> None:
    sim, _ = world
    cluster, _eks = _hyperpod(sim, "Automatic")
    victim, other = _ids(sim, cluster)
    sim.faults.inject("reboot_does_not_heal", cluster=cluster, node_ids=[victim])
    wait_for(lambda: victim not in _ids(sim, cluster), timeout=15)
    [replacement] = [i for i in _ids(sim, cluster) if i != other]
    wait_for(lambda: _status(sim, cluster, replacement)["Status"] == "Running", timeout=10)
    described = _cluster_events(sim, cluster, victim)
    order = [
        "failed health checks",
        "reboot started",
        "the reboot did not clear it",
        "replacement started",
    ]
    positions = [next(i for i, d in enumerate(described) if step in d) for step in order]
    assert positions == sorted(positions), described
    assert any(
        f"replaced by {replacement}" in d for d in _cluster_events(sim, cluster, replacement)
    )


def test_a_gpu_off_the_bus_asks_for_a_replacement(world: tuple[SimulatedAws, KubeWorld]) -> None:
    sim, kube = world
    cluster, eks = _hyperpod(sim, "None", count=1)
    [victim] = _ids(sim, cluster)
    server = kube.api_server(eks)
    wait_for(lambda: _node(kube, eks, victim) is not None, timeout=5)
    gpu = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
    server.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "default"},
            "spec": {
                "nodeName": f"hyperpod-{victim}",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "command": ["sleep", "3600"],
                        "resources": gpu,
                    }
                ],
            },
        }
    )
    wait_for(
        lambda: (
            (server.get("v1", "Pod", "trainer", "default") or {}).get("status", {}).get("phase")
            == "Running"
        ),
        timeout=10,
    )
    assert sim.faults.inject("gpu_fell_off_bus", cluster=cluster).node_ids == [victim]
    assert "RuntimeError: CUDA error: unspecified launch failure" in server.logs.lines(
        "default", "trainer", "main"
    )
    status = _status(sim, cluster, victim)
    assert status["Status"] == "Failure" and "GPU has fallen off the bus" in status["Message"]
    assert _labels(kube, eks, victim)[HEALTH] == "UnschedulablePendingReplacement"
    assert _labels(kube, eks, victim)["sagemaker.amazonaws.com/fault-reason"] == "XidError79"
    [event] = _node_events(kube, eks, victim)
    assert event["reason"] == "GpuXidError" and ": 79," in event["message"]


def test_an_efa_error_heals_on_reboot(world: tuple[SimulatedAws, KubeWorld]) -> None:
    sim, kube = world
    cluster, eks = _hyperpod(sim, "None", count=1)
    [victim] = sim.faults.inject("efa_error", cluster=cluster).node_ids
    assert _status(sim, cluster, victim)["Status"] == "Failure"
    assert _labels(kube, eks, victim)[HEALTH] == "UnschedulablePendingReboot"
    assert _labels(kube, eks, victim)["sagemaker.amazonaws.com/fault-type"] == "NetworkHealth"
    assert [e["reason"] for e in _node_events(kube, eks, victim)] == ["EfaError"]
    aws_client(sim, "sagemaker").batch_reboot_cluster_nodes(ClusterName=cluster, NodeIds=[victim])
    wait_for(lambda: _status(sim, cluster, victim)["Status"] == "Running", timeout=10)
    wait_for(lambda: _labels(kube, eks, victim)[HEALTH] == "Schedulable", timeout=5)
    assert "sagemaker.amazonaws.com/fault-type" not in _labels(kube, eks, victim)


def test_a_failing_deep_health_check_shows_only_when_it_runs(
    world: tuple[SimulatedAws, KubeWorld],
) -> None:
    sim, kube = world
    cluster, eks = _hyperpod(sim, "None", count=1)
    message = "Deep health check failed: EFA loopback bandwidth 12 GB/s, expected 90"
    [victim] = sim.faults.inject(
        "deep_health_check_failure", cluster=cluster, message=message
    ).node_ids
    assert _status(sim, cluster, victim)["Status"] == "Running"  # latent until checked
    sm = aws_client(sim, "sagemaker")
    sm.batch_reboot_cluster_nodes(ClusterName=cluster, NodeIds=[victim])
    wait_for(lambda: _status(sim, cluster, victim)["Status"] == "Running", timeout=10)
    assert _labels(kube, eks, victim)[HEALTH] == "Schedulable"  # a reboot does not reveal it
    sm.start_cluster_health_check(
        ClusterName=cluster,
        DeepHealthCheckConfigurations=[
            {"InstanceGroupName": "gpu", "DeepHealthChecks": ["InstanceStress"]}
        ],
    )
    assert _status(sim, cluster, victim)["Status"] == "DeepHealthCheckInProgress"
    wait_for(lambda: _status(sim, cluster, victim)["Status"] == "Failure", timeout=10)
    assert _status(sim, cluster, victim)["Message"] == message
    labels = _labels(kube, eks, victim)
    assert labels["sagemaker.amazonaws.com/deep-health-check-status"] == "Failed"
    assert labels[HEALTH] == "UnschedulablePendingReplacement"
    assert [e["reason"] for e in _node_events(kube, eks, victim)] == ["DeepHealthCheckFailed"]
