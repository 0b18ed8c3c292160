"""Training through REST against the real stack and the simulated world: every recipe renders a
custom resource the emulator's schema accepts and whose pods run and log; validation answers 4xx
with the field; logs stream over WebSocket with no lost or repeated line; an injected pod fault
spends the retry budget and exhausting it fails the job with the reason; a Hugging Face token
is found nowhere in the database, the event stream or the services' logs; a model download whose
pod is killed mid-way resumes in the Job's next pod and reaches 100%; an elastic job starts with
the nodes it finds and grows and shrinks with its instance group; the diagnostics reads show a
failing pod's Warning events, its restarts and their reasons, and the log it wrote before it
restarted."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import websockets
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.k8s.server import ApiServer
from sim.testing import aws_client
from tests.e2e.conftest import TOKEN, Client, RunningStack

STEP = re.compile(r"^step (\d+)/(\d+) ")
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"


def _api_server(sim_aws: SimulatedAws, cluster: str) -> ApiServer:
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    return kube.api_server(cluster)


def _jobs(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/jobs"


def _wait_job(
    api: Client,
    cluster: str,
    job: str,
    ok: Callable[[dict[str, Any]], bool],
    timeout: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = api.get(f"{_jobs(cluster)}/{job}", params={"live": "false"})
        if found.status_code == 200 and ok(found.json()):
            return dict(found.json())
        assert time.monotonic() < deadline, f"job {job}: {found.text}"
        time.sleep(0.2)


def _submit(api: Client, cluster: str, spec: dict[str, Any]) -> dict[str, Any]:
    answer = api.post(_jobs(cluster), spec)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=60)
    assert op["status"] == "succeeded", json.dumps(op.get("error"))
    return dict(answer.json())


def _pytorch(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "recipe": "pytorch",
        "name": name,
        "instance_group": "gpu",
        "script": "code/train.py",
        "resources": {"gpus": 1},
        **extra,
    }


def test_pytorch_job_submit_list_describe_cancel_delete(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    spec = _pytorch("plain-ddp", replicas=2, run_policy={"job_max_retry_count": 2})

    dry = api.post(_jobs(cluster), spec, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    plan = dry.json()["plan"]
    assert plan["noop"] is False
    (obj,) = plan["objects"]
    assert (obj["api_version"], obj["kind"]) == ("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")
    body = obj["body"]
    assert body["spec"]["runPolicy"]["jobMaxRetryCount"] == 2
    template = body["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert template["nodeSelector"] == {"sagemaker.amazonaws.com/instance-group-name": "gpu"}
    assert template["volumes"][0]["persistentVolumeClaim"]["claimName"] == "s3-claim"
    assert api.get(f"{_jobs(cluster)}/plain-ddp").status_code == 404  # a dry run stores nothing

    accepted = _submit(api, cluster, spec)
    assert accepted["diff"] == {"job": {"actual": None, "requested": "plain-ddp"}}
    running = _wait_job(api, cluster, "plain-ddp", lambda j: j["status"] == "running")
    assert running["restart_budget"] == {"used": 0, "allowed": 2}

    described = api.get(f"{_jobs(cluster)}/plain-ddp").json()
    assert described["live"]["exists"] is True
    pods = [p["name"] for p in described["live"]["observed"]["pods"]]
    assert len(pods) == 2
    assert [j["name"] for j in api.get(_jobs(cluster)).json()].count("plain-ddp") == 1

    deadline = time.monotonic() + 20
    while "step 1/" not in (
        text := api.get(f"{_jobs(cluster)}/plain-ddp/logs", params={"pod": pods[0]}).text
    ):
        assert time.monotonic() < deadline, text
        time.sleep(0.2)

    again = api.post(_jobs(cluster), spec)
    assert again.status_code == 202 and again.json()["noop"] is True
    assert api.wait(again.json()["operation_id"])["status"] == "noop"

    cancelled = api.post(f"{_jobs(cluster)}/plain-ddp/cancel")
    assert cancelled.status_code == 202, cancelled.text
    assert api.wait(cancelled.json()["operation_id"])["status"] == "succeeded"
    assert api.get(f"{_jobs(cluster)}/plain-ddp").json()["status"] == "cancelled"
    assert api.get(f"{_jobs(cluster)}/plain-ddp").json()["live"]["exists"] is False
    types = [e["type"] for e in api.get(f"{_jobs(cluster)}/plain-ddp/events").json()]
    assert "JobSubmitted" in types and "JobCancelled" in types and "JobStatusChanged" in types

    deleted = api.delete(f"{_jobs(cluster)}/plain-ddp")
    assert deleted.status_code == 202
    assert api.wait(deleted.json()["operation_id"])["status"] == "succeeded"
    assert api.get(f"{_jobs(cluster)}/plain-ddp").status_code == 404


RECIPES: list[dict[str, Any]] = [
    {
        "recipe": "shell",
        "name": "shell-script",
        "instance_group": "gpu",
        "resources": {"gpus": 0},
        "body": 'echo "rank $NODE_RANK of $NNODES"\npython3 /s3/code/train.py --max_steps 500\n',
    },
    {
        "recipe": "ms-swift",
        "algorithm": "grpo",
        "name": "swift-grpo",
        "instance_group": "gpu",
        "resources": {"gpus": 0},
        "model": "models/Qwen2.5-0.5B",
        "dataset": "datasets/gsm8k",
        "reward_funcs": ["accuracy", "format"],
        "hyperparameters": {"batch_size": 2, "max_steps": 500},
    },
    {
        "recipe": "llama-factory",
        "name": "lf-sft",
        "instance_group": "gpu",
        "model": "models/Qwen2.5-0.5B",
        "dataset": "datasets/alpaca",
        "hyperparameters": {"batch_size": 2, "lora_rank": 16},
    },
    {
        "recipe": "ms-swift",
        "name": "swift-sft",
        "instance_group": "gpu",
        "model": "/s3/models/Qwen2.5-0.5B",
        "dataset": "datasets/alpaca",
        "mlflow_tracking_uri": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/t",
    },
    {
        "recipe": "verl",
        "name": "verl-grpo",
        "instance_group": "gpu",
        "replicas": 1,
        "model": "models/Qwen2.5-0.5B",
        "train_files": "datasets/gsm8k/train.parquet",
        "val_files": "datasets/gsm8k/test.parquet",
    },
]


def test_each_recipe_runs_and_logs(created_cluster: tuple[RunningStack, str]) -> None:
    stack, cluster = created_cluster
    api = stack.client
    for spec in RECIPES:
        _submit(api, cluster, spec)
    for spec in RECIPES:
        job = _wait_job(api, cluster, spec["name"], lambda j: j["status"] == "running")
        assert job["kind"] == ("RayJob" if spec["recipe"] == "verl" else "HyperPodPyTorchJob")
        live = api.get(f"{_jobs(cluster)}/{spec['name']}").json()["live"]
        pods = [p["name"] for p in live["observed"]["pods"] if p["phase"] == "Running"]
        assert pods, live
        deadline = time.monotonic() + 20
        while not api.get(
            f"{_jobs(cluster)}/{spec['name']}/logs", params={"pod": pods[0]}
        ).text.strip():
            assert time.monotonic() < deadline, f"{spec['name']}: pod {pods[0]} logs nothing"
            time.sleep(0.2)
        if spec["recipe"] == "verl":
            assert live["ray_dashboard"]["port_forward"].startswith("kubectl port-forward")
    for spec in RECIPES:
        op = api.delete(f"{_jobs(cluster)}/{spec['name']}").json()["operation_id"]
        assert api.wait(op)["status"] == "succeeded"


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"instance_group": "nope"}, 422, "instance_group"),
        ({"resources": {"gpus": 4}}, 422, "resources.gpus"),
        ({"resources": {"gpus": 1, "efa": 8}}, 422, "resources.efa"),
        ({"replicas": 9}, 422, "replicas"),
        # checked by the contract itself (the field path carries the recipe's tag)
        ({"replicas": 3, "elastic": {"min_replicas": 1, "max_replicas": 2}}, 422, "pytorch"),
        ({"script": "../etc/passwd"}, 422, "pytorch.script"),
        (
            {
                "run_policy": {"job_max_retry_count": 0},
                "elastic": {"min_replicas": 1, "max_replicas": 2},
            },
            422,
            "pytorch",
        ),
        ({"nproc_per_node": 8}, 422, "nproc_per_node"),
        (
            {"elastic": {"min_replicas": 1, "max_replicas": 2, "scaling_timeout_seconds": -5}},
            422,
            "pytorch.elastic.scaling_timeout_seconds",
        ),
    ],
)
def test_rules_refuse_with_the_field(
    created_cluster: tuple[RunningStack, str], change: dict[str, Any], status: int, field: str
) -> None:
    stack, cluster = created_cluster
    answer = stack.client.post(_jobs(cluster), {**_pytorch("refused"), **change})
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["fields"][0]["field"].startswith(field), error
    assert error["fields"][0]["hint"], error
    assert stack.client.get(f"{_jobs(cluster)}/refused").status_code == 404


@pytest.mark.parametrize(
    ("elastic", "message", "hint"),
    [
        (
            {"replica_discrete_values": [1, 2, 8]},
            "elastic.replica_discrete_values [8] outside [min_replicas 1, max_replicas 4]",
            "drop those values, or widen min_replicas/max_replicas to include them",
        ),
        (
            {"replica_increment_step": 1, "replica_discrete_values": [1, 2]},
            "elastic.replica_increment_step and elastic.replica_discrete_values are exclusive",
            "not both",
        ),
        (
            {"replica_discrete_values": [2, 1]},
            "elastic.replica_discrete_values [2, 1] is not ascending without repeats",
            "ascending: [1, 2]",
        ),
    ],
)
def test_elastic_sizes_are_refused_with_the_rule_and_the_way_out(
    created_cluster: tuple[RunningStack, str], elastic: dict[str, Any], message: str, hint: str
) -> None:
    stack, cluster = created_cluster
    body = {**_pytorch("refused"), "elastic": {"min_replicas": 1, "max_replicas": 4, **elastic}}
    answer = stack.client.post(_jobs(cluster), body)
    assert answer.status_code == 422, answer.text
    [field] = answer.json()["error"]["fields"]
    assert field["field"].startswith("pytorch.elastic"), field
    assert field["rule"] and message in field["message"] and hint in field["hint"], field
    assert stack.client.get(f"{_jobs(cluster)}/refused").status_code == 404


def _operation(api: Client, answer: Any) -> None:
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=120)
    assert op["status"] in ("succeeded", "noop"), op.get("error")


def _refused(api: Client, cluster: str, body: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    params = {"dry_run": "true"} if dry_run else None
    answer = api.post(_jobs(cluster), body, params=params)
    assert answer.status_code == 422, answer.text
    [field] = answer.json()["error"]["fields"]
    return dict(field)


def test_aws_elastic_rules_refuse_spot_groups_and_tiered_checkpointing(
    created_cluster: tuple[RunningStack, str],
) -> None:
    """HyperPod elastic training excludes Spot Instances and managed tiered checkpointing: an
    elastic job on a spot group, or on a cluster with tiered checkpointing on, is refused (dry
    run and submit) with the field, the rule and the way out; the same job at a fixed size runs."""
    stack, cluster = created_cluster
    api = stack.client
    instance_type = api.get(f"/api/v1/clusters/{cluster}").json()["spec"]["instance_groups"][0][
        "instance_type"
    ]
    spot = {"name": "spot", "instance_type": instance_type, "count": 1, "capacity_type": "spot"}
    _operation(api, api.post(f"/api/v1/clusters/{cluster}/instance-groups", spot))
    elastic = {"elastic": {"min_replicas": 1, "max_replicas": 2}}
    try:
        on_spot = _pytorch("elastic-spot", instance_group="spot", **elastic)
        for dry_run in (True, False):
            field = _refused(api, cluster, on_spot, dry_run)
            assert field["field"] == "instance_group", field
            assert "does not support Spot Instances" in field["message"], field
            assert "on-demand or training-plan group" in field["hint"], field
            assert "drop elastic" in field["hint"], field
        fixed = _pytorch("elastic-spot", instance_group="spot")
        assert api.post(_jobs(cluster), fixed, params={"dry_run": "true"}).status_code == 200

        features = f"/api/v1/clusters/{cluster}/features"
        _operation(api, api.http.patch(features, json={"tiered_checkpointing": {"enabled": True}}))
        try:
            on_tiered = _pytorch("elastic-tiered", **elastic)
            for dry_run in (True, False):
                field = _refused(api, cluster, on_tiered, dry_run)
                assert field["field"] == "elastic", field
                assert "does not support managed tiered checkpointing" in field["message"], field
                assert '{"tiered_checkpointing": {"enabled": false}}' in field["hint"], field
            fixed = _pytorch("elastic-tiered")
            assert api.post(_jobs(cluster), fixed, params={"dry_run": "true"}).status_code == 200
        finally:
            _operation(
                api, api.http.patch(features, json={"tiered_checkpointing": {"enabled": False}})
            )
        assert api.post(_jobs(cluster), on_tiered, params={"dry_run": "true"}).status_code == 200
        for job in ("elastic-spot", "elastic-tiered"):
            assert api.get(f"{_jobs(cluster)}/{job}").status_code == 404
    finally:
        _operation(api, api.delete(f"/api/v1/clusters/{cluster}/instance-groups/spot"))


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"env": {"WANDB_API_KEY": "x"}}, "pytorch.env", "env.WANDB_API_KEY looks like a secret"),
        ({"env": {"AWS_KEY_ID": "AKIAIOSFODNN7EXAMPLE"}}, "pytorch.env", "an AWS access key id"),
        ({"env": {"HUB": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"}}, "pytorch.env", "Hugging Face"),
        ({"args": ["--api-key=sk-AbCdEfGhIjKlMnOpQrSt"]}, "pytorch.args", "args[0] holds"),
    ],
)
def test_secrets_by_value_are_refused_with_the_way_to_pass_them(
    created_cluster: tuple[RunningStack, str], change: dict[str, Any], field: str, message: str
) -> None:
    stack, cluster = created_cluster
    answer = stack.client.post(_jobs(cluster), {**_pytorch("refused"), **change})
    assert answer.status_code == 422, answer.text
    [refused] = answer.json()["error"]["fields"]
    assert refused["field"] == field and refused["rule"] == "value_error", refused
    assert message in refused["message"] and "Secret" in refused["hint"], refused
    for value in ("AKIAIOSFODNN7EXAMPLE", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123", "sk-AbCdEfGh"):
        assert value not in answer.text  # the refusal never repeats the credential
    assert stack.client.get(f"{_jobs(cluster)}/refused").status_code == 404


def _ws_url(stack: RunningStack, cluster: str, job: str, query: str) -> str:
    return stack.stack.url.replace("http", "ws", 1) + f"{_jobs(cluster)}/{job}/logs/ws?{query}"


async def _read(url: str, frames: int | None, stop: Callable[[dict[str, Any]], bool]) -> list[Any]:
    got: list[Any] = []
    async with websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None
    ) as ws:
        while frames is None or len(got) < frames:
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
            except websockets.ConnectionClosed:
                break
            got.append(frame)
            if stop(frame):
                break
    return got


def test_logs_stream_over_websocket_without_loss_or_repeat(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    _submit(api, cluster, _pytorch("streamed", replicas=2))
    _wait_job(api, cluster, "streamed", lambda j: j["status"] == "running")
    pods = [
        p["name"] for p in api.get(f"{_jobs(cluster)}/streamed").json()["live"]["observed"]["pods"]
    ]
    query = "&".join(f"pod={p}" for p in pods)

    # First connection: read a few frames and drop the connection mid-stream.
    first = asyncio.run(_read(_ws_url(stack, cluster, "streamed", query), 4, lambda f: False))
    assert all(f["type"] in ("lines", "end") for f in first), first
    cursors = {}
    received: dict[str, list[str]] = {p: [] for p in pods}
    for frame in first:
        if frame["type"] == "lines":
            assert frame["start"] == len(received[frame["pod"]]), "a gap or a repeat"
            received[frame["pod"]].extend(frame["lines"])
            cursors[frame["pod"]] = f"{frame['pod']}@{frame['uid']}:{frame['next']}"
    assert cursors

    # Reconnect from the cursors and follow until both pods end.
    resume = query + "".join(f"&cursor={c}" for c in cursors.values())
    ended: set[str] = set()

    def both_ended(frame: dict[str, Any]) -> bool:
        if frame["type"] == "end":
            ended.add(frame["pod"])
        return ended == set(pods)

    second = asyncio.run(_read(_ws_url(stack, cluster, "streamed", resume), None, both_ended))
    for frame in second:
        if frame["type"] == "lines":
            assert frame["start"] == len(received[frame["pod"]]), "a gap or a repeat"
            received[frame["pod"]].extend(frame["lines"])
    assert ended == set(pods), second[-3:]
    for pod in pods:
        steps = [int(m.group(1)) for line in received[pod] if (m := STEP.match(line))]
        assert steps == list(range(1, len(steps) + 1)) and len(steps) == 100, pod
        downloaded = api.get(f"{_jobs(cluster)}/streamed/logs", params={"pod": pod}).text
        assert downloaded.splitlines() == received[pod]
    _wait_job(api, cluster, "streamed", lambda j: j["status"] == "succeeded")


def test_pod_fault_spends_the_budget_then_fails_the_job(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    spec = _pytorch("faulty", run_policy={"job_max_retry_count": 1, "clean_pod_policy": "None"})
    _submit(api, cluster, spec)
    _wait_job(api, cluster, "faulty", lambda j: j["status"] == "running")
    server = _api_server(sim_aws, cluster)

    server.faults.crash_pod("default", "faulty-pods-0", exit_code=137)
    restarted = _wait_job(api, cluster, "faulty", lambda j: j["restarts"] == 1)
    assert restarted["restart_budget"] == {"used": 1, "allowed": 1}
    assert restarted["faulty_pods"] == ["faulty-pods-0"]
    # The crash is a Warning event of the pod; the operator recreated the pod, so there is no
    # earlier container instance whose log could be read.
    warnings = api.get(
        f"/api/v1/clusters/{cluster}/kubernetes-events",
        params={
            "namespace": "default",
            "kind": "Pod",
            "object": "faulty-pods-0",
            "type": "Warning",
        },
    ).json()["events"]
    assert any("exited with code 137" in e["message"] for e in warnings), warnings
    previous = api.get(
        f"{_jobs(cluster)}/faulty/logs", params={"pod": "faulty-pods-0", "previous": "true"}
    )
    assert previous.status_code == 404, previous.text
    assert "has not restarted" in previous.json()["error"]["message"]
    assert "recreated" in previous.json()["error"]["hint"]
    _wait_job(api, cluster, "faulty", lambda j: j["status"] == "running")

    server.faults.crash_pod("default", "faulty-pods-0", exit_code=137)
    failed = _wait_job(api, cluster, "faulty", lambda j: j["status"] == "failed")
    assert failed["reason"] == "JobMaxRetryCountExceeded"
    assert "jobMaxRetryCount=1" in failed["message"]
    changes = [
        e["payload"]
        for e in api.get(f"{_jobs(cluster)}/faulty/events").json()
        if e["type"] == "JobStatusChanged"
    ]
    assert any(c["restarts"] == 1 and c["faulty_pods"] == ["faulty-pods-0"] for c in changes)
    assert changes[-1]["status"] == "failed" and changes[-1]["reason"] == "JobMaxRetryCountExceeded"


async def _database_text(database_url: str) -> str:
    conn = await asyncpg.connect(database_url)
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        dumps: list[str] = []
        for table in tables:
            rows = await conn.fetch(f'SELECT t::text AS row FROM "{table["table_name"]}" t')
            dumps.extend(r["row"] for r in rows)
        return "\n".join(dumps)
    finally:
        await conn.close()


def test_hf_token_lives_only_in_a_kubernetes_secret(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    token = f"hf_{time.time_ns()}SeCrEtToKeN"
    stored = api.post(f"/api/v1/clusters/{cluster}/secrets/hf-token", {"token": token})
    assert stored.status_code == 200, stored.text
    assert stored.json() == {"secret": "hf-token", "namespace": "default", "key": "token"}
    assert token not in stored.text

    download = {
        "name": "get-qwen",
        "repo_id": "Qwen/Qwen2.5-0.5B",
        "token_secret": "hf-token",
    }
    answer = api.post(f"/api/v1/clusters/{cluster}/model-downloads", download)
    assert answer.status_code == 202, answer.text
    assert api.wait(answer.json()["operation_id"])["status"] == "succeeded"
    done = _wait_job(api, cluster, "get-qwen", lambda j: j["status"] == "succeeded")
    assert done["kind"] == "Job"
    pod = done["pods"][0]["name"]
    log = api.get(f"{_jobs(cluster)}/get-qwen/logs", params={"pod": pod}).text
    assert "download progress: 100%" in log

    server = _api_server(sim_aws, cluster)
    secret = server.store.get("secrets", "default", "hf-token")
    assert secret is not None  # the one place the token lives
    assert base64.b64encode(token.encode()).decode() in json.dumps(secret)
    assert token not in json.dumps(done)

    assert token not in asyncio.run(_database_text(stack.stack.database_url or ""))
    events = api.get("/api/v1/events", params={"limit": 1000})
    assert token not in events.text
    logs = "".join(p.read_text(errors="replace") for p in Path(stack.stack.state_dir).glob("*.log"))
    assert logs and token not in logs


def test_mlflow_tracking_server_created_and_linked_to_a_job(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = {
        "name": f"exp-{time.time_ns() % 10**9}",
        "artifact_store_uri": "s3://hyperpilot-mlflow/artifacts",
        "role_arn": "arn:aws:iam::123456789012:role/mlflow",
    }
    dry = api.post("/api/v1/mlflow/tracking-servers", server, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert dry.json()["plan"]["calls"][0]["operation"] == "CreateMlflowTrackingServer"
    created = api.post("/api/v1/mlflow/tracking-servers", server)
    assert created.status_code == 202, created.text
    assert api.wait(created.json()["operation_id"])["status"] == "succeeded"
    described = api.get(f"/api/v1/mlflow/tracking-servers/{server['name']}").json()
    assert described["status"] == "Created" and described["arn"].endswith(server["name"])
    calls = len(sim_aws.call_log("sagemaker", "CreateMlflowTrackingServer"))
    again = api.post("/api/v1/mlflow/tracking-servers", server)
    assert again.json()["noop"] is True
    assert api.wait(again.json()["operation_id"])["status"] == "noop"
    assert len(sim_aws.call_log("sagemaker", "CreateMlflowTrackingServer")) == calls

    _submit(api, cluster, _pytorch("tracked", mlflow_tracking_uri=described["tracking_uri"]))
    job = api.get(f"{_jobs(cluster)}/tracked", params={"live": "false"}).json()
    assert job["mlflow"] == {
        "tracking_uri": described["arn"],
        "experiment": "tracked",
        "run_name": "tracked",
    }
    assert api.get("/api/v1/mlflow/tracking-servers/no-such-server").status_code == 404
    api.wait(api.delete(f"{_jobs(cluster)}/tracked").json()["operation_id"])


def test_log_monitoring_catches_a_hang_and_spends_the_budget(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    monitor = {
        "name": "heartbeat",
        "log_pattern": "^HEARTBEAT .*",  # the training never prints it: a hang
        "expected_start_cutoff_seconds": 1,
    }
    spec = _pytorch(
        "hangs",
        run_policy={"job_max_retry_count": 1, "log_monitoring": [monitor]},
    )
    _submit(api, cluster, spec)
    failed = _wait_job(api, cluster, "hangs", lambda j: j["status"] == "failed", timeout=90)
    assert failed["reason"] == "JobMaxRetryCountExceeded"
    assert "log monitor heartbeat" in failed["message"]
    changes = [
        e["payload"]
        for e in api.get(f"{_jobs(cluster)}/hangs/events").json()
        if e["type"] == "JobStatusChanged"
    ]
    assert any(c["restarts"] == 1 for c in changes), changes
    api.wait(api.delete(f"{_jobs(cluster)}/hangs").json()["operation_id"])


def _poll(check: Callable[[], Any], timeout: float = 60, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"not met within {timeout}s"
        time.sleep(interval)
    return found


def _pods_of(server: ApiServer, job: str) -> list[dict[str, Any]]:
    pods = server.store.items("pods", "default")
    return [p for p in pods if (p["metadata"].get("labels") or {}).get("hyperpilot.dev/job") == job]


def test_a_killed_model_download_resumes_in_the_next_pod(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = _api_server(sim_aws, cluster)
    token = f"hf_{time.time_ns()}ReSuMeToKeN"
    stored = api.post(
        f"/api/v1/clusters/{cluster}/secrets/hf-token", {"token": token, "secret": "hf-resume"}
    )
    assert stored.status_code == 200, stored.text
    target = f"models/resume-{time.time_ns() % 10**9}"
    download = {
        "name": "get-resumed",
        "repo_id": "Qwen/Qwen2.5-7B",  # 14 files, 14 GB: four 3.5 GB shards
        "target": target,
        "token_secret": "hf-resume",
    }
    answer = api.post(f"/api/v1/clusters/{cluster}/model-downloads", download)
    assert answer.status_code == 202, answer.text
    assert api.wait(answer.json()["operation_id"])["status"] == "succeeded"

    # Kill the pod once the first shard is on the bucket, while the second one transfers.
    first = _poll(lambda: [p["metadata"]["name"] for p in _pods_of(server, "get-resumed")])[0]
    _poll(
        lambda: any(
            line.startswith("downloaded model-00001-of-00004.safetensors ")
            for line in server.logs.lines("default", first, "download")
        ),
        interval=0.01,
    )
    server.faults.kill_pod("default", first)

    done = _wait_job(api, cluster, "get-resumed", lambda j: j["status"] == "succeeded", 90)
    assert done["restarts"] == 1 and done["restart_budget"] == {"used": 1, "allowed": 6}
    described = api.get(f"{_jobs(cluster)}/get-resumed").json()
    live = described["live"]
    assert live["progress"].startswith("download progress: 100% (14/14 files")
    assert live["observed"]["restarts"] == 1
    phases = {p["name"]: p["phase"] for p in live["observed"]["pods"]}
    assert phases.pop(first) == "Failed"
    [(second, phase)] = phases.items()
    assert phase == "Succeeded"
    changes = [
        e["payload"]
        for e in api.get(f"{_jobs(cluster)}/get-resumed/events").json()
        if e["type"] == "JobStatusChanged"
    ]
    assert changes[-1]["status"] == "succeeded" and changes[-1]["restarts"] == 1

    def log(pod: str) -> str:
        text = api.get(f"{_jobs(cluster)}/get-resumed/logs", params={"pod": pod}).text
        return str(text)

    before, after = log(first), log(second)
    finished = [line.split()[1] for line in before.splitlines() if line.startswith("downloaded ")]
    assert "model-00001-of-00004.safetensors" in finished and "100%" not in before
    for path in finished:  # the second pod skips what the first one completed
        assert f"skipping {path}: already complete in /s3/{target}" in after
        assert f"downloaded {path} " not in after
    assert f"resuming: {len(finished)} of 14 files" in after
    assert "downloaded model-00002-of-00004.safetensors" in after  # the shard cut mid-way
    assert "download progress: 100% (14/14 files" in after

    # The token is in its Secret, and nowhere else.
    assert token not in before + after + json.dumps(described)
    assert token not in asyncio.run(_database_text(stack.stack.database_url or ""))
    assert token not in api.get("/api/v1/events", params={"limit": 1000}).text
    logs = "".join(p.read_text(errors="replace") for p in Path(stack.stack.state_dir).glob("*.log"))
    assert logs and token not in logs
    api.wait(api.delete(f"{_jobs(cluster)}/get-resumed").json()["operation_id"])


def _gpu_pods_on(server: ApiServer, group: str) -> list[str]:
    """Unfinished pods that take GPUs on the group's nodes (an earlier test's, still going)."""
    nodes = {
        n["metadata"]["name"]
        for n in server.store.items("nodes")
        if (n["metadata"].get("labels") or {}).get(GROUP_LABEL) == group
    }
    busy = []
    for pod in server.store.items("pods"):
        if pod["spec"].get("nodeName") not in nodes:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        limits = [(c.get("resources") or {}).get("limits") or {} for c in pod["spec"]["containers"]]
        if any("nvidia.com/gpu" in lim for lim in limits):
            busy.append(pod["metadata"]["name"])
    return busy


def _scale_group(api: Client, cluster: str, count: int) -> None:
    answer = api.http.patch(
        f"/api/v1/clusters/{cluster}/instance-groups/gpu", json={"count": count}
    )
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=90)
    assert op["status"] in ("succeeded", "noop"), op.get("error")


def test_an_elastic_job_grows_and_shrinks_with_its_instance_group(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = _api_server(sim_aws, cluster)
    _poll(lambda: not _gpu_pods_on(server, "gpu"), timeout=60, interval=0.2)
    groups = {g["name"]: g for g in api.get(f"/api/v1/clusters/{cluster}/instance-groups").json()}
    free = groups["gpu"]["count"]  # one 1-GPU pod per node, and no other job on them now
    assert free == 2
    spec = _pytorch(
        "elastic-ddp",
        elastic={"min_replicas": 1, "max_replicas": 3},
        run_policy={"job_max_retry_count": 2},
        args=["--max_steps", "100000"],  # runs until deleted
    )
    dry = api.post(_jobs(cluster), spec, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert any(n.startswith("elastic: 1 to 3 pod(s)") for n in dry.json()["plan"]["notes"])

    def observed() -> dict[str, Any]:
        found: dict[str, Any] = api.get(f"{_jobs(cluster)}/elastic-ddp").json()
        return dict(found["live"]["observed"])

    def settled(target: int) -> dict[str, Any] | None:
        seen = observed()
        replicas = seen["replicas"]
        ok = replicas["target"] == target and replicas["current"] == target
        return seen if ok and seen["status"] == "running" else None

    _submit(api, cluster, spec)
    try:
        # Three allowed, two nodes free: it starts with two.
        started = _poll(lambda: settled(free), timeout=60, interval=0.2)
        assert started["replicas"] == {
            "current": 2,
            "target": 2,
            "elastic": True,
            "min": 1,
            "max": 3,
            "last_scaling_time": None,
        }

        # The group scales up through the product: the job grows onto the new node.
        _scale_group(api, cluster, 3)
        grown = _poll(lambda: settled(3), timeout=60, interval=0.2)
        assert grown["replicas"]["last_scaling_time"]
        assert grown["restarts"] == 0
        assert sorted(p["name"] for p in grown["pods"] if p["phase"] == "Running") == [
            f"elastic-ddp-pods-{n}" for n in range(3)
        ]
        grown_at = grown["replicas"]["last_scaling_time"]

        # And back down: the job shrinks with it, without spending its retry budget.
        _scale_group(api, cluster, 2)
        shrunk = _poll(lambda: settled(2), timeout=60, interval=0.2)
        assert shrunk["replicas"]["last_scaling_time"] >= grown_at
        assert shrunk["restarts"] == 0
        record = api.get(f"{_jobs(cluster)}/elastic-ddp", params={"live": "false"}).json()
        assert record["status"] == "running"
        assert record["restart_budget"] == {"used": 0, "allowed": 2}
        hpj = server.get(
            "sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", "elastic-ddp", "default"
        )
        assert hpj is not None
        assert hpj["status"]["elasticScalingStatus"]["targetReplicas"] == {"pods": 2}
        reasons = {
            e["reason"]
            for e in server.list_objects("v1", "Event", "default")
            if (e.get("involvedObject") or {}).get("name") == "elastic-ddp"
        }
        assert {"ElasticJobStarted", "ElasticScaleUp", "ElasticScaleDown"} <= reasons
    finally:
        api.wait(api.delete(f"{_jobs(cluster)}/elastic-ddp").json()["operation_id"])
        _scale_group(api, cluster, 2)


def _until(check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.2)
    return found


def _steps(text: str) -> list[int]:
    return [int(m.group(1)) for line in text.splitlines() if (m := STEP.match(line))]


def test_diagnostics_read_events_pods_and_the_log_before_a_restart(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    """Pods of another namespace fail in four ways (killed for memory and restarted, a crash
    loop, an image that cannot be pulled, no node with the GPUs asked for): the pods route
    names each reason with restart counts and exit codes, the events route the Warning events,
    and the previous log the lines the killed container wrote before its restart."""
    stack, cluster = created_cluster
    api = stack.client
    server = _api_server(sim_aws, cluster)
    core = k8s.CoreV1Api(k8s_config.new_client_from_config_dict(server.kubeconfig()))
    base = f"/api/v1/clusters/{cluster}"
    ns = "diag"

    def pod(name: str, image: str, command: list[str], **extra: Any) -> dict[str, Any]:
        container = {"name": "main", "image": image, "command": command, **extra}
        return {
            "metadata": {
                "name": name,
                "labels": {"app": "diag", "role": name},
                "annotations": {"sim.hyperpilot.dev/steps": "100000"},
            },
            "spec": {"containers": [container]},
        }

    core.create_namespace({"metadata": {"name": ns}})
    server.faults.image_pull_failure("registry.example.com/missing/*", "manifest unknown")
    try:
        core.create_namespaced_pod(ns, pod("trainer", "pytorch:2", ["python", "train.py"]))
        core.create_namespaced_pod(
            ns, pod("looper", "busybox:1", ["sh", "-c", "echo attempt; exit 3"])
        )
        core.create_namespaced_pod(
            ns, pod("puller", "registry.example.com/missing/app:1", ["serve"])
        )
        gpus = {"limits": {"nvidia.com/gpu": "64"}}
        core.create_namespaced_pod(
            ns, pod("hungry", "pytorch:2", ["python", "train.py"], resources=gpus)
        )

        logs = f"{base}/pods/{ns}/trainer/logs"
        _until(lambda: "step 3/" in api.get(logs).text)
        # The container is killed for memory (137, OOMKilled) and the kubelet restarts it.
        server.run_on_loop(server.kubelet.crash, ns, "trainer", None, 137, "OOMKilled")

        def all_failing() -> dict[str, Any] | None:
            answer = api.get(f"{base}/pods", params={"namespace": ns, "selector": "app=diag"})
            assert answer.status_code == 200, answer.text
            found = {p["name"]: p for p in answer.json()["pods"]}
            seen = {name: p["status"] for name, p in found.items()}
            expected = {
                "looper": "CrashLoopBackOff",
                "puller": "ImagePullBackOff",
                "hungry": "Pending",
            }
            restarted = found["trainer"]["restarts"] >= 1 and found["looper"]["restarts"] >= 1
            if restarted and all(seen[k] == v for k, v in expected.items()):
                return found
            return None

        pods = _until(all_failing)
        (trainer,) = pods["trainer"]["containers"]
        assert trainer["restart_count"] == 1 and trainer["state"] == "running"
        assert trainer["last_termination"]["reason"] == "OOMKilled"
        assert trainer["last_termination"]["exit_code"] == 137
        assert pods["trainer"]["node"] and pods["trainer"]["ready"] == "1/1"
        (looper,) = pods["looper"]["containers"]
        assert (
            looper["reason"] == "CrashLoopBackOff" and looper["last_termination"]["exit_code"] == 3
        )
        assert pods["puller"]["containers"][0]["reason"] == "ImagePullBackOff"
        assert pods["hungry"]["node"] is None
        role = api.get(f"{base}/pods", params={"namespace": ns, "selector": "role in (looper)"})
        assert [p["name"] for p in role.json()["pods"]] == ["looper"]
        everywhere = api.get(f"{base}/pods", params={"namespace": "*", "selector": "app=diag"})
        assert {p["namespace"] for p in everywhere.json()["pods"]} == {ns}

        # The log from before the restart: the steps up to the kill, from step 1.
        before = api.get(logs, params={"previous": "true"})
        assert before.status_code == 200, before.text
        assert before.headers["x-previous"] == "true" and before.headers["x-container"] == "main"
        assert before.headers["x-restart-count"] == "1"
        steps = _steps(before.text)
        assert steps[:3] == [1, 2, 3] and steps == list(range(1, len(steps) + 1))
        assert _steps(api.get(logs).text)[:1] == [1]  # the new instance starts again
        assert api.get(logs, params={"previous": "true", "tail": 2}).text.count("\n") == 2
        looped = api.get(f"{base}/pods/{ns}/looper/logs", params={"previous": "true"})
        assert looped.status_code == 200 and looped.text == "attempt\n"

        # The Warning events, newest last: the kill, the crash loop, the pulls, the scheduling.
        def warnings() -> list[dict[str, Any]] | None:
            answer = api.get(
                f"{base}/kubernetes-events", params={"namespace": ns, "type": "Warning"}
            )
            assert answer.status_code == 200, answer.text
            events: list[dict[str, Any]] = answer.json()["events"]
            reasons = {(e["object"]["name"], e["reason"]) for e in events}
            wanted = {("trainer", "BackOff"), ("looper", "BackOff"), ("hungry", "FailedScheduling")}
            pulled = any(name == "puller" for name, _ in reasons)
            return events if wanted <= reasons and pulled else None

        events = _until(warnings)
        assert all(e["type"] == "Warning" and e["object"]["namespace"] == ns for e in events)
        times = [e["last_timestamp"] for e in events]
        assert times == sorted(times)
        killed = [e for e in events if e["object"]["name"] == "trainer"]
        assert any("exited with code 137" in e["message"] for e in killed)
        assert all(e["source"] == "kubelet" for e in killed)
        looped_events = [e for e in events if e["object"]["name"] == "looper"]
        assert max(e["count"] for e in looped_events) >= 1
        about = api.get(
            f"{base}/kubernetes-events",
            params={"kind": "Pod", "object": "hungry", "limit": 1},  # every namespace
        ).json()
        assert about["namespace"] == "*" and len(about["events"]) == 1
        assert about["events"][0]["object"] == {"kind": "Pod", "name": "hungry", "namespace": ns}

        # Bad input: 422 naming the field, the rule and what to do.
        for path, params, field in [
            ("kubernetes-events", {"type": "Fatal"}, "query.type"),
            ("kubernetes-events", {"limit": 0}, "query.limit"),
            ("kubernetes-events", {"namespace": "Bad_NS"}, "query.namespace"),
            ("pods", {"selector": "app in ("}, "query.selector"),
            (f"pods/{ns}/trainer/logs", {"tail": 0}, "query.tail"),
            (f"pods/{ns}/trainer/logs", {"container": "sidecar"}, "query.container"),
        ]:
            refused = api.get(f"{base}/{path}", params=params)
            assert refused.status_code == 422, (path, params, refused.text)
            (error,) = refused.json()["error"]["fields"]
            assert error["field"] == field and error["rule"] and error["hint"], error
        assert (
            "main"
            in api.get(logs, params={"container": "sidecar"}).json()["error"]["fields"][0]["hint"]
        )

        # Unknown pods and clusters: 404 with where to look.
        missing = api.get(f"{base}/pods/{ns}/no-such-pod/logs")
        assert (
            missing.status_code == 404 and "pods?namespace=diag" in missing.json()["error"]["hint"]
        )
        unknown = api.get("/api/v1/clusters/no-such-cluster/kubernetes-events")
        assert unknown.status_code == 404 and unknown.json()["error"]["hint"]
        never = api.get(f"{base}/pods/{ns}/hungry/logs", params={"previous": "true"})
        assert never.status_code == 404 and "has not restarted" in never.json()["error"]["message"]
    finally:
        server.faults.clear_image_pull_failure("registry.example.com/missing/*")
        for name in ("trainer", "looper", "puller", "hungry"):
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
        core.delete_namespace(ns)


# ---- secret_env: secrets by reference ---------------------------------------------------------


def _custom_object(server: ApiServer, kind: str, name: str) -> dict[str, Any]:
    """A job's custom resource, read with the official client from the cluster's API server."""
    custom = k8s.CustomObjectsApi(k8s_config.new_client_from_config_dict(server.kubeconfig()))
    group, version, plural = {
        "HyperPodPyTorchJob": ("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"),
        "RayJob": ("ray.io", "v1", "rayjobs"),
    }[kind]
    found: dict[str, Any] = custom.get_namespaced_custom_object(
        group, version, "default", plural, name
    )
    return found


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "RayJob":
        cluster = obj["spec"]["rayClusterSpec"]
        groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
        return [g["template"]["spec"] for g in groups]
    return [r["template"]["spec"] for r in obj["spec"]["replicaSpecs"]]


def _env_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container's env entries that read a Secret."""
    return [
        entry
        for template in _pod_templates(obj)
        for container in template["containers"]
        for entry in container.get("env") or []
        if "valueFrom" in entry
    ]


