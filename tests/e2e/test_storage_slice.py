"""The vertical slice through every layer: REST -> outbox -> NATS -> cluster-svc -> boto3 -> the
simulated AWS -> events in PostgreSQL -> REST and the live stream."""

from __future__ import annotations

import json
import time

import httpx

from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack, unique


def _creates(sim: SimulatedAws, bucket: str) -> int:
    return sum(1 for c in sim.call_log("s3", "CreateBucket") if c["params"].get("Bucket") == bucket)


def test_create_and_delete_a_bucket_through_every_layer(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    name = unique("slice")
    accepted = api.post("/api/v1/storage/buckets", {"name": name})
    assert accepted.status_code == 202
    body = accepted.json()
    assert body["status_url"] == f"/api/v1/operations/{body['operation_id']}"

    op = api.wait(body["operation_id"])
    assert op["status"] == "succeeded", op
    assert {s["name"]: s["status"] for s in op["stages"]} == {
        "bucket": "succeeded",
        "public_access": "succeeded",
        "encryption": "succeeded",
    }
    types = [e["type"] for e in op["events"]]
    assert types[:3] == ["OperationAccepted", "OperationStarted", "StageStarted"]
    assert types[-2:] == ["BucketCreated", "OperationSucceeded"]
    seqs = [e["seq"] for e in op["events"]]
    assert seqs == sorted(seqs)

    s3 = aws_client(sim_aws, "s3")
    s3.head_bucket(Bucket=name)
    rules = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert all(s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"].values())
    assert _creates(sim_aws, name) == 1

    listed = api.get("/api/v1/storage/buckets").json()
    assert any(b["name"] == name and b["status"] == "available" for b in listed)

    s3.put_object(Bucket=name, Key="models/x.bin", Body=b"weights")
    deleted = api.delete(f"/api/v1/storage/buckets/{name}")
    assert deleted.status_code == 202
    op = api.wait(deleted.json()["operation_id"])
    assert op["status"] == "succeeded"
    assert op["result"]["empty"] == {"objects_removed": 1}
    assert name not in sim_aws.inventory().get("s3_buckets", [])
    assert api.get(f"/api/v1/storage/buckets/{name}").status_code == 404


def test_the_same_idempotency_key_makes_one_operation_and_one_mutation(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    name = unique("idem")
    headers = {"Idempotency-Key": f"key-{name}"}
    first = api.post("/api/v1/storage/buckets", {"name": name}, headers=headers).json()
    second = api.post("/api/v1/storage/buckets", {"name": name}, headers=headers).json()
    assert first["operation_id"] == second["operation_id"]
    assert first["created"] is True and second["created"] is False
    assert api.wait(first["operation_id"])["status"] == "succeeded"
    third = api.post("/api/v1/storage/buckets", {"name": name}, headers=headers).json()
    assert third["operation_id"] == first["operation_id"]

    conflict = api.post("/api/v1/storage/buckets", {"name": name + "-other"}, headers=headers)
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "idempotency_conflict"
    assert _creates(sim_aws, name) == 1
    ops = api.get("/api/v1/operations", params={"target_id": name}).json()["items"]
    assert len(ops) == 1


def test_the_live_stream_delivers_every_event_and_resumes_from_a_sequence(
    running_stack: RunningStack,
) -> None:
    api = running_stack.client
    name = unique("stream")
    op_id = api.post("/api/v1/storage/buckets", {"name": name}).json()["operation_id"]
    api.wait(op_id)
    expected = [e["seq"] for e in api.get("/api/v1/events", params={"operation_id": op_id}).json()]

    def read(
        params: dict[str, str], headers: dict[str, str] | None = None
    ) -> list[dict[str, object]]:
        seen: list[dict[str, object]] = []
        with api.http.stream(
            "GET",
            "/api/v1/events/stream",
            params={**params, "operation_id": op_id},
            headers=headers,
            timeout=10,
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["type"] == "OperationSucceeded":
                        break
        return seen

    everything = read({"after": "0"})
    assert [e["seq"] for e in everything] == expected
    middle = expected[3]
    resumed = read({}, headers={"Last-Event-ID": str(middle)})
    assert [e["seq"] for e in resumed] == [s for s in expected if s > middle]


def test_events_arrive_live_while_the_operation_runs(running_stack: RunningStack) -> None:
    api = running_stack.client
    latest = api.get("/api/v1/events", params={"after": 0, "limit": 1000}).json()
    after = latest[-1]["seq"] if latest else 0
    name = unique("live")
    types: list[str] = []
    with api.http.stream(
        "GET", "/api/v1/events/stream", params={"after": after}, timeout=20
    ) as response:
        api.post("/api/v1/storage/buckets", {"name": name})
        for line in response.iter_lines():
            if line.startswith("event: "):
                types.append(line[7:])
                if types[-1] == "OperationSucceeded":
                    break
    assert types[0] == "OperationAccepted" and "BucketCreated" in types


def test_every_event_reaches_the_audit_log_with_its_principal(running_stack: RunningStack) -> None:
    api = running_stack.client
    op_id = api.post(
        "/api/v1/storage/buckets", {"name": unique("audit")}, headers={"X-Hyperpilot-Source": "cli"}
    ).json()["operation_id"]
    api.wait(op_id)
    events = api.get("/api/v1/events", params={"operation_id": op_id}).json()
    for _ in range(100):
        audit = api.get("/api/v1/audit", params={"operation_id": op_id}).json()
        if len(audit) == len(events):
            break
        import time

        time.sleep(0.05)
    assert {a["event_id"] for a in audit} == {e["event_id"] for e in events}
    assert {a["principal"] for a in audit} == {"admin"}
    assert audit[0]["source"] == "cli"


def test_health_readiness_metrics_and_openapi(running_stack: RunningStack) -> None:
    url = running_stack.stack.url
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {"postgres": "ok", "nats": "ok"}
    metrics = running_stack.client.get("/metrics")  # behind a token (viewer or above)
    assert "hyperpilot_http_request_seconds" in metrics.text
    spec = httpx.get(f"{url}/openapi.json").json()
    assert "/api/v1/storage/buckets" in spec["paths"]
    assert "/api/v1/operations/{operation_id}/retry" in spec["paths"]


def test_a_failed_stage_is_retried_alone_over_rest(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    from sim.testing import inject_fault

    api = running_stack.client
    name = unique("retry")
    with inject_fault(
        sim_aws,
        "error",
        service="s3",
        operation="PutBucketEncryption",
        times=None,
        code="AccessDenied",
        status=403,
    ):
        op_id = api.post("/api/v1/storage/buckets", {"name": name}).json()["operation_id"]
        failed = api.wait(op_id)
    assert failed["status"] == "failed"
    assert failed["error"]["stage"] == "encryption" and failed["error"]["code"] == "AccessDenied"
    stages = {s["name"]: s["status"] for s in failed["stages"]}
    assert stages == {"bucket": "succeeded", "public_access": "succeeded", "encryption": "failed"}

    retried = api.post(f"/api/v1/operations/{op_id}/retry")
    assert retried.status_code == 202 and retried.json()["retried_stages"] == ["encryption"]
    done = api.wait(op_id)
    assert done["status"] == "succeeded" and done["attempt"] == 2
    assert {s["name"]: s["attempts"] for s in done["stages"]} == {
        "bucket": 1,
        "public_access": 1,
        "encryption": 2,
    }
    assert _creates(sim_aws, name) == 1
    # The same retry again is answered (no second attempt); another caller's is a new request,
    # refused: the operation is not failed any more.
    again = api.post(f"/api/v1/operations/{op_id}/retry")
    assert again.status_code == 202 and again.json()["retried_stages"] == ["encryption"]
    assert api.get(f"/api/v1/operations/{op_id}").json()["attempt"] == 2
    token = api.post("/api/v1/tokens", {"name": f"op-{name}", "role": "operator"}).json()["token"]
    other = Client(running_stack.stack.url, token)
    assert other.post(f"/api/v1/operations/{op_id}/retry").status_code == 409


def test_dry_runs_answer_the_plan_and_change_nothing(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    name = unique("dry")
    deadline = time.monotonic() + 30
    # A plan is computed by cluster-svc, which answers once it has connected to NATS.
    while (
        planned := api.post("/api/v1/storage/buckets", {"name": name}, params={"dry_run": "true"})
    ).status_code == 503:
        assert time.monotonic() < deadline, planned.text
        time.sleep(0.1)
    assert planned.status_code == 200, planned.text
    plan = planned.json()["plan"]
    assert not plan["noop"] and plan["calls"][0]["operation"] == "CreateBucket"
    assert _creates(sim_aws, name) == 0 and api.get("/api/v1/operations").json()["items"] == []
    api.wait(api.post("/api/v1/storage/buckets", {"name": name}).json()["operation_id"])
    again = api.post("/api/v1/storage/buckets", {"name": name}, params={"dry_run": "true"}).json()[
        "plan"
    ]
    assert again["noop"] is True and again["calls"] == []
    deleting = api.delete(f"/api/v1/storage/buckets/{name}", params={"dry_run": "true"}).json()[
        "plan"
    ]
    assert [c["operation"] for c in deleting["calls"]] == ["DeleteObjects", "DeleteBucket"]
    assert name in sim_aws.inventory()["s3_buckets"]
