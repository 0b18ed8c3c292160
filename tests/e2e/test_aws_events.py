"""Stage waits end on SageMaker HyperPod's EventBridge events (cluster-svc's SQS queue), with
two cluster-svc replicas; without the queue they poll as before. A node health event has the
node watcher record the node's new health at once, its next pass minutes away."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, _stack, cluster_spec, unique

# Two stacks with two replicas each, cluster creations: in `make reliability`, so that `make test` stays under 30 minutes on 2 cores.
pytestmark = pytest.mark.slow

# The backoff alone would first poll 4 s after the submit, then 6 s later: a HyperPod
# creation of the fast profile (2 s) ends its wait within that only if the event ends it.
SLOW_POLLS = {
    "POLL_INITIAL_SECONDS": "4",
    "POLL_MAX_SECONDS": "600",
    "POLL_MAX_EVENTED_SECONDS": "600",
}
# The node watcher passes once at start (no cluster yet), then not for 10 minutes: only an
# event can make it record the cluster's nodes within the test. Its budget is the default (28
# calls per cluster-hour): the create's and the scale-up's reads spend the burst, and the
# failure's read goes on credit (down to an hour's budget of debt), so it is not delayed.
SLOW_NODE_WATCH = {**SLOW_POLLS, "NODE_WATCH_SECONDS": "600"}


def _stage_seconds(op: dict[str, Any], stage: str) -> float:
    events = [e for e in op["events"] if e["payload"].get("stage") == stage]
    at = {e["type"]: datetime.fromisoformat(e["occurred_at"]) for e in events}
    return (at["StageSucceeded"] - at["StageSubmitted"]).total_seconds()


def _create(running: RunningStack) -> tuple[str, dict[str, Any]]:
    api = running.client
    name = unique("ev")
    op = api.post("/api/v1/clusters", cluster_spec(api, name)).json()["operation_id"]
    done = api.wait(op, timeout=300)
    assert done["status"] == "succeeded", done.get("error")
    return name, done


def _delete(running: RunningStack, name: str) -> None:
    api = running.client
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=300)


def _recorded_node(running: RunningStack, name: str, node_id: str) -> dict[str, Any] | None:
    answer = running.client.get(f"/api/v1/clusters/{name}/nodes", params={"source": "recorded"})
    assert answer.status_code == 200, answer.text
    return next((n for n in answer.json()["nodes"] if n["node_id"] == node_id), None)


def _seconds_until(probe: Any, timeout: float) -> float:
    """Seconds until `probe()` is true; `timeout` + 1 if it is not true by then."""
    started = time.monotonic()
    while not probe():
        if time.monotonic() - started > timeout:
            return timeout + 1
        time.sleep(0.05)
    return time.monotonic() - started


def _logs(running: RunningStack) -> str:
    return "".join(
        p.read_text(errors="replace") for p in running.stack.state_dir.glob("cluster-svc*.log")
    )


@pytest.fixture
def no_queue(sim_aws: SimulatedAws) -> Iterator[None]:
    fault = sim_aws.faults.inject(
        "error", service="sqs", operation="CreateQueue", times=None, code="AccessDenied",
        message="User is not authorized to perform: sqs:createqueue", status=403,
    )  # fmt: skip
    yield
    sim_aws.faults.clear(fault.id)


def test_a_hyperpod_wait_ends_on_its_event_with_two_replicas(
    tmp_path: Path, database_url: str, sim_aws: SimulatedAws
) -> None:
    with _stack(tmp_path, database_url, sim_aws, env=SLOW_NODE_WATCH) as running:
        running.stack.start_replica("cluster-svc", 2)
        deadline = time.monotonic() + 30
        while _logs(running).count("aws event queue read") < 2:
            assert time.monotonic() < deadline, _logs(running)[-3000:]
            time.sleep(0.2)
        fast = sim_aws.ctx.profile
        name, op = _create(running)
        try:
            # The simulated creation takes 2 s; the first poll would come at 4 s, the next at
            # 10 s: the event ended the wait.
            assert _stage_seconds(op, "hyperpod_cluster") < 3.9, _stage_seconds(
                op, "hyperpod_cluster"
            )
            # EKS sends no cluster state change: its wait polled (first poll at 4 s).
            assert _stage_seconds(op, "eks_cluster") >= 3.9

            # A scale-up (UpdateCluster: Updating for 1 s, then InService): the state change
            # ends its wait on the cluster's ARN too.
            api = running.client
            scaled = api.http.patch(
                f"/api/v1/clusters/{name}/instance-groups/gpu", json={"count": 3}
            )
            assert scaled.status_code == 202, scaled.text
            done = api.wait(scaled.json()["operation_id"], timeout=120)
            assert done["status"] == "succeeded", done.get("error")
            assert _stage_seconds(done, "update_group") < 3.9, _stage_seconds(done, "update_group")

            # A node fails: HyperPod's node health event has a node watcher read the cluster
            # at once (its AWS and Kubernetes sides); no pass of its own is due for minutes.
            # (Typically well under a second: bench/status_lag.py measures it; the bound
            # here leaves room for a loaded machine.)
            arn = str(api.get(f"/api/v1/clusters/{name}").json()["hyperpod_cluster_arn"])
            # The replacement takes 3 s here, not the fast profile's 1 s: the watcher's first
            # read of this cluster is the event's, and under load it has taken more than a
            # second, by when the failed node was already replaced and never seen failing.
            sim_aws.ctx.profile = dataclasses.replace(fast, node_replace=3.0)
            victim = sim_aws.faults.inject("node_failure", cluster=arn).node_ids[0]

            seen: list[Any] = []

            def failed() -> bool:
                node = _recorded_node(running, name, victim)
                kube = (node or {}).get("kubernetes") or {}
                seen.append(
                    (
                        time.monotonic(),
                        node
                        and (node["instance_status"], node["health"], kube.get("health_status")),
                    )
                )
                # Failure, or already Pending its replacement (NodeRecovery=Automatic: 0.75 s
                # after the failure here), on both sides
                return (
                    node is not None
                    and node["instance_status"] != "Running"
                    and node["health"] != "healthy"
                    and kube.get("health_status", "Schedulable") != "Schedulable"
                )

            assert _seconds_until(failed, 5.0) < 5.0, seen

            # NodeRecovery=Automatic replaces it in 3 s (as set above): the node, healthy
            # again under a new instance id, is recorded on its node health event too.
            def replaced() -> bool:
                answer = api.get(f"/api/v1/clusters/{name}/nodes", params={"source": "recorded"})
                nodes = answer.json()["nodes"]
                return (
                    len(nodes) == 3
                    and victim not in {n["node_id"] for n in nodes}
                    and all(n["health"] == "healthy" for n in nodes)
                )

            assert _seconds_until(replaced, 8.0) < 8.0
        finally:
            sim_aws.ctx.profile = fast
            _delete(running, name)


def test_without_the_queue_the_waits_poll_and_the_log_says_so(
    tmp_path: Path, database_url: str, sim_aws: SimulatedAws, no_queue: None
) -> None:
    with _stack(tmp_path, database_url, sim_aws, env=SLOW_POLLS) as running:
        deadline = time.monotonic() + 30
        while "aws event queue unavailable: stage waits poll only" not in _logs(running):
            assert time.monotonic() < deadline, _logs(running)[-3000:]
            time.sleep(0.2)
        name, op = _create(running)
        try:
            assert _stage_seconds(op, "hyperpod_cluster") >= 3.9  # polled: no event came
            assert "AccessDenied" in _logs(running)
        finally:
            _delete(running, name)