def _every_row(api: Client, path: str) -> str:
    """The whole of /api/v1/events or /api/v1/audit, page by page, as text."""
    rows: list[Any] = []
    while True:
        page = api.get(path, params={"after": rows[-1]["seq"] if rows else 0, "limit": 1000})
        assert page.status_code == 200, page.text
        rows.extend(page.json())
        if len(page.json()) < 1000:
            return json.dumps(rows)


def _nowhere_but_kubernetes(
    stack: RunningStack, cluster: str, job: str, operation_id: str, values: list[str]
) -> None:
    """None of `values` is in the operation, the events, the audit log, the job's record and
    events, the database or the services' logs."""
    api = stack.client
    answers = [
        api.get(f"/api/v1/operations/{operation_id}"),
        api.get(f"{_jobs(cluster)}/{job}", params={"live": "true"}),
        api.get(f"{_jobs(cluster)}/{job}/events"),
        api.get(_jobs(cluster)),
    ]
    for answer in answers:
        assert answer.status_code == 200, (answer.url, answer.text)
    logs = "".join(p.read_text(errors="replace") for p in Path(stack.stack.state_dir).glob("*.log"))
    assert logs
    readable = [
        *(a.text for a in answers),
        _every_row(api, "/api/v1/events"),
        _every_row(api, "/api/v1/audit"),
        asyncio.run(_database_text(stack.stack.database_url or "")),
        logs,
    ]
    for value in values:
        for where, text in enumerate(readable):
            assert value not in text, (where, value)


