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


def _operations(api: Any, target: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.get(
        "/api/v1/operations", params={"target_id": target}
    ).json()["items"]
    return items


def _accepted(answer: Any, *, created: bool) -> str:
    assert answer.status_code == 202, answer.text
    assert answer.json()["created"] is created, answer.text
    return str(answer.json()["operation_id"])


def test_job_submit_cancel_and_delete_retried_with_their_keys_answer_their_operations(
    keyed_cluster: dict[str, Any], module_stack: RunningStack
) -> None:
    api = module_stack.client
    cluster = keyed_cluster["name"]
    jobs = f"/api/v1/clusters/{cluster}/jobs"
    job = unique("retry")[:40]
    spec = {
        "recipe": "pytorch",
        "name": job,
        "instance_group": "gpu",
        "script": "code/train.py",
        "resources": {"gpus": 1},
    }
    key = str(uuid.uuid4())
    first = _accepted(api.post(jobs, spec, headers={"Idempotency-Key": key}), created=True)
    assert api.wait(first, timeout=60)["status"] == "succeeded"

    # The job exists now (a new submit of it would be a noop); the retry answers the submit,
    # from its key alone (no plan asked).
    again = api.post(jobs, spec, headers={"Idempotency-Key": key})
    assert _accepted(again, created=False) == first
    assert "diff" not in again.json() and "plan" not in again.json()
    other = api.post(jobs, {**spec, "script": "code/other.py"}, headers={"Idempotency-Key": key})
    assert other.status_code == 409, other.text
    assert other.json()["error"]["code"] == "idempotency_conflict"

    cancel_key, delete_key = key + "-cancel", key + "-delete"
    cancel = _accepted(
        api.post(f"{jobs}/{job}/cancel", headers={"Idempotency-Key": cancel_key}), created=True
    )
    assert api.wait(cancel, timeout=60)["status"] == "succeeded"
    retried = api.post(f"{jobs}/{job}/cancel", headers={"Idempotency-Key": cancel_key})
    assert _accepted(retried, created=False) == cancel

    delete = _accepted(
        api.delete(f"{jobs}/{job}", headers={"Idempotency-Key": delete_key}), created=True
    )
    assert api.wait(delete, timeout=60)["status"] == "succeeded"
    assert api.get(f"{jobs}/{job}").status_code == 404
    # The job is gone: the delete's retry (and the cancel's) still answer their operations.
    gone = api.delete(f"{jobs}/{job}", headers={"Idempotency-Key": delete_key})
    assert _accepted(gone, created=False) == delete
    late = api.post(f"{jobs}/{job}/cancel", headers={"Idempotency-Key": cancel_key})
    assert _accepted(late, created=False) == cancel
    # A new request is checked again: the job is not known any more.
    assert api.delete(f"{jobs}/{job}").status_code == 404

    # One operation per request, however often each was retried.
    assert sorted(op["id"] for op in _operations(api, f"{cluster}/{job}")) == sorted(
        [first, cancel, delete]
    )


def test_an_endpoint_change_back_to_an_earlier_value_is_a_new_request_and_its_repeat_a_retry(
    keyed_cluster: dict[str, Any], module_stack: RunningStack
) -> None:
    """The retry rule without an explicit request key (the MCP's `...:target` key): the same
    arguments on the same target by the same caller are a retry while nothing else happened
    there; after another change, the same arguments are a new request."""
    api = module_stack.client
    cluster = keyed_cluster["name"]
    params = {"cluster": cluster}
    name = unique("ep")[:40]
    instance_type = keyed_cluster["spec"]["instance_groups"][0]["instance_type"]
    body = {
        "name": name,
        "instance_type": instance_type,
        "gpus": 1,
        "replicas": 1,
        "service": "internal",
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    deploy_key = str(uuid.uuid4())
    deployed = api.post(
        "/api/v1/endpoints", body, params=params, headers={"Idempotency-Key": deploy_key}
    )
    deploy = _accepted(deployed, created=True)
    assert api.wait(deploy, timeout=90)["status"] == "succeeded"
    retried = api.post(
        "/api/v1/endpoints", body, params=params, headers={"Idempotency-Key": deploy_key}
    )
    assert _accepted(retried, created=False) == deploy

    scale = f"/api/v1/endpoints/{name}/scale"
    scoped = {"Idempotency-Key": f"scale-{uuid.uuid4()}:target"}
    to_two = _accepted(
        api.post(scale, {"replicas": 2}, params=params, headers=scoped), created=True
    )
    # A transport retry while (or after) it runs: the same operation, no second change.
    assert (
        _accepted(api.post(scale, {"replicas": 2}, params=params, headers=scoped), created=False)
        == to_two
    )
    assert api.wait(to_two, timeout=90)["status"] == "succeeded"
    assert (
        _accepted(api.post(scale, {"replicas": 2}, params=params, headers=scoped), created=False)
        == to_two
    )

    # Another change since (by the same caller, without a key): back to 1.
    to_one = _accepted(api.post(scale, {"replicas": 1}, params=params), created=True)
    assert api.wait(to_one, timeout=90)["status"] == "succeeded"
    # Now the same call as before is a new intent: a new operation, planned against 1.
    repeated = api.post(scale, {"replicas": 2}, params=params, headers=scoped)
    again = _accepted(repeated, created=True)
    assert again not in (to_two, to_one)
    assert repeated.json()["diff"] == {"replicas": {"actual": 1, "requested": 2}}
    assert api.wait(again, timeout=90)["status"] == "succeeded"

    delete_key = str(uuid.uuid4())
    deleted = api.delete(
        f"/api/v1/endpoints/{name}", params=params, headers={"Idempotency-Key": delete_key}
    )
    delete = _accepted(deleted, created=True)
    assert api.wait(delete, timeout=60)["status"] == "succeeded"
    # Gone: the delete's retry still answers its operation (no 404).
    gone = api.delete(
        f"/api/v1/endpoints/{name}", params=params, headers={"Idempotency-Key": delete_key}
    )
    assert _accepted(gone, created=False) == delete
    assert sorted(op["id"] for op in _operations(api, f"{cluster}/{name}")) == sorted(
        [deploy, to_two, to_one, again, delete]
    )
