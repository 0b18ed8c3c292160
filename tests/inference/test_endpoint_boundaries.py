"""The endpoint contract keeps user workloads out of the namespaces Kubernetes and the installed
operators run in, keeps credentials out of an endpoint's environment, and names a pool worker
and its model only as valid Kubernetes names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from shared.boundary import RESERVED_NAMESPACES
from shared.contracts.inference import (
    ContainerChange,
    EndpointChange,
    EndpointSpec,
    EndpointTarget,
    PoolAssignment,
    PoolWorker,
)
from shared.secrets import HINT


def spec(**fields: Any) -> dict[str, Any]:
    return {
        "name": "chat",
        "instance_type": "ml.g5.8xlarge",
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    } | fields


def refusal(exc: pytest.ExceptionInfo[ValidationError]) -> tuple[str, str, str]:
    (error,) = exc.value.errors()
    hint = getattr((error.get("ctx") or {}).get("error"), "hint", "")
    return ".".join(map(str, error["loc"])), str(error["msg"]), str(hint)


# The namespaces the repo's operators and add-ons are installed into (cluster-svc's components
# and EKS add-ons, and the emulator's installers).
OPERATOR_NAMESPACES = [
    "aws-hyperpod",
    "hyperpod-inference-system",
    "hyperpod-observability",
    "kubeflow",
    "mpi-operator",
    "kueue-system",
    "ray-system",
    "kuberay",
    "keda",
    "cert-manager",
    "amazon-cloudwatch",
]


@pytest.mark.parametrize(
    "namespace",
    ["kube-system", "kube-public", "kube-node-lease", "kube-anything", *OPERATOR_NAMESPACES],
)
def test_an_endpoint_is_not_deployed_into_a_reserved_namespace(namespace: str) -> None:
    with pytest.raises(ValidationError) as refused:
        EndpointSpec.model_validate(spec(namespace=namespace))
    field, message, hint = refusal(refused)
    assert field == "namespace" and "reserved" in message and "kube-system" in hint
    with pytest.raises(ValidationError) as refused:
        EndpointTarget(cluster="c1", name="chat", namespace=namespace)
    assert refusal(refused)[0] == "namespace"


@pytest.mark.parametrize("namespace", ["default", "team-a", "hyperpod", "inference"])
def test_other_namespaces_are_fine(namespace: str) -> None:
    assert EndpointSpec.model_validate(spec(namespace=namespace)).namespace == namespace
    assert EndpointTarget(cluster="c1", name="chat", namespace=namespace).namespace == namespace


def test_the_reserved_namespaces_are_those_of_the_installed_operators() -> None:
    assert RESERVED_NAMESPACES - {"kube-system", "kube-public", "kube-node-lease"} == set(
        OPERATOR_NAMESPACES
    )


def test_the_api_reference_says_which_namespaces_are_refused() -> None:
    schema = EndpointSpec.model_json_schema()["properties"]["namespace"]
    assert "kube-system" in schema["description"] and "kube-*" in schema["description"]
    for name in OPERATOR_NAMESPACES:
        assert name in schema["description"]


@pytest.mark.parametrize(
    "env",
    [
        {"OPENAI_API_KEY": "anything"},
        {"WANDB_API_KEY": "x"},
        {"DB_PASSWORD": "x"},
        {"SOME_VALUE": "AKIAABCDEFGHIJKLMNOP"},
        {"SOME_VALUE": "hf_abcdefghijklmnopqrstuvwxyz0123"},
        {"SOME_VALUE": "sk-abcdefghijklmnopqrstuvwxyz"},
    ],
)
def test_a_credential_in_the_environment_is_refused_with_the_way_out(env: dict[str, str]) -> None:
    container = {"engine": "vllm", "model": "Qwen/Qwen3-0.6B", "env": env}
    with pytest.raises(ValidationError) as refused:
        EndpointSpec.model_validate(spec(container=container))
    field, message, hint = refusal(refused)
    assert field == "container.env" and "secret" in message and hint == HINT
    assert "anything" not in message and "AKIA" not in message  # the value is never echoed
    with pytest.raises(ValidationError) as refused:
        EndpointChange.model_validate({"container": {"env": env}})
    assert refusal(refused)[0] == "container.env"
    with pytest.raises(ValidationError):
        ContainerChange.model_validate({"env": env})


def test_hf_token_keeps_its_own_way_out() -> None:
    container = {"engine": "vllm", "model": "Qwen/Qwen3-0.6B", "env": {"HF_TOKEN": "x"}}
    with pytest.raises(ValidationError) as refused:
        EndpointSpec.model_validate(spec(container=container))
    field, message, hint = refusal(refused)
    assert field == "container.env" and "HF_TOKEN would put a secret" in message
    assert "container.hf_token_secret" in hint


def test_an_ordinary_environment_is_fine() -> None:
    env = {"VLLM_LOGGING_LEVEL": "DEBUG", "TOKENIZERS_PARALLELISM": "false", "MAX_LEN": "4096"}
    container = {"engine": "vllm", "model": "Qwen/Qwen3-0.6B", "env": env}
    assert EndpointSpec.model_validate(spec(container=container)).container.env == env  # type: ignore[union-attr]
    assert ContainerChange.model_validate({"env": env}).env == env


@pytest.mark.parametrize("pod", ["a.", ".a", "a..b", "A", "a/b", "a b", "", "a" * 254])
def test_a_pool_worker_is_a_pod_name(pod: str) -> None:
    with pytest.raises(ValidationError) as refused:
        PoolWorker.model_validate({"pod": pod})
    assert refusal(refused)[0] == "pod"
    with pytest.raises(ValidationError):
        PoolAssignment.model_validate({"pod": pod, "model": "qwen"})


def test_a_pool_worker_body_has_no_other_field() -> None:
    assert PoolWorker.model_validate({"pod": "pool-6d4f-abc12"}).pod == "pool-6d4f-abc12"
    with pytest.raises(ValidationError) as refused:
        PoolWorker.model_validate({"pod": "pool-6d4f-abc12", "model": "qwen"})
    assert refused.value.errors()[0]["type"] == "extra_forbidden"


@pytest.mark.parametrize("model", ["llama3.1", "Qwen", "a/b", "..", "-a", "a" * 64])
def test_a_pool_model_is_a_name_part(model: str) -> None:
    with pytest.raises(ValidationError) as refused:
        PoolAssignment.model_validate({"pod": "w-1", "model": model})
    assert refusal(refused)[0] == "model"
