"""Storage as a list of claims, end to end against the simulated AWS and Kubernetes: a bucket
and an FSx for Lustre file system made directly through boto3 (not Hyperpilot) are attached as
claims (dry run first, the file system's real MountName and DNSName in its PersistentVolume), a
new bucket is created for a third claim through the CLI; a job mounts the second bucket and the FSx where it
asks; bad mounts and FSx settings are refused with the field; a claim in use cannot be removed
(409 naming the job); a claim deleted with kubectl and a bucket deleted in S3 are
DriftDetected (refresh), the first restored by an operation (dry run first), the second accepted
(the claim forgotten); deleting the cluster leaves the pre-existing bucket and file system in
place (simulator inventory before and after)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.testing import aws_client
from tests.cli.conftest import Cli
from tests.e2e.conftest import TOKEN, Client, RunningStack, cluster_spec, unique

# Minutes of Chromium/cluster work: in `make reliability`, so `make test` stays under 30 minutes on 2 cores.
pytestmark = pytest.mark.slow


def _storage(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/storage"


def _added(api: Client, cluster: str, body: dict[str, Any]) -> dict[str, Any]:
    dry = api.post(_storage(cluster), body, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    accepted = api.post(_storage(cluster), body)
    assert accepted.status_code == 202, accepted.text
    done = api.wait(accepted.json()["operation_id"], timeout=90)
    assert done["status"] in ("succeeded", "noop"), done
    return dict(dry.json()["plan"])


def listed_type(api: Client, cluster: str) -> str:
    described = api.get(f"/api/v1/clusters/{cluster}").json()
    return str(described["spec"]["instance_groups"][0]["instance_type"])


def _file_system(sim_aws: SimulatedAws) -> dict[str, Any]:
    ec2 = aws_client(sim_aws, "ec2")
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    fsx = aws_client(sim_aws, "fsx")
    made = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=[subnet],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
    )["FileSystem"]
    deadline = time.monotonic() + 30
    while True:
        (found,) = fsx.describe_file_systems(FileSystemIds=[made["FileSystemId"]])["FileSystems"]
        if found["Lifecycle"] == "AVAILABLE":
            return dict(found)
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def test_claims_are_attached_mounted_guarded_and_outlive_the_cluster(
    running_stack: RunningStack, sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    api = running_stack.client
    cluster = unique("store")
    op = api.post("/api/v1/clusters", cluster_spec(api, cluster)).json()["operation_id"]
    assert api.wait(op, timeout=240)["status"] == "succeeded"

    s3 = aws_client(sim_aws, "s3")
    existing_bucket = unique("pre-data")
    s3.create_bucket(Bucket=existing_bucket)
    lustre = _file_system(sim_aws)
    lustre_id = lustre["FileSystemId"]
    mount_name = lustre["LustreConfiguration"]["MountName"]
    new_bucket = unique("made-data")

    # Refusals with the field, before anything is stored.
    for body, field in (
        ({"kind": "s3", "claim": "Bad_Name", "bucket": existing_bucket}, "claim"),
        ({"kind": "s3", "claim": "ghost", "bucket": unique("no-such")}, "storage.bucket"),
        ({"kind": "fsx", "claim": "ghost", "file_system_id": "fs-0123456789abcdef0"},
         "storage.file_system_id"),
        ({"kind": "fsx", "claim": "fast", "storage_capacity_gib": 1200,
          "per_unit_storage_throughput": 200}, "per_unit_storage_throughput"),
        ({"kind": "fsx", "claim": "fast", "storage_capacity_gib": 3000}, "storage_capacity_gib"),
        ({"kind": "fsx", "claim": "fast", "storage_capacity_gib": 2400,
          "deployment_type": "SCRATCH_2", "per_unit_storage_throughput": 125},
         "per_unit_storage_throughput"),
    ):  # fmt: skip
        refused = api.post(_storage(cluster), body, params={"dry_run": "true"})
        assert refused.status_code == 422, (body, refused.text)
        assert field in refused.text, refused.text

    # An existing bucket and an existing file system, attached; a new bucket, created.
    plan = _added(api, cluster, {"kind": "s3", "claim": "datasets", "bucket": existing_bucket})
    assert plan["calls"] == []  # nothing to create
    assert [o["kind"] for o in plan["objects"]] == ["PersistentVolume", "PersistentVolumeClaim"]
    plan = _added(api, cluster, {"kind": "fsx", "claim": "lustre", "file_system_id": lustre_id})
    assert mount_name in " ".join(plan["notes"])
    pv = plan["objects"][0]["body"]
    assert pv["spec"]["csi"]["volumeAttributes"] == {
        "dnsname": lustre["DNSName"],
        "mountname": mount_name,
    }
    # The third through the CLI (the real binary): dry run, then the change, then the list.
    cli = Cli(running_stack.stack.url, TOKEN, tmp_path / "config")
    attach = ("storage", "attach", "scratch", "--bucket", new_bucket, "--create", "-c", cluster)
    cli_dry = cli.run(*attach, "--dry-run", "-o", "json")
    assert cli_dry.returncode == 0, cli_dry.stderr
    assert '"CreateBucket"' in cli_dry.stdout
    made = cli.run(*attach, "--wait", "-o", "json")
    assert made.returncode == 0, made.stderr
    s3.head_bucket(Bucket=new_bucket)
    shown = cli.run("storage", "claims", "-c", cluster)
    assert shown.returncode == 0, shown.stderr
    assert "scratch" in shown.stdout and mount_name in shown.stdout

    listed = {c["claim"]: c for c in api.get(_storage(cluster)).json()}
    assert list(listed) == ["s3-claim", "datasets", "lustre", "scratch"]
    assert listed["s3-claim"]["source"] == "default"
    assert listed["datasets"]["source"] == "existing"
    assert listed["lustre"]["details"]["mount_name"] == mount_name
    assert listed["scratch"]["source"] == "created"
    assert all(c["status"] == "available" for c in listed.values())
    again = api.post(_storage(cluster), {"kind": "s3", "claim": "datasets", "bucket": new_bucket})
    assert again.status_code == 409 and again.json()["error"]["code"] == "claim_exists"

    # The claims as Kubernetes has them: bound, the FSx volume with the real mount name.
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    server = kube.api_server(cluster)
    for claim in ("datasets", "lustre", "scratch"):
        pvc = server.get("v1", "PersistentVolumeClaim", claim, "default")
        assert pvc is not None and pvc["status"]["phase"] == "Bound", pvc
    fsx_pv = server.get("v1", "PersistentVolume", listed["lustre"]["volume"])
    assert fsx_pv is not None
    assert fsx_pv["spec"]["csi"]["volumeHandle"] == lustre_id
    assert fsx_pv["spec"]["csi"]["volumeAttributes"]["mountname"] == mount_name

    # Workloads mount the claims they name; bad mounts are refused with the field.
    job = {
        "recipe": "pytorch",
        "name": "two-sources",
        "instance_group": "gpu",
        "script": "code/train.py",
        "args": ["--max_steps", "100000"],  # runs until cancelled
        "resources": {"gpus": 1},
    }
    jobs = f"/api/v1/clusters/{cluster}/jobs"
    for refused_volumes, field in (
        ([{"claim": "nowhere", "mount_path": "/data"}], "volumes.0.claim"),
        ([{"claim": "datasets", "mount_path": "data"}], "mount_path"),
        ([{"claim": "datasets", "mount_path": "/etc/data"}], "mount_path"),
        ([{"claim": "datasets", "mount_path": "/s3/data"}], "volumes"),
        ([{"claim": "datasets", "mount_path": "/a"}, {"claim": "datasets", "mount_path": "/b"}],
         "volumes"),
    ):  # fmt: skip
        refused = api.post(jobs, {**job, "volumes": refused_volumes}, params={"dry_run": "true"})
        assert refused.status_code == 422, (refused_volumes, refused.text)
        assert field in refused.text, refused.text

    volumes: list[dict[str, Any]] = [
        {"claim": "datasets", "mount_path": "/data"},
        {"claim": "lustre", "mount_path": "/fsx", "read_only": True},
    ]
    accepted = api.post(jobs, {**job, "volumes": volumes})
    assert accepted.status_code == 202, accepted.text
    submitted = api.wait(accepted.json()["operation_id"], timeout=60)
    assert submitted["status"] == "succeeded", submitted
    deadline = time.monotonic() + 60
    while (found := api.get(f"{jobs}/two-sources", params={"live": "false"}).json()).get(
        "status"
    ) != "running":
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    pod = server.get("v1", "Pod", "two-sources-pods-0", "default")
    assert pod is not None
    claims = {
        v["persistentVolumeClaim"]["claimName"]: v["name"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    }
    assert set(claims) == {"s3-claim", "datasets", "lustre"}
    mounts = {m["name"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert mounts[claims["datasets"]]["mountPath"] == "/data"
    assert mounts[claims["lustre"]]["mountPath"] == "/fsx"
    assert mounts[claims["lustre"]]["readOnly"] is True
    assert pod["status"]["phase"] == "Running"

    # An endpoint mounts claims too: its Deployment in the plan, an unknown claim refused.
    endpoint: dict[str, Any] = {
        "name": "serve-fsx",
        "instance_type": listed_type(api, cluster),
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
        "volumes": [{"claim": "lustre", "mount_path": "/models", "read_only": True}],
    }
    planned = api.post(
        "/api/v1/endpoints", endpoint, params={"cluster": cluster, "dry_run": "true"}
    )
    assert planned.status_code == 200, planned.text
    deployment = next(o for o in planned.json()["plan"]["objects"] if o["kind"] == "Deployment")
    template = deployment["body"]["spec"]["template"]["spec"]
    assert template["volumes"][0]["persistentVolumeClaim"]["claimName"] == "lustre"
    assert template["containers"][0]["volumeMounts"][0]["mountPath"] == "/models"
    unknown = {**endpoint, "volumes": [{"claim": "nowhere", "mount_path": "/models"}]}
    refused = api.post("/api/v1/endpoints", unknown, params={"cluster": cluster})
    assert refused.status_code == 422 and "volumes.0.claim" in refused.text, refused.text

    # A claim in use stays; the cluster's own claim goes only with the cluster.
    busy = api.delete(f"{_storage(cluster)}/datasets")
    assert busy.status_code == 409, busy.text
    assert busy.json()["error"]["code"] == "claim_in_use"
    assert "job two-sources" in busy.json()["error"]["message"]
    own = api.delete(f"{_storage(cluster)}/s3-claim")
    assert own.status_code == 409 and own.json()["error"]["code"] == "default_claim"
    assert api.delete(f"{_storage(cluster)}/nothing").status_code == 404

    cancelled = api.post(f"{jobs}/two-sources/cancel")
    assert api.wait(cancelled.json()["operation_id"])["status"] == "succeeded"
    dry = api.delete(f"{_storage(cluster)}/datasets", params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert dry.json()["plan"]["calls"] == []
    assert "stays" in " ".join(dry.json()["plan"]["notes"])
    removed = api.delete(f"{_storage(cluster)}/datasets")
    assert removed.status_code == 202, removed.text
    assert api.wait(removed.json()["operation_id"])["status"] == "succeeded"
    assert server.get("v1", "PersistentVolumeClaim", "datasets", "default") is None
    s3.head_bucket(Bucket=existing_bucket)  # found, so kept
    assert [c["claim"] for c in api.get(_storage(cluster)).json()] == [
        "s3-claim",
        "lustre",
        "scratch",
    ]

    # Drift: a claim deleted with kubectl and a created bucket deleted in S3 are
    # found by the watcher (refresh); the claim is restored (dry run first), the bucket accepted.
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps(server.kubeconfig()))
    kubectl = Path(sys.executable).parent / "kubectl"
    deleted_pvc = subprocess.run(
        [str(kubectl) if kubectl.exists() else "kubectl", "--kubeconfig", str(config),
         "delete", "pvc", "lustre", "-n", "default"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert deleted_pvc.returncode == 0, deleted_pvc.stderr
    s3.delete_bucket(Bucket=new_bucket)
    refreshed = api.post(f"/api/v1/clusters/{cluster}/refresh")
    assert refreshed.status_code == 200, refreshed.text
    drifted = {d["field"]: d for d in refreshed.json()["differences"]}
    assert drifted["storage.lustre.claim"]["actual"] == "absent"
    assert drifted["storage.scratch.bucket"] == {
        **drifted["storage.scratch.bucket"],
        "recorded": new_bucket,
        "actual": "absent",
    }
    events: list[dict[str, Any]] = []
    while rows := api.get(
        "/api/v1/events", params={"after": events[-1]["seq"] if events else 0, "limit": 1000}
    ).json():
        events += rows
    detected = [e["payload"] for e in events if e["type"] == "DriftDetected"]
    assert {"cluster": cluster, "field": "storage.lustre.claim"}.items() <= next(
        p for p in detected if p["field"] == "storage.lustre.claim"
    ).items()
    restore = f"/api/v1/clusters/{cluster}/drift/restore"
    dry = api.post(restore, {"field": "storage.lustre.claim"}, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert "PersistentVolumeClaim" in [o["kind"] for o in dry.json()["plan"]["objects"]]
    restored = api.post(restore, {"field": "storage.lustre.claim"})
    assert restored.status_code == 202, restored.text
    assert api.wait(restored.json()["operation_id"], timeout=60)["status"] == "succeeded"
    pvc = server.get("v1", "PersistentVolumeClaim", "lustre", "default")
    assert pvc is not None and pvc["status"]["phase"] == "Bound"
    accepted = api.post(
        f"/api/v1/clusters/{cluster}/drift/accept", {"fields": ["storage.scratch.bucket"]}
    )
    assert accepted.status_code == 200, accepted.text
    after_drift = api.post(f"/api/v1/clusters/{cluster}/refresh").json()
    assert after_drift["drifted"] is False, after_drift
    assert [c["claim"] for c in api.get(_storage(cluster)).json()] == ["s3-claim", "lustre"]

    # Deleting the cluster: what the claims created goes, what they found stays.
    before = sim_aws.inventory()
    assert lustre_id in before["fsx"] and existing_bucket in before["s3_buckets"]
    deleted = api.delete(f"/api/v1/clusters/{cluster}")
    done = api.wait(deleted.json()["operation_id"], timeout=240)
    assert done["status"] == "succeeded", done
    after = sim_aws.inventory()
    assert lustre_id in after["fsx"]
    assert existing_bucket in after["s3_buckets"]
    claims_stage = done["result"]["delete_claims"]
    assert claims_stage["kept"] == [lustre_id]
