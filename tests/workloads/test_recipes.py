"""Recipes: typed inputs with defaults and rules, rendered to the custom resource that runs them."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from shared.contracts.workloads import (
    JobSpec,
    ModelDownloadSpec,
    SubmitJob,
    shared_path,
)
from shared.validation import RuleViolation
from workload_svc.domain.render import GROUP_LABEL, download_job, render

SPEC: TypeAdapter[Any] = TypeAdapter(JobSpec)


def spec(**fields: Any) -> Any:
    return SPEC.validate_python(
        {"recipe": "pytorch", "name": "j", "instance_group": "gpu", "script": "train.py", **fields}
    )


def test_paths_resolve_against_the_shared_bucket() -> None:
    assert shared_path("models/qwen", "model") == "/s3/models/qwen"
    assert shared_path("/s3/datasets/a", "dataset") == "/s3/datasets/a"
    for bad in ("../x", "/etc/passwd", "s3://bucket/key", " "):
        with pytest.raises(RuleViolation) as info:
            shared_path(bad, "model")
        assert info.value.hint


def test_pytorch_recipe_renders_a_hyperpod_pytorch_job() -> None:
    rendered = render(
        spec(
            replicas=2,
            resources={"gpus": 8, "efa": 4},
            run_policy={
                "job_max_retry_count": 5,
                "restart_policy": {"num_restart_before_full_job_restart": 2},
                "log_monitoring": [
                    {
                        "name": "steps",
                        "log_pattern": ".*step \\d+.*",
                        "expected_recurring_frequency_seconds": 60,
                    }
                ],
            },
            elastic={"min_replicas": 1, "max_replicas": 4},
        )
    )
    assert (rendered.api_version, rendered.kind) == (
        "sagemaker.amazonaws.com/v1",
        "HyperPodPyTorchJob",
    )
    body = rendered.body["spec"]
    assert body["nprocPerNode"] == "8"
    replica = body["replicaSpecs"][0]
    assert replica["replicas"] == 2 and replica["maxReplicas"] == 4
    pod = replica["template"]["spec"]
    assert pod["nodeSelector"] == {"sagemaker.amazonaws.com/instance-group-name": "gpu"}
    container = pod["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}
    assert container["volumeMounts"] == [{"name": "shared", "mountPath": "/s3"}]
    assert "torchrun" in container["command"][2] and "/s3/train.py" in container["command"][2]
    run = body["runPolicy"]
    assert run["jobMaxRetryCount"] == 5
    assert run["restartPolicy"]["numRestartBeforeFullJobRestart"] == 2
    assert run["logMonitoringConfiguration"][0]["expectedRecurringFrequencyInSeconds"] == 60
    assert body["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 4}


@pytest.mark.parametrize(
    ("recipe", "fields", "kind", "needle"),
    [
        (
            "llama-factory",
            {"model": "models/m", "dataset": "datasets/d"},
            "HyperPodPyTorchJob",
            "llamafactory-cli train",
        ),
        (
            "ms-swift",
            {"model": "models/m", "dataset": "datasets/d"},
            "HyperPodPyTorchJob",
            "swift sft",
        ),
        (
            "verl",
            {"model": "models/m", "train_files": "d/train.parquet", "val_files": "d/val.parquet"},
            "RayJob",
            "verl.trainer.main_ppo",
        ),
    ],
)
def test_each_recipe_renders_its_kind(
    recipe: str, fields: dict[str, Any], kind: str, needle: str
) -> None:
    typed = SPEC.validate_python({"recipe": recipe, "name": "r", "instance_group": "gpu", **fields})
    rendered = render(typed)
    assert rendered.kind == kind
    text = str(rendered.body)
    assert needle in text and "/s3/models/m" in text and "s3-claim" in text


def _container(fields: dict[str, Any]) -> dict[str, Any]:
    typed = SPEC.validate_python({"name": "r", "instance_group": "gpu", **fields})
    rendered = render(typed)
    assert rendered.kind == "HyperPodPyTorchJob"
    [container] = rendered.body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"]
    assert container["volumeMounts"] == [{"name": "shared", "mountPath": "/s3"}]
    return dict(container)


def test_a_shell_recipe_runs_its_script_as_bash_s_program_on_every_worker() -> None:
    body = 'set -o pipefail\necho "rank $NODE_RANK of $NNODES via $MASTER_ADDR:$MASTER_PORT"\n'
    container = _container({"recipe": "shell", "body": body, "replicas": 2})
    # the script is bash's program as it was written: one argument, nothing added around it
    assert container["command"] == ["/bin/bash", "-ec", body]
    assert container["image"].startswith("pytorch/pytorch:")
    with pytest.raises(ValidationError) as info:
        SPEC.validate_python(
            {
                "recipe": "shell",
                "name": "r",
                "instance_group": "gpu",
                "body": "echo hi\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
            }
        )
    [error] = info.value.errors()
    assert "body line 2 holds what looks like" in error["msg"]
    assert "AKIAIOSFODNN7EXAMPLE" not in error["msg"]  # the refusal never repeats it


def test_ms_swift_grpo_renders_swift_rlhf_with_its_rewards() -> None:
    container = _container(
        {
            "recipe": "ms-swift",
            "algorithm": "grpo",
            "model": "models/m",
            "dataset": "datasets/d",
            "reward_funcs": ["accuracy", "cosine"],
            "num_generations": 4,
        }
    )
    line = container["command"][2]
    argv = shlex.split(line)
    assert argv[:4] == ["swift", "rlhf", "--rlhf_type", "grpo"]
    at = argv.index("--reward_funcs")
    assert argv[at + 1 : at + 3] == ["accuracy", "cosine"]
    assert argv[argv.index("--num_generations") + 1] == "4"
    assert argv[argv.index("--model") + 1] == "/s3/models/m"
    sft = _container({"recipe": "ms-swift", "model": "models/m", "dataset": "datasets/d"})
    assert shlex.split(sft["command"][2])[:2] == ["swift", "sft"]
    assert "--reward_funcs" not in sft["command"][2]
    with pytest.raises(ValidationError):
        SPEC.validate_python(
            {
                "recipe": "ms-swift",
                "algorithm": "grpo",
                "name": "r",
                "instance_group": "gpu",
                "model": "m",
                "dataset": "d",
                "reward_funcs": ["nope"],
            }
        )


@pytest.mark.parametrize(
    ("recipe", "length_flag"), [("llama-factory", "--cutoff_len"), ("ms-swift", "--max_length")]
)
def test_typed_hyperparameters_render_to_the_recipe_s_flags(recipe: str, length_flag: str) -> None:
    hyperparameters = {
        "batch_size": 4,
        "gradient_accumulation_steps": 2,
        "max_length": 4096,
        "lora_rank": 16,
        "max_steps": 50,
    }
    container = _container(
        {
            "recipe": recipe,
            "model": "models/m",
            "dataset": "datasets/d",
            "hyperparameters": hyperparameters,
        }
    )
    argv = shlex.split(container["command"][2])
    flags = {
        "--per_device_train_batch_size": "4",
        "--gradient_accumulation_steps": "2",
        length_flag: "4096",
        "--lora_rank": "16",
        "--max_steps": "50",
    }
    for flag, value in flags.items():
        assert argv[argv.index(flag) + 1] == value, flag
    default = _container({"recipe": recipe, "model": "models/m", "dataset": "datasets/d"})
    default_argv = shlex.split(default["command"][2])
    assert "--max_steps" not in default_argv
    assert default_argv[default_argv.index("--per_device_train_batch_size") + 1] == "1"


def test_mlflow_links_the_run_to_the_job() -> None:
    rendered = render(spec(mlflow_tracking_uri="http://mlflow:5000"))
    env = {
        e["name"]: e.get("value")
        for e in rendered.body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0][
            "env"
        ]
    }
    assert env["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
    assert env["MLFLOW_RUN_NAME"] == "j"


@pytest.mark.parametrize(
    "fields",
    [
        {"replicas": 5, "elastic": {"min_replicas": 1, "max_replicas": 4}},
        {"elastic": {"min_replicas": 3, "max_replicas": 2}},
        {
            "elastic": {"min_replicas": 1, "max_replicas": 2},
            "run_policy": {"job_max_retry_count": 0},
        },
        {"env": {"HF_TOKEN": "x"}},
        {"run_policy": {"log_monitoring": [{"name": "a", "log_pattern": "("}]}},
        {"run_policy": {"log_monitoring": [{"name": "a", "log_pattern": "x"}]}},
        {"resources": {"gpus": 65}},
        {"name": "Bad_Name"},
        {"unknown": 1},
    ],
)
def test_rules_refuse_bad_specs(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**fields)


@pytest.mark.parametrize(
    ("elastic", "message", "hint"),
    [
        (
            {"replica_increment_step": 2, "replica_discrete_values": [1, 2]},
            "replica_increment_step and elastic.replica_discrete_values are exclusive",
            "not both",
        ),
        (
            {"replica_discrete_values": [1, 2, 6]},
            "replica_discrete_values [6] outside [min_replicas 1, max_replicas 4]",
            "widen min_replicas/max_replicas",
        ),
        (
            {"replica_discrete_values": [4, 2]},
            "not ascending without repeats",
            "ascending: [2, 4]",
        ),
        ({"replica_discrete_values": [2, 2]}, "not ascending without repeats", "[2]"),
        ({"replica_discrete_values": [0, 2]}, "has a value below 1", "at least 1"),
    ],
)
def test_elastic_sizes_are_checked_with_the_way_out(
    elastic: dict[str, Any], message: str, hint: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        spec(elastic={"min_replicas": 1, "max_replicas": 4, **elastic})
    [error] = refused.value.errors()
    assert error["loc"][:2] == ("pytorch", "elastic"), error
    assert message in str(error["msg"]), error
    violation = (error.get("ctx") or {}).get("error")
    assert isinstance(violation, RuleViolation) and hint in violation.hint


def test_elastic_sizes_and_scaling_timeout_render() -> None:
    job = spec(
        replicas=2,
        elastic={
            "min_replicas": 1,
            "max_replicas": 8,
            "replica_discrete_values": [1, 2, 4, 8],
            "scaling_timeout_seconds": 300,
        },
    )
    assert job.elastic.sizes() == [1, 2, 4, 8]
    assert render(job).body["spec"]["elasticPolicy"] == {
        "minReplicas": 1,
        "maxReplicas": 8,
        "replicaDiscreteValues": [1, 2, 4, 8],
        "scalingTimeoutInSeconds": 300,
    }
    stepped = spec(
        replicas=2, elastic={"min_replicas": 2, "max_replicas": 7, "replica_increment_step": 2}
    )
    assert stepped.elastic.sizes() == [2, 4, 6]
    assert render(stepped).body["spec"]["elasticPolicy"]["replicaIncrementStep"] == 2
    assert "replicaDiscreteValues" not in render(stepped).body["spec"]["elasticPolicy"]
    with pytest.raises(ValidationError, match="scaling_timeout_seconds"):
        spec(elastic={"min_replicas": 1, "max_replicas": 2, "scaling_timeout_seconds": -1})


def test_verl_refuses_elastic() -> None:
    with pytest.raises(ValidationError, match="RayJob"):
        SPEC.validate_python(
            {
                "recipe": "verl",
                "name": "v",
                "instance_group": "gpu",
                "model": "m",
                "train_files": "t",
                "val_files": "v",
                "elastic": {"min_replicas": 1, "max_replicas": 2},
            }
        )


def test_a_command_reads_back_from_the_bus() -> None:
    command = SubmitJob(cluster="c", region="us-east-1", spec=spec())
    again = SubmitJob.from_payload({**command.model_dump(mode="json"), "added_later": 1})
    assert again == command


def test_model_download_takes_the_token_by_reference_only() -> None:
    download = ModelDownloadSpec(name="dl", repo_id="Qwen/Qwen2.5-0.5B", token_secret="hf-token")
    rendered = download_job(download)
    assert rendered.kind == "Job" and download.target_path() == "/s3/models/Qwen2.5-0.5B"
    container = rendered.body["spec"]["template"]["spec"]["containers"][0]
    token_env = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert token_env == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    }
    assert "hf_hub_download" in container["command"][-1]  # not huggingface-cli: see render
    assert "hf-token" not in " ".join(container["command"])


def _pod_specs(rendered: Any) -> list[dict[str, Any]]:
    body = rendered.body["spec"]
    if rendered.kind == "RayJob":
        ray = body["rayClusterSpec"]
        return [ray["headGroupSpec"]["template"]["spec"]] + [
            g["template"]["spec"] for g in ray["workerGroupSpecs"]
        ]
    return [r["template"]["spec"] for r in body["replicaSpecs"]]


VERL = {"model": "models/m", "train_files": "d/train.parquet", "val_files": "d/val.parquet"}


@pytest.mark.parametrize(("recipe", "fields"), [("pytorch", {"script": "t.py"}), ("verl", VERL)])
def test_placement_renders_node_and_pod_affinity(recipe: str, fields: dict[str, Any]) -> None:
    base = {"recipe": recipe, "name": "r", "instance_group": "gpu", **fields}
    plain = _pod_specs(render(SPEC.validate_python(base)))
    assert all("affinity" not in p and p["nodeSelector"] == {GROUP_LABEL: "gpu"} for p in plain)

    healthy = {"deep_health_check_passed": True, "topology": "network-node-layer-3"}
    for pod in _pod_specs(render(SPEC.validate_python({**base, "placement": healthy}))):
        assert pod["nodeSelector"] == {GROUP_LABEL: "gpu"}
        node = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert node["nodeSelectorTerms"] == [
            {
                "matchExpressions": [
                    {
                        "key": "sagemaker.amazonaws.com/deep-health-check-status",
                        "operator": "In",
                        "values": ["Passed"],
                    }
                ]
            }
        ]
        [preferred] = pod["affinity"]["podAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert preferred == {
            "weight": 100,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"hyperpilot.dev/job": "r"}},
                "topologyKey": "topology.k8s.aws/network-node-layer-3",
            },
        }

    required = {"topology": "network-node-layer-2", "topology_required": True}
    for pod in _pod_specs(render(SPEC.validate_python({**base, "placement": required}))):
        layer = "topology.k8s.aws/network-node-layer-2"
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [
            {"matchExpressions": [{"key": layer, "operator": "Exists"}]}
        ]
        [term] = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == layer


def test_placement_rules() -> None:
    base = {"recipe": "pytorch", "name": "r", "instance_group": "gpu", "script": "t.py"}
    with pytest.raises(ValidationError) as info:
        SPEC.validate_python({**base, "placement": {"topology_required": True}})
    assert "placement.topology_required needs placement.topology" in str(info.value)
    with pytest.raises(ValidationError):
        SPEC.validate_python({**base, "placement": {"topology": "network-node-layer-9"}})
