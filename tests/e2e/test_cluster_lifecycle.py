"""The headline: one REST call builds VPC -> EKS -> dependencies -> HyperPod -> S3 storage in the
simulated world; the result is inspectable with boto3 and kubectl; delete leaves nothing behind."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack, unique

CREATE_STAGES = {
    "preflight",
    "network",
    "security_group",
    "compute_subnet",
    "eks_role",
    "execution_role",
    "bucket",
    "eks_cluster",
    "oidc_provider",
    "access_entries",
    "dependencies",
    "hyperpod_cluster",
    "storage",
    "fsx",
}


def _kubeconfig(sim: SimulatedAws, cluster: str, path: Path) -> Path:
    """A kubeconfig made the normal way: endpoint + CA from describe_cluster, an EKS token."""
    from cluster_svc.adapters.k8s import eks_token

    described = aws_client(sim, "eks").describe_cluster(name=cluster)["cluster"]
    import boto3

    token = eks_token(boto3.session.Session(region_name="us-east-1"), cluster, "us-east-1")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": described["endpoint"],
                    "certificate-authority-data": described["certificateAuthority"]["data"],
                },
            }
        ],
        "users": [{"name": "me", "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "me"}}],
        "current-context": cluster,
    }
    path.write_text(json.dumps(config))
    base64.b64decode(described["certificateAuthority"]["data"])
    return path


def _kubectl(config: Path, *args: str) -> Any:
    kubectl = Path(sys.executable).parent / "kubectl"
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(config), *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _spec(api: Any, name: str) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + 30
    while (answer := api.get("/api/v1/inspect/availability-zones")).status_code != 200:
        # cluster-svc answers inspect queries once it has connected to NATS
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)
    zones = answer.json()
    zone = zones[0]["zone_id"]
    offered = api.get(
        "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
    ).json()
    types = [t["instance_type"] for t in offered if zone in t["availability_zone_ids"]]
    instance_type = "ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0]
    return {
        "name": name,
        "availability_zone_id": zone,
        "instance_groups": [{"name": "gpu", "instance_type": instance_type, "count": 2}],
    }


def test_one_call_builds_a_working_cluster_and_delete_leaves_nothing(
    running_stack: RunningStack, sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    api = running_stack.client
    before = sim_aws.inventory()
    throttled_before = sim_aws.throttle.throttled
    name = unique("hp")
    spec = _spec(api, name)
    calls_before = len(sim_aws.changes())
    planned = api.post("/api/v1/clusters", spec, params={"dry_run": "true"})
    assert planned.status_code == 200, planned.text
    plan = planned.json()["plan"]
    assert plan["command"] == "CreateCluster" and not plan["noop"]
    assert ("sagemaker", "CreateCluster") in {(c["service"], c["operation"]) for c in plan["calls"]}
    assert len(sim_aws.changes()) == calls_before  # a dry run makes no mutating call
    assert (
        api.get("/api/v1/clusters").json() == []
        and api.get("/api/v1/operations").json()["items"] == []
    )
    accepted = api.post("/api/v1/clusters", spec)
    assert accepted.status_code == 202, accepted.text
    op = api.wait(accepted.json()["operation_id"], timeout=240)
    assert op["status"] == "succeeded", json.dumps(op.get("error"), indent=1)
    stages = {s["name"]: s["status"] for s in op["stages"]}
    assert set(stages) == CREATE_STAGES
    assert all(status in ("succeeded", "noop") for status in stages.values()), stages
    assert stages["fsx"] == "noop"  # not asked for
    types = [e["type"] for e in op["events"]]
    assert types.count("StageSucceeded") == len(CREATE_STAGES)
    assert "StageProgress" in types and types[-2:] == ["ClusterCreated", "OperationSucceeded"]

    described = api.get(f"/api/v1/clusters/{name}").json()
    assert described["status"] == "active" and described["active"] is True
    assert described["instance_groups"][0]["count"] == 2
    assert {c["status"] for c in described["components"]} <= {"installed", "upgraded", "unchanged"}

    eks = aws_client(sim_aws, "eks").describe_cluster(name=name)["cluster"]
    assert eks["status"] == "ACTIVE"
    hyperpod = aws_client(sim_aws, "sagemaker").describe_cluster(ClusterName=name)
    assert hyperpod["ClusterStatus"] == "InService"
    assert hyperpod["NodeRecovery"] == "Automatic"
    assert hyperpod["Orchestrator"]["Eks"]["ClusterArn"] == eks["arn"]
    assert [g["CurrentCount"] for g in hyperpod["InstanceGroups"]] == [2]
    assert len(sim_aws.call_log("eks", "CreateCluster")) >= 1

    config = _kubeconfig(sim_aws, name, tmp_path / "kubeconfig")
    namespaces = {n["metadata"]["name"] for n in _kubectl(config, "get", "namespaces")["items"]}
    assert {"kube-system", "default"} <= namespaces
    pvc = _kubectl(config, "get", "pvc", "s3-claim", "-n", "default")
    assert pvc["status"]["phase"] == "Bound"
    nodes = _kubectl(config, "get", "nodes", "-l", "sagemaker.amazonaws.com/compute-type=hyperpod")[
        "items"
    ]
    assert len(nodes) == 2
    assert {
        n["metadata"]["labels"]["sagemaker.amazonaws.com/instance-group-name"] for n in nodes
    } == {"gpu"}
    deployments = _kubectl(config, "get", "deployments", "--all-namespaces")["items"]
    assert deployments, "the dependency reconciliation installed no operator"

    # Reconciling the dependencies again changes nothing: a noop, and no add-on call.
    addon_calls = len(sim_aws.call_log("eks", "CreateAddon")) + len(
        sim_aws.call_log("eks", "UpdateAddon")
    )
    reconcile = api.post(f"/api/v1/clusters/{name}/dependencies/reconcile")
    assert reconcile.status_code == 202, reconcile.text
    again = api.wait(reconcile.json()["operation_id"])
    assert again["status"] == "noop", json.dumps(again.get("error"), indent=1)
    assert (
        len(sim_aws.call_log("eks", "CreateAddon")) + len(sim_aws.call_log("eks", "UpdateAddon"))
        == addon_calls
    )
    listed = api.get(f"/api/v1/clusters/{name}/dependencies").json()
    assert len(listed) >= 10 and {c["status"] for c in listed} == {"unchanged"}

    plan = api.delete(f"/api/v1/clusters/{name}", params={"dry_run": "true"}).json()["plan"]
    planned_deletes = {(c["service"], c["operation"]) for c in plan["calls"]}
    assert {
        ("eks", "DeleteCluster"),
        ("sagemaker", "DeleteCluster"),
        ("ec2", "DeleteVpc"),
    } <= planned_deletes
    deleted = api.delete(f"/api/v1/clusters/{name}")
    assert deleted.status_code == 202, deleted.text
    op = api.wait(deleted.json()["operation_id"], timeout=240)
    assert op["status"] == "succeeded", json.dumps(op.get("error"), indent=1)
    assert api.get(f"/api/v1/clusters/{name}").status_code == 404
    after = sim_aws.inventory()
    leftovers = {
        kind: sorted(set(after.get(kind, [])) - set(before.get(kind, []))) for kind in after
    }
    assert not any(leftovers.values()), leftovers
    # The whole build and teardown stayed under AWS's published request rates: the simulator,
    # which throttles beyond them (sim/aws/throttle.py), never had to.
    assert sim_aws.throttle.throttled == throttled_before


def test_insufficient_capacity_fails_its_stage_and_a_retry_finishes_without_redoing_the_rest(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    from sim.testing import inject_fault

    api = running_stack.client
    name = unique("cap")
    spec = _spec(api, name)
    instance_type = spec["instance_groups"][0]["instance_type"]
    with inject_fault(sim_aws, "insufficient_capacity", instance_type=instance_type, times=None):
        op_id = api.post("/api/v1/clusters", spec).json()["operation_id"]
        failed = api.wait(op_id, timeout=240)
    assert failed["status"] == "failed"
    error = failed["error"]
    assert error["stage"] == "hyperpod_cluster"
    assert error["code"] == "InsufficientInstanceCapacity" and "ml." in error["message"], error
    assert error["hint"] and (
        "zone" in error["hint"].lower() or "training plan" in error["hint"].lower()
    ), error
    stages = {s["name"]: s["status"] for s in failed["stages"]}
    assert stages["hyperpod_cluster"] == "failed" and stages["eks_cluster"] == "succeeded"
    assert error["failed_stages"] == ["hyperpod_cluster"]
    assert stages["storage"] == "succeeded"  # independent of HyperPod, it went on
    assert api.get(f"/api/v1/clusters/{name}").json()["status"] == "failed"

    retried = api.post(f"/api/v1/operations/{op_id}/retry").json()
    assert retried["retried_stages"] == ["hyperpod_cluster"]
    done = api.wait(op_id, timeout=240)
    assert done["status"] == "succeeded", json.dumps(done.get("error"), indent=1)
    # The same retry again (a transport retry, say) answers it: not a 409, and no new attempt.
    again = api.post(f"/api/v1/operations/{op_id}/retry")
    assert again.status_code == 202, again.text
    assert again.json()["retried_stages"] == ["hyperpod_cluster"]
    assert api.get(f"/api/v1/operations/{op_id}").json()["status"] == "succeeded"
    attempts = {s["name"]: s["attempts"] for s in done["stages"]}
    assert attempts["hyperpod_cluster"] == 2
    assert all(n == 1 for stage, n in attempts.items() if stage != "hyperpod_cluster"), attempts
    eks_creates = [
        c for c in sim_aws.call_log("eks", "CreateCluster") if c["params"].get("name") == name
    ]
    assert len(eks_creates) == 1
    assert (
        aws_client(sim_aws, "sagemaker").describe_cluster(ClusterName=name)["ClusterStatus"]
        == "InService"
    )
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


def test_decision_grade_validation_before_anything_is_created(running_stack: RunningStack) -> None:
    api = running_stack.client
    name = unique("bad")
    spec = _spec(api, name)
    spec["instance_groups"][0]["count"] = 10_000
    refused = api.post("/api/v1/clusters", spec)
    assert refused.status_code == 422
    fields = {f["field"]: f for f in refused.json()["error"]["fields"]}
    assert any(
        f.startswith("instance_groups[0]") or f.startswith("instance_groups.0") for f in fields
    ), fields
    spec["instance_groups"][0]["count"] = 1
    spec["availability_zone_id"] = "use1-az99"
    refused = api.post("/api/v1/clusters", spec)
    assert refused.status_code == 422, refused.text
    assert api.get("/api/v1/clusters").json() == []
    assert api.get("/api/v1/operations").json()["items"] == []


def test_import_switch_and_forget_an_existing_cluster(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    eks = aws_client(sim_aws, "eks")
    iam = aws_client(sim_aws, "iam")
    ec2 = aws_client(sim_aws, "ec2")
    name = unique("outside")
    role = iam.create_role(
        RoleName=f"{name}-role",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "eks.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )["Role"]["Arn"]
    vpc = ec2.create_vpc(CidrBlock="10.50.0.0/16")["Vpc"]["VpcId"]
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    subnets = [
        ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.50.{i}.0/24", AvailabilityZone=zones[i]["ZoneName"]
        )["Subnet"]["SubnetId"]
        for i in range(2)
    ]
    eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
    import time

    deadline = time.monotonic() + 60
    while eks.describe_cluster(name=name)["cluster"]["status"] != "ACTIVE":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    before = sim_aws.inventory()

    op_id = api.post("/api/v1/clusters/import", {"eks_cluster_name": name}).json()["operation_id"]
    assert api.wait(op_id)["status"] == "succeeded"
    imported = api.get(f"/api/v1/clusters/{name}").json()
    assert imported["status"] == "imported" and imported["managed"] is False
    assert imported["endpoint"]

    switched = api.http.put("/api/v1/clusters/active", json={"name": name})
    assert switched.status_code == 200 and switched.json()["active"] is True
    assert api.get("/api/v1/clusters/active").json()["name"] == name
    missing = api.http.put("/api/v1/clusters/active", json={"name": "no-such-cluster"})
    assert missing.status_code == 404

    op_id = api.delete(f"/api/v1/clusters/{name}").json()["operation_id"]
    assert api.wait(op_id)["status"] in ("succeeded", "noop")
    assert api.get(f"/api/v1/clusters/{name}").status_code == 404
    assert sim_aws.inventory() == before  # an imported cluster is forgotten, never touched
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE"


def test_cancel_stops_a_cluster_creation_and_delete_cleans_up_what_it_made(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    import time

    api = running_stack.client
    before = sim_aws.inventory()
    name = unique("cancel")
    op_id = api.post("/api/v1/clusters", _spec(api, name)).json()["operation_id"]
    deadline = time.monotonic() + 60
    while not any(
        e["type"] == "StageSubmitted" and e["payload"]["stage"] == "eks_cluster"
        for e in api.get("/api/v1/events", params={"operation_id": op_id}).json()
    ):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    cancelled = api.post(f"/api/v1/operations/{op_id}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelling"
    op = api.wait(op_id)
    assert op["status"] == "cancelled"
    stages = {s["name"]: s["status"] for s in op["stages"]}
    assert stages["hyperpod_cluster"] == "pending"  # never started
    # The same caller's cancel again is its retry (answered, not asked twice); anyone else's
    # cancel now is a new request, and there is nothing left to cancel.
    repeated = api.post(f"/api/v1/operations/{op_id}/cancel")
    assert repeated.status_code == 202 and repeated.json()["status"] == "cancelled"
    requests = [
        e["type"]
        for e in api.get("/api/v1/events", params={"operation_id": op_id}).json()
        if e["type"] == "CancelRequested"
    ]
    assert requests == ["CancelRequested"]
    token = api.post("/api/v1/tokens", {"name": f"op-{name}", "role": "operator"}).json()["token"]
    other = Client(running_stack.stack.url, token)
    assert other.post(f"/api/v1/operations/{op_id}/cancel").status_code == 409
    op_id = api.delete(f"/api/v1/clusters/{name}").json()["operation_id"]
    assert api.wait(op_id, timeout=240)["status"] == "succeeded"
    after = sim_aws.inventory()
    leftovers = {
        kind: sorted(set(after.get(kind, [])) - set(before.get(kind, []))) for kind in after
    }
    assert not any(leftovers.values()), leftovers


def test_delete_with_features_still_on_leaves_nothing_behind(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    before = sim_aws.inventory()
    name = unique("feat")
    op = api.wait(
        api.post("/api/v1/clusters", _spec(api, name)).json()["operation_id"], timeout=240
    )
    assert op["status"] == "succeeded", op.get("error")
    changed = api.http.patch(
        f"/api/v1/clusters/{name}/features",
        json={"tiered_checkpointing": {"enabled": True, "memory_percentage": 30}},
    )
    assert changed.status_code == 202, changed.text
    assert api.wait(changed.json()["operation_id"], timeout=120)["status"] == "succeeded"
    roles = aws_client(sim_aws, "iam").list_roles()["Roles"]
    assert any(r["RoleName"].endswith("-ckpt") and name in r["RoleName"] for r in roles)

    deleted = api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)
    assert deleted["status"] == "succeeded", deleted.get("error")
    assert {s["name"]: s["status"] for s in deleted["stages"]}[
        "delete_feature_roles"
    ] == "succeeded"
    after = sim_aws.inventory()
    leftovers = {
        kind: sorted(set(after.get(kind, [])) - set(before.get(kind, []))) for kind in after
    }
    assert not any(leftovers.values()), leftovers
