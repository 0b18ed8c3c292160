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
from tests.e2e.conftest import RunningStack, unique

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
    from cluster_svc.adapters.k8s import EksTokens

    described = aws_client(sim, "eks").describe_cluster(name=cluster)["cluster"]
    import boto3

    token = EksTokens(boto3.session.Session(region_name="us-east-1"), cluster, "us-east-1").token()
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
    zones = api.get("/api/v1/inspect/availability-zones").json()
    zone = zones[0]["zone_id"]
    offered = api.get(
        "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
    ).json()
    types = [t["instance_type"] for t in offered if zone in t.get("zone_ids", [zone])]
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
    name = unique("hp")
    spec = _spec(api, name)
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
