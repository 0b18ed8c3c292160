"""A job's `secret_env`: variables whose values come from a Secret by reference. Every recipe
renders them as `valueFrom.secretKeyRef`; names, references and ARNs are checked on the
contract; a Secrets Manager secret is copied into its Kubernetes Secret by the submit's
`secrets` stage, before the apply, and its value goes nowhere else; the write-only request
that stores a Secret refuses what Kubernetes would, naming keys and never values."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from shared.boundary import DNS_LABEL_PATTERN
from shared.contracts.workloads import (
    MAX_SECRET_KEYS,
    MAX_SECRET_VALUE_BYTES,
    JobSpec,
    SecretRef,
    StoreSecretRequest,
    SubmitJob,
)
from shared.errors import PermanentError, TemporaryError
from shared.secrets import HINT
from shared.stages import Done, StageContext, Workflow
from tests.workloads.test_workflows import FakeCluster
from workload_svc.domain.plan import ClusterFacts, GroupFacts, plan_submit
from workload_svc.domain.render import render
from workload_svc.domain.secret_refs import (
    ARN_ANNOTATION,
    JSON_KEY_ANNOTATION,
    Synced,
    pick,
    synced,
    synced_secret_name,
)
from workload_svc.domain.workflows import submit_workflow

SPEC: TypeAdapter[Any] = TypeAdapter(JobSpec)
RECIPES = {
    "pytorch": {"script": "code/train.py"},
    "llama-factory": {"model": "models/m", "dataset": "datasets/d"},
    "ms-swift": {"model": "models/m", "dataset": "datasets/d"},
    "verl": {"model": "models/m", "train_files": "d/train.parquet", "val_files": "d/val.parquet"},
}
ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hyperpilot/wandb-AbCdEf"
DB_ARN = "arn:aws:secretsmanager:us-west-2:123456789012:secret:prod/DB_creds+x=y@z.v"
SECRET_ENV = {
    "WANDB_API_KEY": {"secrets_manager_arn": ARN},
    "HF_TOKEN": {"secret": "hf-token", "key": "token"},
    "DB_PASSWORD": {"secrets_manager_arn": DB_ARN, "json_key": "password"},
}


def spec(recipe: str = "pytorch", **fields: Any) -> Any:
    return SPEC.validate_python(
        {"recipe": recipe, "name": "j", "instance_group": "gpu", **RECIPES[recipe], **fields}
    )


def refusal(recipe: str = "pytorch", **fields: Any) -> tuple[str, str, str]:
    """(where, message, hint) of the one error the spec is refused with."""
    with pytest.raises(ValidationError) as refused:
        spec(recipe, **fields)
    [error] = refused.value.errors()
    where = ".".join(str(p) for p in error["loc"][1:])
    return where, str(error["msg"]).removeprefix("Value error, "), error["ctx"]["error"].hint


def containers(recipe: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    if recipe == "verl":
        cluster = body["spec"]["rayClusterSpec"]
        head = cluster["headGroupSpec"]["template"]["spec"]["containers"]
        workers = [
            c
            for group in cluster["workerGroupSpecs"]
            for c in group["template"]["spec"]["containers"]
        ]
        return [*head, *workers]
    return [c for r in body["spec"]["replicaSpecs"] for c in r["template"]["spec"]["containers"]]


# ---- rendering -------------------------------------------------------------------------------


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_every_container_of_every_recipe_reads_secret_env_by_reference(recipe: str) -> None:
    typed = spec(recipe, env={"NCCL_DEBUG": "INFO"}, secret_env=SECRET_ENV)
    found = containers(recipe, render(typed).body)
    assert len(found) == (2 if recipe == "verl" else 1)  # VERL: the head and the workers
    for container in found:
        env = {e["name"]: e for e in container["env"]}
        assert env["NCCL_DEBUG"] == {"name": "NCCL_DEBUG", "value": "INFO"}
        assert env["HF_TOKEN"] == {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
        }
        assert env["WANDB_API_KEY"]["valueFrom"] == {
            "secretKeyRef": {"name": synced_secret_name(ARN, None), "key": "value"}
        }
        assert env["DB_PASSWORD"]["valueFrom"] == {
            "secretKeyRef": {"name": synced_secret_name(DB_ARN, "password"), "key": "value"}
        }
        for name in SECRET_ENV:
            assert "value" not in env[name]  # only a reference, never a value
        names = [e["name"] for e in container["env"]]
        assert len(names) == len(set(names))


def test_secret_env_names_that_say_credential_are_the_point() -> None:
    typed = spec(secret_env=SECRET_ENV)
    assert set(typed.secret_env) == set(SECRET_ENV)
    assert typed.secret_env["HF_TOKEN"] == SecretRef(secret="hf-token", key="token")


def test_the_synced_name_is_a_dns_label_stable_and_distinct() -> None:
    for arn in (ARN, DB_ARN, ARN.replace("hyperpilot/wandb", "x" * 500)):
        for key in (None, "password"):
            name = synced_secret_name(arn, key)
            assert re.match(DNS_LABEL_PATTERN, name) and name.startswith("hp-sm-"), name
            assert name == synced_secret_name(arn, key)
    assert synced_secret_name(ARN, None).startswith("hp-sm-hyperpilot-wandb-abcdef-")
    assert synced_secret_name(DB_ARN, None) != synced_secret_name(DB_ARN, "password")
    # Two names that read the same once lowercased and dashed stay apart.
    upper = ARN.replace("hyperpilot/wandb", "Hyperpilot_WANDB")
    assert synced_secret_name(upper, None) != synced_secret_name(ARN, None)
    odd = "arn:aws:secretsmanager:us-east-1:123456789012:secret:___"
    assert synced_secret_name(odd, None).startswith("hp-sm-secret-")


def test_each_secrets_manager_secret_is_copied_once() -> None:
    typed = spec(
        secret_env={
            "A": {"secrets_manager_arn": ARN},
            "B": {"secrets_manager_arn": ARN},
            "C": {"secrets_manager_arn": ARN, "json_key": "k"},
            "D": {"secret": "s", "key": "k"},
        }
    )
    assert synced(typed) == [
        Synced("A", synced_secret_name(ARN, None), ARN, None),
        Synced("C", synced_secret_name(ARN, "k"), ARN, "k"),
    ]


# ---- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["1BAD", "A-B", "A B", ""])
def test_secret_env_names_must_be_variable_names(name: str) -> None:
    where, message, hint = refusal(secret_env={name: {"secret": "s", "key": "k"}})
    assert where == "secret_env" and "is not a valid variable name" in message
    assert hint == "use letters, digits and _"


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_a_name_in_both_env_and_secret_env_is_refused(recipe: str) -> None:
    _, message, hint = refusal(
        recipe,
        env={"WANDB_PROJECT": "x"},
        secret_env={"WANDB_PROJECT": {"secret": "s", "key": "k"}},
    )
    assert "secret_env.WANDB_PROJECT is also in env" in message
    assert "not both" in hint


def test_variables_the_control_plane_sets_are_refused() -> None:
    _, message, _ = refusal(secret_env={"HYPERPILOT_JOB": {"secret": "s", "key": "k"}})
    assert "set by the control plane" in message
    uri = "http://mlflow.mlflow.svc:5000"
    _, message, _ = refusal(
        mlflow_tracking_uri=uri, secret_env={"MLFLOW_TRACKING_URI": {"secret": "s", "key": "k"}}
    )
    assert "secret_env.MLFLOW_TRACKING_URI is set from mlflow_tracking_uri" in message
    # Without mlflow_tracking_uri a tracking URI (with its password) may come from a Secret.
    assert spec(secret_env={"MLFLOW_TRACKING_URI": {"secret": "s", "key": "k"}}).secret_env


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:ssm:us-east-1:123456789012:parameter/x",  # another service
        "arn:aws:secretsmanager:us-east-1:12345:secret:x",  # not an account id
        "arn:aws:secretsmanager::123456789012:secret:x",  # no region
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:",  # no name
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:a b",  # a space
        "hyperpilot/wandb",  # a name, not an ARN
    ],
)
def test_a_bad_arn_is_refused_with_the_shape_to_use(arn: str) -> None:
    where, message, hint = refusal(secret_env={"WANDB_API_KEY": {"secrets_manager_arn": arn}})
    assert where == "secret_env.WANDB_API_KEY.secrets_manager_arn"
    assert "is not a Secrets Manager secret's ARN" in message
    assert "arn:aws:secretsmanager:<region>:<account>:secret:<name>" in hint


@pytest.mark.parametrize(
    "arn",
    [
        ARN,
        DB_ARN,
        "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:x",
        "arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:x-AbCdEf",
        "arn:aws:secretsmanager:ap-southeast-2:123456789012:secret:a/b/c",
    ],
)
def test_arns_of_every_partition_and_name_pass(arn: str) -> None:
    assert spec(secret_env={"X": {"secrets_manager_arn": arn}}).secret_env["X"].secrets_manager_arn


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ({"secret": "s", "key": "k", "secrets_manager_arn": ARN}, "not both"),
        ({"secret": "s"}, "needs both secret and key"),
        ({"key": "k"}, "needs both secret and key"),
        ({"json_key": "k"}, "json_key needs secrets_manager_arn"),
        ({}, "a secret reference is empty"),
        ({"secret": "Upper", "key": "k"}, "is not a Kubernetes Secret name"),
        ({"secret": "a..b", "key": "k"}, "is not a Kubernetes Secret name"),
        ({"secret": "s", "key": "a/b"}, "is not a Kubernetes Secret key"),
        ({"secret": "s", "key": ".."}, "is not a Kubernetes Secret key"),
    ],
)
def test_bad_references_are_refused(ref: dict[str, Any], words: str) -> None:
    where, message, _ = refusal(secret_env={"X": ref})
    assert where.startswith("secret_env.X") and words in message, message


def test_an_unknown_field_of_a_reference_is_refused() -> None:
    with pytest.raises(ValidationError, match="extra"):
        spec(secret_env={"X": {"secret": "s", "key": "k", "value": "plain"}})


def test_the_hint_of_a_refused_credential_names_the_fields_and_the_route() -> None:
    _, _, hint = refusal(env={"WANDB_API_KEY": "x"})
    assert hint == HINT and "Secret" in hint
    assert "secret_env" in hint and "POST /api/v1/clusters/{cluster}/secrets " in hint
    assert "secrets_manager_arn" in hint


# ---- the write-only request ------------------------------------------------------------------


def test_a_secret_request_holds_a_name_and_data() -> None:
    body = StoreSecretRequest(name="wandb.team-a", data={"api-key": "v", "user.name": "me"})
    assert body.data == {"api-key": "v", "user.name": "me"}


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        ({"name": "Wandb"}, "name", "is not a Kubernetes Secret name"),
        ({"name": "-wandb"}, "name", "is not a Kubernetes Secret name"),
        ({"name": "x" * 254}, "name", "at most 253"),
        ({"name": "hp-sm-mine"}, "name", "copies of Secrets Manager secrets"),
        ({"data": {}}, "data", "at least 1"),
        ({"data": {"a/b": "v"}}, "data", "is not a Kubernetes Secret key"),
        ({"data": {"k": ""}}, "data", "data.k is empty"),
        ({"data": {f"k{i}": "v" for i in range(MAX_SECRET_KEYS + 1)}}, "data", "at most 20"),
    ],
)
def test_a_bad_secret_request_is_refused(fields: dict[str, Any], where: str, words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        StoreSecretRequest.model_validate({"name": "wandb", "data": {"k": "v"}, **fields})
    [error] = refused.value.errors()
    assert error["loc"][0] == where and words in error["msg"], error["msg"]


TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"


def test_a_credential_pasted_where_a_name_goes_is_refused_without_quoting_it() -> None:
    for make in (
        lambda: StoreSecretRequest(name="s", data={TOKEN: "v"}),
        lambda: StoreSecretRequest(name=TOKEN, data={"k": "v"}),
        lambda: spec(secret_env={TOKEN: {"secret": "s", "key": "k"}}),
        lambda: spec(secret_env={"X": {"secret": TOKEN, "key": "k"}}),
        lambda: spec(secret_env={"X": {"secret": "s", "key": TOKEN + "/"}}),
        lambda: spec(secret_env={"X": {"secrets_manager_arn": TOKEN}}),
    ):
        with pytest.raises(ValidationError) as refused:
            make()
        assert TOKEN not in str(refused.value.errors(include_input=False))


def test_a_value_too_large_is_refused_without_quoting_it() -> None:
    value = "s3cr3t" + "x" * MAX_SECRET_VALUE_BYTES
    with pytest.raises(ValidationError) as refused:
        StoreSecretRequest(name="big", data={"blob": value})
    [error] = refused.value.errors()
    assert f"data.blob is {len(value)} bytes" in error["msg"]
    assert "s3cr3t" not in str(refused.value.errors(include_input=False))
    StoreSecretRequest(name="big", data={"blob": "é" * (MAX_SECRET_VALUE_BYTES // 2)})


# ---- the value picked from Secrets Manager --------------------------------------------------


def test_pick_takes_the_string_or_one_key_of_its_json() -> None:
    whole = Synced("X", "hp-sm-x", ARN, None)
    assert pick("plain-value", whole) == "plain-value"
    keyed = Synced("X", "hp-sm-x", ARN, "password")
    assert pick(json.dumps({"user": "u", "password": "p4ss"}), keyed) == "p4ss"
    assert pick(json.dumps({"password": 1234}), keyed) == "1234"
    assert pick(json.dumps({"password": {"a": 1}}), keyed) == '{"a": 1}'


@pytest.mark.parametrize(
    ("secret", "code"),
    [
        ("not-json-s3cr3t", "SecretNotJson"),
        ('["s3cr3t"]', "SecretNotJson"),
        ('{"user": "s3cr3t"}', "SecretKeyNotFound"),
    ],
)
def test_pick_refuses_naming_the_variable_the_arn_and_the_key(secret: str, code: str) -> None:
    with pytest.raises(PermanentError) as refused:
        pick(secret, Synced("DB_PASSWORD", "hp-sm-x", ARN, "password"))
    assert refused.value.code == code
    assert refused.value.message.startswith("secret_env.DB_PASSWORD: ")
    assert ARN in refused.value.message and "'password'" in refused.value.message
    assert "s3cr3t" not in str(refused.value) and refused.value.__cause__ is None


# ---- the submit: check, secrets, apply ------------------------------------------------------


class FakeSecretsManager:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.reads: list[str] = []
        self.failures: list[Exception] = []

    async def value(self, arn: str) -> str:
        self.reads.append(arn)
        if self.failures:
            raise self.failures.pop(0)
        if arn not in self.values:
            raise PermanentError(
                "SecretNotFound", f"Secrets Manager has no secret {arn}", "check the ARN"
            )
        return self.values[arn]


def submit(secret_env: dict[str, Any], recipe: str = "pytorch") -> dict[str, Any]:
    job: dict[str, Any] = {"recipe": recipe, "name": "j", "instance_group": "gpu"}
    job.update(RECIPES[recipe], secret_env=secret_env)
    return SubmitJob(cluster="c", region="us-east-1", spec=job).model_dump(mode="json")


async def run(workflow: Workflow, command: dict[str, Any]) -> dict[str, Done]:
    outputs: dict[str, dict[str, Any]] = {}
    results: dict[str, Done] = {}

    async def report(message: str) -> None:
        return None

    assert workflow.command is not None
    parsed = workflow.command.from_payload(command)
    for name in workflow.topological_order():
        ctx = StageContext(uuid.uuid4(), name, command, outputs, None, {}, report, parsed)
        stage = next(s for s in workflow.stages if s.name == name)
        done = await stage.run(ctx)
        assert isinstance(done, Done)
        results[name], outputs[name] = done, done.outputs
    return results


def test_the_secrets_stage_runs_after_the_check_and_before_the_apply() -> None:
    workflow = submit_workflow(FakeCluster(), SubmitJob.kind(), FakeSecretsManager({}))
    assert workflow.topological_order() == ["check", "secrets", "mlflow_access", "apply"]
    assert {s.name: s.needs for s in workflow.stages}["apply"] == (
        "check",
        "secrets",
        "mlflow_access",
    )
    download = submit_workflow(FakeCluster(), "workload.download")
    assert [s.name for s in download.stages] == ["check", "apply"]


@pytest.mark.parametrize("recipe", list(RECIPES))
async def test_a_secrets_manager_secret_is_copied_before_the_apply(recipe: str) -> None:
    cluster = FakeCluster()
    cluster.secrets["hf-token"] = {"token": "t"}
    value = "wandb-s3cr3t-value"
    manager = FakeSecretsManager(
        {ARN: value, DB_ARN: json.dumps({"user": "u", "password": "db-s3cr3t"})}
    )
    results = await run(
        submit_workflow(cluster, SubmitJob.kind(), manager), submit(SECRET_ENV, recipe)
    )
    wandb, db = synced_secret_name(ARN, None), synced_secret_name(DB_ARN, "password")
    assert cluster.calls == [f"put secret {db}", f"put secret {wandb}", "apply j"]
    assert cluster.secrets[wandb] == {"value": value}
    assert cluster.secrets[db] == {"value": "db-s3cr3t"}
    assert cluster.annotations[wandb] == {ARN_ANNOTATION: ARN}
    assert cluster.annotations[db] == {ARN_ANNOTATION: DB_ARN, JSON_KEY_ANNOTATION: "password"}
    assert results["secrets"].outputs == {
        "secrets": [
            {"env": "DB_PASSWORD", "secret": db, "arn": DB_ARN},
            {"env": "WANDB_API_KEY", "secret": wandb, "arn": ARN},
        ]
    }
    recorded = json.dumps({k: v.outputs for k, v in results.items()})
    assert "s3cr3t" not in recorded  # not in the outputs, so not in the operation nor its events
    rendered = containers(recipe, cluster.objects["j"])[0]["env"]
    assert {
        "name": "WANDB_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": wandb, "key": "value"}},
    } in rendered


async def test_a_missing_arn_fails_the_submit_naming_the_variable_and_the_arn() -> None:
    cluster = FakeCluster()
    manager = FakeSecretsManager({})
    with pytest.raises(PermanentError) as failed:
        await run(
            submit_workflow(cluster, SubmitJob.kind(), manager),
            submit({"WANDB_API_KEY": {"secrets_manager_arn": ARN}}),
        )
    assert failed.value.code == "SecretNotFound"
    assert failed.value.message == f"secret_env.WANDB_API_KEY: Secrets Manager has no secret {ARN}"
    assert cluster.calls == []  # nothing written, nothing applied


async def test_a_temporary_error_stays_temporary_so_the_engine_retries() -> None:
    manager = FakeSecretsManager({ARN: "v"})
    manager.failures.append(TemporaryError("ThrottlingException", "slow down"))
    with pytest.raises(TemporaryError) as failed:
        await run(
            submit_workflow(FakeCluster(), SubmitJob.kind(), manager),
            submit({"WANDB_API_KEY": {"secrets_manager_arn": ARN}}),
        )
    assert failed.value.message == "secret_env.WANDB_API_KEY: slow down"


async def test_a_resubmit_of_the_same_job_reads_no_secret() -> None:
    cluster = FakeCluster()
    manager = FakeSecretsManager({ARN: "v"})
    workflow = submit_workflow(cluster, SubmitJob.kind(), manager)
    command = submit({"WANDB_API_KEY": {"secrets_manager_arn": ARN}})
    await run(workflow, command)
    again = await run(workflow, command)
    assert again["check"].noop and again["secrets"].noop and again["apply"].noop
    assert manager.reads == [ARN]


async def test_a_job_without_arns_makes_no_secrets_call() -> None:
    cluster = FakeCluster()
    cluster.secrets["s"] = {"k": "v"}
    results = await run(
        submit_workflow(cluster, SubmitJob.kind(), None),
        submit({"X": {"secret": "s", "key": "k"}}),
    )
    assert results["secrets"].noop and cluster.calls == ["apply j"]


async def test_a_missing_kubernetes_secret_is_refused_by_the_check() -> None:
    cluster = FakeCluster()
    with pytest.raises(PermanentError) as refused:
        await run(
            submit_workflow(cluster, SubmitJob.kind(), None),
            submit({"WANDB_API_KEY": {"secret": "wandb", "key": "api-key"}}),
        )
    assert refused.value.code == "InvalidJob"
    assert refused.value.message.startswith(
        "secret_env.WANDB_API_KEY: the Secret wandb does not exist in namespace default"
    )
    assert "POST /api/v1/clusters/{name}/secrets" in (refused.value.hint or "")
    assert cluster.calls == []


def test_the_plan_says_which_secrets_are_copied() -> None:
    facts = ClusterFacts(
        groups={"gpu": GroupFacts("gpu", "ml.g5.8xlarge", 2, 1, 1)},
        storage=True,
        kinds=frozenset({"HyperPodPyTorchJob"}),
    )
    plan = plan_submit("c", spec(secret_env={"WANDB_API_KEY": {"secrets_manager_arn": ARN}}), facts)
    assert any(
        note.startswith(f"secret_env.WANDB_API_KEY: Secrets Manager secret {ARN} is copied")
        for note in plan.notes
    )
