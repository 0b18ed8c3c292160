"""HyperPod's state changes reach the SQS queues of matching EventBridge rules, as AWS sends
them: the control plane's own rule and queue policy, made with raw botocore."""

from __future__ import annotations

import json
from typing import Any

from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for
from tests.sim_aws.conftest import Network, create_hyperpod, group_spec, nodes

STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"


def _queue(sim: SimulatedAws, name: str, pattern: dict[str, Any], *, allow: bool) -> str:
    sqs = aws_client(sim, "sqs")
    events = aws_client(sim, "events")
    url: str = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    rule = events.put_rule(Name=name, EventPattern=json.dumps(pattern))["RuleArn"]
    events.put_targets(Rule=name, Targets=[{"Id": "q", "Arn": arn}])
    if allow:
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "events.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": rule}},
                }
            ],
        }
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    return url


def _bodies(sim: SimulatedAws, url: str) -> list[dict[str, Any]]:
    sqs = aws_client(sim, "sqs")
    found: list[dict[str, Any]] = []
    while messages := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0
    ).get("Messages"):
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_a_cluster_creation_sends_its_state_changes_to_matching_rules_only(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    pattern = {"source": ["aws.sagemaker"], "detail-type": [STATE_CHANGE]}
    ours = _queue(sim, "events-ours", pattern, allow=True)
    no_policy = _queue(sim, "events-no-policy", pattern, allow=False)
    other = _queue(sim, "events-other", {"source": ["aws.eks"]}, allow=True)
    failed_before = sim.hyperpod.events.failed_invocations

    name = create_hyperpod(sim, network, eks_cluster)

    arn = aws_client(sim, "sagemaker").describe_cluster(ClusterName=name)["ClusterArn"]
    events = [e for e in _bodies(sim, ours) if e["resources"] == [arn]]
    assert [e["detail"]["ClusterStatus"] for e in events] == ["Creating", "InService"]
    last = events[-1]
    assert last["source"] == "aws.sagemaker" and last["detail-type"] == STATE_CHANGE
    assert last["account"] == sim.account_id and last["region"] == sim.region
    assert last["detail"]["ClusterName"] == name and last["detail"]["InstanceGroups"]
    assert last["time"].endswith("Z")
    # no policy for events.amazonaws.com: EventBridge cannot deliver (a failed invocation)
    assert _bodies(sim, no_policy) == []
    assert sim.hyperpod.events.failed_invocations >= failed_before + 2
    # a rule whose pattern does not match gets nothing
    assert _bodies(sim, other) == []


def test_a_node_failure_and_its_replacement_send_node_health_events(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    pattern = {"source": ["aws.sagemaker"], "detail-type": [NODE_HEALTH]}
    url = _queue(sim, "events-health", pattern, allow=True)
    name = create_hyperpod(
        sim, network, eks_cluster, [group_spec(network, count=2)], NodeRecovery="Automatic"
    )
    arn = aws_client(sim, "sagemaker").describe_cluster(ClusterName=name)["ClusterArn"]
    assert [e for e in _bodies(sim, url) if e["resources"] == [arn]] == []  # booted healthy

    failed = sim.faults.inject("node_failure", cluster=name).node_ids[0]
    unhealthy = [e for e in _bodies(sim, url) if e["resources"] == [arn]]
    assert len(unhealthy) == 1, unhealthy
    event = unhealthy[0]
    assert event["detail-type"] == NODE_HEALTH and event["region"] == sim.region
    detail = event["detail"]
    assert (detail["ClusterArn"], detail["ClusterName"], detail["InstanceId"]) == (
        arn,
        name,
        failed,
    )
    summary = detail["HealthSummary"]
    assert summary["HealthStatus"] == "Unhealthy" and summary["RepairAction"] == "Replace"
    assert summary["HealthStatusReason"] and summary["Recommendation"]

    # NodeRecovery=Automatic replaces it: the node is healthy again, under a new instance id
    wait_for(lambda: [n["InstanceStatus"]["Status"] for n in nodes(sim, name)] == ["Running"] * 2)
    healthy = [e for e in _bodies(sim, url) if e["resources"] == [arn]]
    assert [e["detail"]["HealthSummary"]["HealthStatus"] for e in healthy] == ["Healthy"]
    assert healthy[0]["detail"]["InstanceId"] != failed
    assert healthy[0]["detail"]["InstanceId"] in {n["InstanceId"] for n in nodes(sim, name)}


def test_a_deletion_sends_deleting_and_nothing_once_the_cluster_is_gone(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    """AWS documents no state after Deleting (ClusterStatus: Creating, Deleting, Failed,
    InService, RollingBack, SystemUpdating, Updating; API_DescribeCluster.html): a wait for the
    cluster to be gone cannot end on an event, it polls."""
    pattern = {"source": ["aws.sagemaker"], "detail-type": [STATE_CHANGE]}
    url = _queue(sim, "events-delete", pattern, allow=True)
    name = create_hyperpod(sim, network, eks_cluster)
    sm = aws_client(sim, "sagemaker")
    arn = sm.describe_cluster(ClusterName=name)["ClusterArn"]
    _bodies(sim, url)
    sm.delete_cluster(ClusterName=name)
    wait_for(lambda: name not in {c["ClusterName"] for c in sm.list_clusters()["ClusterSummaries"]})
    statuses = [e["detail"]["ClusterStatus"] for e in _bodies(sim, url) if e["resources"] == [arn]]
    assert statuses == ["Deleting"]
