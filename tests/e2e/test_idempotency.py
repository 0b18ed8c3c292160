"""The retry rule over REST against the real stack (docs/operations.md, "Retries and
idempotency"): a request repeated with its Idempotency-Key answers its operation, running or
finished, before any live check; the simulator's call log shows the change was made once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, cluster_spec, unique


def _eks_creates(sim: SimulatedAws, name: str) -> list[dict[str, Any]]:
    return [c for c in sim.call_log("eks", "CreateCluster") if c["params"].get("name") == name]


def _updates(sim: SimulatedAws, cluster: str) -> list[dict[str, Any]]:
    return [
        c
        for c in sim.call_log("sagemaker", "UpdateCluster")
        if c["params"].get("ClusterName") == cluster
    ]


@pytest.fixture(scope="module")
def keyed_cluster(module_stack: RunningStack) -> Iterator[dict[str, Any]]:
    """A cluster created with an Idempotency-Key and waited for (deleted afterwards)."""
    api = module_stack.client
    name = unique("idem")
    spec = cluster_spec(api, name)
    key = str(uuid.uuid4())
    first = api.post("/api/v1/clusters", spec, headers={"Idempotency-Key": key})
    assert first.status_code == 202, first.text
    done = api.wait(first.json()["operation_id"], timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    yield {"name": name, "spec": spec, "key": key, "first": first.json()}
    deleted = api.delete(f"/api/v1/clusters/{name}")
    api.wait(deleted.json()["operation_id"], timeout=240)


def test_a_finished_cluster_create_retried_with_its_key_answers_its_operation(
    keyed_cluster: dict[str, Any], module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = module_stack.client
    name, spec, key = keyed_cluster["name"], keyed_cluster["spec"], keyed_cluster["key"]
    first = keyed_cluster["first"]
    assert first["created"] is True
    assert len(_eks_creates(sim_aws, name)) == 1

    # The EKS cluster now exists under that name: the retry still answers the create.
    again = api.post("/api/v1/clusters", spec, headers={"Idempotency-Key": key})
    assert again.status_code == 202, again.text
    assert again.json()["operation_id"] == first["operation_id"]
    assert again.json()["created"] is False
    assert again.headers["Location"] == first["status_url"]
    assert len(_eks_creates(sim_aws, name)) == 1

    # The same key with another body stays a conflict, naming the first operation.
    other = {**spec, "instance_groups": [{**spec["instance_groups"][0], "count": 1}]}
    conflict = api.post("/api/v1/clusters", other, headers={"Idempotency-Key": key})
    assert conflict.status_code == 409, conflict.text
    error = conflict.json()["error"]
    assert error["code"] == "idempotency_conflict"
    assert error["operation_id"] == first["operation_id"]

    # A new key is a new request: the name is taken (the live check, on the name field).
    fresh = api.post("/api/v1/clusters", spec, headers={"Idempotency-Key": str(uuid.uuid4())})
    assert fresh.status_code == 422, fresh.text
    assert fresh.json()["error"]["fields"][0]["rule"] == "name_available"
    # Without a key too (refused at once: the name is known here).
    unkeyed = api.post("/api/v1/clusters", spec)
    assert unkeyed.status_code == 409, unkeyed.text
    assert unkeyed.json()["error"]["code"] == "cluster_exists"
    assert len(_eks_creates(sim_aws, name)) == 1


def test_a_finished_scale_retried_with_its_key_answers_its_operation(
    keyed_cluster: dict[str, Any], module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = module_stack.client
    name = keyed_cluster["name"]
    path = f"/api/v1/clusters/{name}/instance-groups/gpu"
    key = str(uuid.uuid4())
    before = len(_updates(sim_aws, name))
    first = api.http.patch(path, json={"count": 3}, headers={"Idempotency-Key": key})
    assert first.status_code == 202, first.text
    assert first.json()["created"] is True
    done = api.wait(first.json()["operation_id"], timeout=120)
    assert done["status"] == "succeeded", done.get("error")
    assert len(_updates(sim_aws, name)) == before + 1

    # Another change since (to 2), then the first request's retry: its operation, not a third
    # scale (the group stays at 2, no UpdateCluster).
    second = api.http.patch(path, json={"count": 2})
    assert second.status_code == 202, second.text
    assert api.wait(second.json()["operation_id"], timeout=120)["status"] == "succeeded"
    updates = len(_updates(sim_aws, name))
    again = api.http.patch(path, json={"count": 3}, headers={"Idempotency-Key": key})
    assert again.status_code == 202, again.text
    assert again.json()["operation_id"] == first.json()["operation_id"]
    assert again.json()["created"] is False
    # Answered from the key alone: cluster-svc was not asked for a plan (no diff against the
    # group's 2, which is not what the retried operation did).
    assert "diff" not in again.json() and "noop" not in again.json()
    assert len(_updates(sim_aws, name)) == updates
    groups = api.get(f"/api/v1/clusters/{name}").json()["instance_groups"]
    assert {g["name"]: g["count"] for g in groups}["gpu"] == 2

    conflict = api.http.patch(path, json={"count": 4}, headers={"Idempotency-Key": key})
    assert conflict.status_code == 409, conflict.text
    assert conflict.json()["error"]["code"] == "idempotency_conflict"


def test_a_finished_bucket_create_retried_with_its_key_answers_its_operation(
    module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = module_stack.client
    name = unique("idem-bucket")
    key = str(uuid.uuid4())
    first = api.post("/api/v1/storage/buckets", {"name": name}, headers={"Idempotency-Key": key})
    assert first.status_code == 202, first.text
    assert api.wait(first.json()["operation_id"])["status"] == "succeeded"
    deleted = api.delete(f"/api/v1/storage/buckets/{name}", headers={"Idempotency-Key": key + "d"})
    assert api.wait(deleted.json()["operation_id"])["status"] == "succeeded"
    # The bucket is gone: the delete's retry still answers its operation (no 404).
    again = api.delete(f"/api/v1/storage/buckets/{name}", headers={"Idempotency-Key": key + "d"})
    assert again.status_code == 202, again.text
    assert again.json()["operation_id"] == deleted.json()["operation_id"]
    assert again.json()["created"] is False
    deletes = [
        c for c in sim_aws.call_log("s3", "DeleteBucket") if c["params"].get("Bucket") == name
    ]
    assert len(deletes) == 1