def test_a_secret_written_once_is_read_by_every_recipe_by_reference(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = _api_server(sim_aws, cluster)
    value = f"wandb-{time.time_ns()}-VaLuE"
    stored = api.post(
        f"/api/v1/clusters/{cluster}/secrets",
        {"name": "wandb-e2e", "data": {"api-key": value, "user": "team-a"}},
    )
    assert stored.status_code == 200, stored.text
    assert stored.json() == {
        "secret": "wandb-e2e",
        "namespace": "default",
        "keys": ["api-key", "user"],
    }
    listed = api.get(f"/api/v1/clusters/{cluster}/secrets")
    assert listed.status_code == 200, listed.text
    mine = next(s for s in listed.json()["secrets"] if s["name"] == "wandb-e2e")
    assert mine == {
        "name": "wandb-e2e",
        "type": "Opaque",
        "keys": ["api-key", "user"],
        "managed": True,
    }
    assert value not in listed.text

    core = k8s.CoreV1Api(k8s_config.new_client_from_config_dict(server.kubeconfig()))
    secret = core.read_namespaced_secret("wandb-e2e", "default")
    assert base64.b64decode(secret.data["api-key"]).decode() == value  # the one place it lives

    secret_env = {"WANDB_API_KEY": {"secret": "wandb-e2e", "key": "api-key"}}
    accepted = _submit(api, cluster, _pytorch("with-secret", secret_env=secret_env))
    obj = _custom_object(server, "HyperPodPyTorchJob", "with-secret")
    assert _env_refs(obj) == [
        {
            "name": "WANDB_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "wandb-e2e", "key": "api-key"}},
        }
    ]
    verl = {
        "recipe": "verl",
        "name": "verl-secret",
        "instance_group": "gpu",
        "model": "models/Qwen2.5-0.5B",
        "train_files": "datasets/gsm8k/train.parquet",
        "val_files": "datasets/gsm8k/test.parquet",
        "resources": {"gpus": 1},
        "secret_env": secret_env,
    }
    ray = api.post(_jobs(cluster), verl, params={"dry_run": "true"})
    assert ray.status_code == 200, ray.text
    (planned,) = ray.json()["plan"]["objects"]
    assert len(_env_refs(planned["body"])) == 2  # the head and the workers
    _wait_job(api, cluster, "with-secret", lambda j: j["status"] == "running")
    assert api.get(f"{_jobs(cluster)}/with-secret").json()["spec"]["secret_env"] == {
        "WANDB_API_KEY": {
            "secret": "wandb-e2e",
            "key": "api-key",
            "secrets_manager_arn": None,
            "json_key": None,
        }
    }
    audited = _until(
        lambda: [
            row
            for row in json.loads(_every_row(api, "/api/v1/audit"))
            if row["type"] == "SecretStored" and row["payload"].get("secret") == "wandb-e2e"
        ],
        timeout=15,
    )
    assert audited[-1]["payload"]["keys"] == ["api-key", "user"]
    assert audited[-1]["payload"]["namespace"] == "default"
    _nowhere_but_kubernetes(stack, cluster, "with-secret", accepted["operation_id"], [value])
    api.wait(api.delete(f"{_jobs(cluster)}/with-secret").json()["operation_id"])


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (
            {"secret_env": {"WANDB_API_KEY": {"secret": "no-such-secret", "key": "k"}}},
            "secret_env.WANDB_API_KEY",
            "the Secret no-such-secret does not exist in namespace default",
        ),
        (
            {"env": {"X": "1"}, "secret_env": {"X": {"secret": "wandb-e2e", "key": "user"}}},
            "pytorch",
            "secret_env.X is also in env",
        ),
        (
            {"secret_env": {"K": {"secrets_manager_arn": "arn:aws:s3:::bucket"}}},
            "pytorch.secret_env.K.secrets_manager_arn",
            "is not a Secrets Manager secret's ARN",
        ),
    ],
)
def test_bad_secret_references_are_refused_with_the_field(
    created_cluster: tuple[RunningStack, str], change: dict[str, Any], field: str, words: str
) -> None:
    stack, cluster = created_cluster
    for params in ({"dry_run": "true"}, {}):
        answer = stack.client.post(_jobs(cluster), {**_pytorch("bad-ref"), **change}, params=params)
        assert answer.status_code == 422, answer.text
        [refused] = answer.json()["error"]["fields"]
        assert refused["field"] == field and words in refused["message"], refused
    assert stack.client.get(f"{_jobs(cluster)}/bad-ref").status_code == 404


