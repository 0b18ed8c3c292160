"""The node adapter with unmodified boto3 and kubernetes clients against the simulator, and the
reboot workflow's stages driving it: 30 nodes are two batch calls of 25 and 5."""

from __future__ import annotations

import asyncio

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.hyperpod_nodes import HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.domain.nodes.actions import action_workflow
from cluster_svc.domain.nodes.health import join_nodes
from shared.contracts.nodes import RebootNodes
from shared.errors import PermanentError
from shared.stages import Done, Submitted
from sim.aws import SimulatedAws
from sim.testing import inject_fault
from tests.nodes.conftest import NODE_COUNT, HyperPodCluster
from tests.nodes.fakes import context


@pytest.fixture
def port(sim: SimulatedAws) -> HyperPodNodes:
    return HyperPodNodes(AwsClients("us-east-1", sim.endpoint_url), EksKubeFactory("us-east-1"))


async def test_nodes_and_their_kubernetes_side_are_read(
    port: HyperPodNodes, hyperpod: HyperPodCluster
) -> None:
    nodes = await port.list_nodes(hyperpod.arn)
    assert len(nodes) == NODE_COUNT
    assert all(n.status == "Running" and n.logical_id for n in nodes)
    access = await port.eks_access(hyperpod.name)
    kube = await port.kube_nodes(access)
    assert {k.instance_id for k in kube} == {n.node_id for n in nodes}
    assert all(k.conditions["Ready"] == "True" for k in kube)
    assert {k.labels["sagemaker.amazonaws.com/node-health-status"] for k in kube} == {"Schedulable"}
    views = join_nodes(nodes, kube, "None")
    assert {v["health"] for v in views} == {"healthy"}
    details = await port.describe_node(hyperpod.arn, nodes[0].node_id)
    assert details is not None and details["InstanceId"] == nodes[0].node_id
    assert await port.describe_node(hyperpod.arn, "i-00000000000000000") is None


async def test_a_failed_node_shows_in_both_worlds_and_in_its_events(
    sim: SimulatedAws, port: HyperPodNodes, hyperpod: HyperPodCluster
) -> None:
    victim = (await port.list_nodes(hyperpod.arn))[-1].node_id
    with inject_fault(sim, "node_failure", cluster=hyperpod.arn, node_ids=[victim]):
        pass
    access = await port.eks_access(hyperpod.name)
    for _ in range(50):
        nodes = await port.list_nodes(hyperpod.arn)
        view = next(
            v
            for v in join_nodes(nodes, await port.kube_nodes(access), "None")
            if v["node_id"] == victim
        )
        if view["kubernetes"]["conditions"]["Ready"] != "True":
            break
        await asyncio.sleep(0.1)
    assert view["instance_status"] == "Failure" and view["health"] == "unhealthy"
    assert view["kubernetes"]["health_status"].startswith("Unschedulable")
    events = await port.node_events(hyperpod.arn, victim)
    assert any("failed health checks" in e["description"] for e in events)
    recovery = await port.node_recovery(hyperpod.arn)
    assert recovery is not None and recovery.mode == "None"

    answer = await port.batch("replace", hyperpod.arn, [victim, "i-0000000000000000f"])
    assert answer.successful == [victim]
    assert answer.failed["i-0000000000000000f"]["code"] == "InstanceIdNotFound"
    with pytest.raises(ValueError):
        await port.batch("reboot", hyperpod.arn, [f"i-{i:017x}" for i in range(26)])


async def test_rebooting_thirty_nodes_is_two_batches_with_per_node_results(
    sim: SimulatedAws, port: HyperPodNodes, hyperpod: HyperPodCluster
) -> None:
    for _ in range(100):  # the replacement of the previous test is Running
        nodes = await port.list_nodes(hyperpod.arn)
        if all(n.status == "Running" for n in nodes):
            break
        await asyncio.sleep(0.1)
    ids = [n.node_id for n in nodes]
    before = len(sim.call_log("sagemaker", "BatchRebootClusterNodes"))
    act, verify = action_workflow(port, "reboot").stages
    command = RebootNodes(
        cluster="c", region="us-east-1", hyperpod_cluster=hyperpod.arn, node_ids=ids
    ).model_dump(mode="json")
    submitted = await act.run(context(command))
    assert isinstance(submitted, Submitted)
    calls = sim.call_log("sagemaker", "BatchRebootClusterNodes")[before:]
    assert [len(c["params"]["NodeIds"]) for c in calls] == [25, 5]
    assert act.poll is not None
    for _ in range(100):
        polled = await act.poll(context(command, own=submitted.outputs))
        if isinstance(polled, Done):
            break
        await asyncio.sleep(0.1)
    assert isinstance(polled, Done)
    assert {r["status"] for r in polled.outputs["results"].values()} == {"rebooted"}
    verified = await verify.run(context(command, outputs={"reboot_nodes": polled.outputs}))
    assert isinstance(verified, Done) and not verified.noop


async def test_node_recovery_round_trip_and_a_missing_cluster(
    sim: SimulatedAws, port: HyperPodNodes, hyperpod: HyperPodCluster
) -> None:
    await port.set_node_recovery(hyperpod.arn, "Automatic")
    last = sim.call_log("sagemaker", "UpdateCluster")[-1]["params"]
    assert set(last) == {"ClusterName", "NodeRecovery"}
    for _ in range(100):
        recovery = await port.node_recovery(hyperpod.arn)
        if recovery is not None and recovery.status == "InService":
            break
        await asyncio.sleep(0.1)
    assert recovery is not None and recovery.mode == "Automatic"
    await port.set_node_recovery(hyperpod.arn, "None")
    assert await port.node_recovery("no-such-cluster") is None
    with pytest.raises(PermanentError) as raised:
        await port.list_nodes("no-such-cluster")
    assert raised.value.code == "ResourceNotFound" and raised.value.hint