def test_a_bad_secret_request_never_echoes_its_value(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    value = "tOo-LaRgE-" + "x" * 70_000
    for body, field in (
        ({"name": "big", "data": {"blob": value}}, "data"),
        ({"name": "Bad_Name", "data": {"k": "tOo-LaRgE-v"}}, "name"),
        ({"name": "ok", "data": {"a/b": "tOo-LaRgE-v"}}, "data"),
    ):
        answer = stack.client.post(f"/api/v1/clusters/{cluster}/secrets", body)
        assert answer.status_code in (413, 422), answer.text
        assert "tOo-LaRgE" not in answer.text
        if answer.status_code == 422:
            assert answer.json()["error"]["fields"][0]["field"] == field


def test_a_secrets_manager_secret_is_copied_into_a_kubernetes_secret(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = _api_server(sim_aws, cluster)
    manager = aws_client(sim_aws, "secretsmanager")
    tag = time.time_ns() % 10**9
    whole = f"sm-whole-{time.time_ns()}-VaLuE"
    password = f"sm-password-{time.time_ns()}-VaLuE"
    wandb_arn = manager.create_secret(Name=f"hyperpilot/wandb-{tag}", SecretString=whole)["ARN"]
    db_arn = manager.create_secret(
        Name=f"hyperpilot/db-{tag}",
        SecretString=json.dumps({"username": "trainer", "password": password}),
    )["ARN"]
    secret_env = {
        "WANDB_API_KEY": {"secrets_manager_arn": wandb_arn},
        "DB_PASSWORD": {"secrets_manager_arn": db_arn, "json_key": "password"},
    }
    accepted = _submit(api, cluster, _pytorch("from-sm", secret_env=secret_env))
    op = api.get(f"/api/v1/operations/{accepted['operation_id']}").json()
    stages = {s["name"]: s["status"] for s in op["stages"]}
    assert list(stages) == ["check", "secrets", "mlflow_access", "apply"]
    assert stages["mlflow_access"] == "noop"  # no MLflow tracking server: nothing granted

    obj = _custom_object(server, "HyperPodPyTorchJob", "from-sm")
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in _env_refs(obj)}
    assert set(refs) == {"WANDB_API_KEY", "DB_PASSWORD"}
    core = k8s.CoreV1Api(k8s_config.new_client_from_config_dict(server.kubeconfig()))
    for name, expected, arn in (
        ("WANDB_API_KEY", whole, wandb_arn),
        ("DB_PASSWORD", password, db_arn),
    ):
        ref = refs[name]
        assert ref["name"].startswith("hp-sm-hyperpilot-") and ref["key"] == "value"
        secret = core.read_namespaced_secret(ref["name"], "default")
        assert base64.b64decode(secret.data["value"]).decode() == expected
        assert secret.metadata.annotations["hyperpilot.dev/secrets-manager-arn"] == arn
        assert secret.metadata.labels["app.kubernetes.io/managed-by"] == "hyperpilot"
    _wait_job(api, cluster, "from-sm", lambda j: j["status"] == "running")
    _nowhere_but_kubernetes(stack, cluster, "from-sm", accepted["operation_id"], [whole, password])
    api.wait(api.delete(f"{_jobs(cluster)}/from-sm").json()["operation_id"])


def test_a_missing_secrets_manager_secret_fails_the_submit_naming_it(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hyperpilot/never-made-AbCdEf"
    spec = _pytorch("sm-missing", secret_env={"WANDB_API_KEY": {"secrets_manager_arn": arn}})
    answer = api.post(_jobs(cluster), spec)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"])
    assert op["status"] == "failed", op
    error = op["error"]
    assert error["stage"] == "secrets" and error["code"] == "SecretNotFound", error
    assert error["message"].startswith(
        f"secret_env.WANDB_API_KEY: Secrets Manager has no secret {arn}"
    )
    assert error["blocked_stages"] == ["apply"]
    assert api.get(f"{_jobs(cluster)}/sm-missing").status_code == 404  # nothing was submitted
    server = _api_server(sim_aws, cluster)
    assert (
        server.store.get("hyperpodpytorchjobs.sagemaker.amazonaws.com", "default", "sm-missing")
        is None
    )


@pytest.mark.parametrize("name", ["pyb8esl-.e", "a.-b", "a-.b"])
def test_a_secret_name_kubernetes_refuses_is_a_422_not_a_502(
    created_cluster: tuple[RunningStack, str], name: str
) -> None:
    """Each dot-separated label of a Secret's name starts and ends alphanumeric: a name the API
    server would refuse is refused on its field before anything is written."""
    stack, cluster = created_cluster
    api = stack.client
    calls = [
        (f"/api/v1/clusters/{cluster}/secrets/hf-token", {"token": "abcdefgh", "secret": name}),
        (f"/api/v1/clusters/{cluster}/secrets", {"name": name, "data": {"k": "v"}}),
        (
            f"/api/v1/clusters/{cluster}/model-downloads",
            {"name": "bad-secret", "repo_id": "Qwen/Qwen2.5-0.5B", "token_secret": name},
        ),
    ]
    for path, body in calls:
        answer = api.post(path, body)
        assert answer.status_code == 422, (path, answer.text)
        fields = [f["field"] for f in answer.json()["error"]["fields"]]
        assert fields and fields[0] in ("secret", "name", "token_secret"), answer.text


def test_placement_on_deep_health_checked_nodes_and_one_network_node(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    """`placement` reaches the pods as node and pod affinity: deep-health-check-passed nodes
    only (HyperPod's label on every node that passed), the job's pods preferably under one
    network node of layer 3; the job runs there. Topology required on nodes without the layer's
    label leaves the pods pending."""
    stack, cluster = created_cluster
    api = stack.client
    server = _api_server(sim_aws, cluster)
    placement = {"deep_health_check_passed": True, "topology": "network-node-layer-3"}
    _submit(api, cluster, _pytorch("placed", placement=placement))
    _wait_job(api, cluster, "placed", lambda j: j["status"] == "running")
    obj = _custom_object(server, "HyperPodPyTorchJob", "placed")
    [template] = _pod_templates(obj)
    affinity = template["affinity"]
    [term] = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [
        {
            "key": "sagemaker.amazonaws.com/deep-health-check-status",
            "operator": "In",
            "values": ["Passed"],
        }
    ]
    [preferred] = affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["podAffinityTerm"]["topologyKey"] == "topology.k8s.aws/network-node-layer-3"
    [pod] = _pods_of(server, "placed")
    assert pod["spec"]["affinity"] == affinity
    [node] = [
        n for n in server.store.items("nodes") if n["metadata"]["name"] == pod["spec"]["nodeName"]
    ]
    labels = node["metadata"]["labels"]
    assert labels["sagemaker.amazonaws.com/deep-health-check-status"] == "Passed"
    assert labels[GROUP_LABEL] == "gpu"

    strict = {"topology": "network-node-layer-3", "topology_required": True}
    _submit(api, cluster, _pytorch("placed-strict", placement=strict))
    time.sleep(2)
    assert [p["status"]["phase"] for p in _pods_of(server, "placed-strict")] == ["Pending"]
    for job in ("placed", "placed-strict"):
        assert (
            api.wait(api.delete(f"{_jobs(cluster)}/{job}").json()["operation_id"])["status"]
            == "succeeded"
        )
