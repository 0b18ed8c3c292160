"""The endpoint rules on the contract: the field, the rule and the way out, for every face."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from shared.contracts.inference import EndpointSpec, tensor_parallel_size
from shared.validation import RuleViolation


def spec(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "chat",
        "instance_type": "ml.g5.8xlarge",
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    body.update(overrides)
    return body


def refusal(body: dict[str, Any]) -> tuple[str, str, str]:
    with pytest.raises(ValidationError) as info:
        EndpointSpec.model_validate(body)
    error = info.value.errors()[0]
    hint = getattr((error.get("ctx") or {}).get("error"), "hint", "")
    return ".".join(str(p) for p in error["loc"]), str(error["msg"]), str(hint)


def test_a_valid_spec_keeps_what_was_sent() -> None:
    parsed = EndpointSpec.model_validate(spec())
    assert parsed.gpus == 1 and parsed.container is not None
    assert parsed.container.image_or_default().startswith("vllm/")
    assert parsed.container.port_or_default() == 8000


def test_gpus_are_required_and_never_inferred_from_tensor_parallel_size() -> None:
    body = spec(container={"engine": "vllm", "model": "m", "args": ["--tensor-parallel-size", "4"]})
    del body["gpus"]
    where, message, hint = refusal(body)
    assert where == "gpus" and "never inferred" in message and "tensor-parallel size 4" in message
    assert hint.startswith("set gpus")


def test_tensor_parallel_size_above_gpus_is_refused() -> None:
    where, message, hint = refusal(
        spec(gpus=2, container={"engine": "sglang", "model": "m", "args": ["--tp", "4"]})
    )
    assert where == "gpus" and "tensor-parallel size 4" in message and "at least 4" in hint


@pytest.mark.parametrize(
    ("args", "size"),
    [
        (["--tensor-parallel-size", "2"], 2),
        (["--tensor-parallel-size=8"], 8),
        (["--tp-size", "4"], 4),
        (["--model", "m"], None),
    ],
)
def test_tensor_parallel_size_is_read_from_the_command_line(
    args: list[str], size: int | None
) -> None:
    assert tensor_parallel_size(args) == size


def test_engine_and_image_must_agree() -> None:
    where, message, hint = refusal(
        spec(container={"engine": "vllm", "model": "m", "image": "lmsysorg/sglang:v0.5.2"})
    )
    assert where == "container" and "not a vllm image" in message and hint == "use engine sglang"


def test_custom_engine_needs_image_and_command() -> None:
    assert "needs its image" in refusal(spec(container={"engine": "custom"}))[1]
    assert (
        "needs the command"
        in refusal(spec(container={"engine": "custom", "image": "example.com/server:1"}))[1]
    )
    EndpointSpec.model_validate(
        spec(container={"engine": "custom", "image": "example.com/server:1", "command": ["serve"]})
    )


@pytest.mark.parametrize("port", [80, 10250])
def test_ports_privileged_or_reserved_are_refused(port: int) -> None:
    where, _, hint = refusal(spec(container={"engine": "vllm", "model": "m", "port": port}))
    assert where == "container.port" and hint


def test_a_token_in_the_environment_is_refused() -> None:
    where, message, hint = refusal(
        spec(container={"engine": "vllm", "model": "m", "env": {"HF_TOKEN": "hf_x"}})
    )
    assert where == "container.env" and "HF_TOKEN" in message and "hf_token_secret" in hint


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"kind": "sglang"}, "runs SGLang workers"),
        ({"kind": "managed"}, "needs its managed spec"),
        ({"kind": "jumpstart"}, "needs the model"),
        (
            {
                "service": "model_pool",
                "kind": "sglang",
                "container": {"engine": "sglang", "model": "m"},
            },
            "model pool",
        ),
        ({"router": {"policy": "cache_aware"}}, "only an sglang endpoint"),
        (
            {"service": "model_pool", "autoscaling": {"min_replicas": 1}},
            "assigned to models by hand",
        ),
        (
            {
                "container": {"engine": "custom", "image": "me/srv:1", "command": ["srv"]},
                "autoscaling": {},
            },
            "no known serving metrics",
        ),
        (
            {
                "kind": "jumpstart",
                "container": None,
                "jumpstart": {"model_id": "m"},
                "autoscaling": {},
            },
            "self-managed (container, sglang)",
        ),
    ],
)
def test_the_kind_and_its_parts_agree(overrides: dict[str, Any], words: str) -> None:
    assert words in refusal(spec(**overrides))[1]


def test_fallback_instance_types_are_distinct_and_not_for_jumpstart() -> None:
    where, message, hint = refusal(spec(fallback_instance_types=["ml.g5.8xlarge"]))
    assert where == "fallback_instance_types" and "named twice" in message and hint
    where, message, _ = refusal(
        spec(
            kind="jumpstart",
            container=None,
            jumpstart={"model_id": "m"},
            fallback_instance_types=["ml.g6.12xlarge"],
        )
    )
    assert "one instance type" in message
    parsed = EndpointSpec.model_validate(spec(fallback_instance_types=["ml.g6.12xlarge"]))
    assert parsed.instance_types() == ["ml.g5.8xlarge", "ml.g6.12xlarge"]


ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"


@pytest.mark.parametrize(
    ("managed", "where", "words"),
    [
        ({"tls": {"acm_certificate_arn": ARN}}, "managed.tls", "both or neither"),
        (
            {"tls": {"domain_name": "*.example.com", "acm_certificate_arn": ARN}},
            "managed.tls.domain_name",
            "",
        ),
        (
            {"tls": {"certificate_s3_uri": "s3://certs", "hosted_zone_id": "Z123"}},
            "managed.tls",
            "DNS record needs the ACM certificate",
        ),
        ({"tls": {}}, "managed.tls", "names no certificate"),
        ({"data_capture": {}}, "managed", "S3 location"),
        ({"data_capture": {"s3_uri": "https://c"}}, "managed.data_capture.s3_uri", ""),
        (
            {"data_capture": {"s3_uri": "s3://cap", "model_pod": False}},
            "managed.data_capture",
            "no tier",
        ),
        (
            {
                "cloudwatch_triggers": [
                    {"name": "a", "namespace": "n", "metric_name": "m", "target_value": 1}
                ]
            },
            "managed",
            "autoscaling bounds",
        ),
        (
            {"autoscaling": {}, "disaggregation": {"prefill": {"replicas": 2}}},
            "managed",
            "set per role",
        ),
        ({"disaggregation": {"decode": {"replicas": 0}}}, "managed.disaggregation.decode", ""),
    ],
)
def test_managed_tls_and_data_capture_rules(
    managed: dict[str, Any], where: str, words: str
) -> None:
    body = {"model_name": "m", "model_source": {"type": "s3", "s3_bucket": "models"}} | managed
    at, message, _ = refusal(spec(kind="managed", container=None, managed=body))
    assert at.startswith(where) and words in message


def test_data_capture_may_use_the_certificate_bucket() -> None:
    managed = {
        "model_name": "m",
        "model_source": {"type": "s3", "s3_bucket": "models"},
        "tls": {"certificate_s3_uri": "s3://certs/chat"},
        "data_capture": {},
    }
    parsed = EndpointSpec.model_validate(spec(kind="managed", container=None, managed=managed))
    assert parsed.managed and parsed.managed.data_capture
    assert parsed.managed.data_capture.capture == ["Input", "Output"]


def test_autoscaling_bounds_and_model_sources() -> None:
    with pytest.raises(ValidationError, match="above max_replicas"):
        EndpointSpec.model_validate(
            spec(
                kind="sglang",
                container={"engine": "sglang", "model": "m"},
                autoscaling={"min_replicas": 3, "max_replicas": 2},
            )
        )
    with pytest.raises(ValidationError, match="needs s3_bucket"):
        EndpointSpec.model_validate(
            spec(kind="managed", managed={"model_name": "m", "model_source": {"type": "s3"}})
        )


def test_rule_violations_carry_a_hint() -> None:
    try:
        EndpointSpec.model_validate(spec(gpus=None))
    except ValidationError as exc:
        error = exc.errors()[0]["ctx"]["error"]
        assert isinstance(error, RuleViolation) and error.hint
    else:
        raise AssertionError("gpus=None was accepted")


def test_a_change_names_only_what_changes_and_merges_over_the_record() -> None:
    from shared.contracts.inference import EndpointChange

    recorded = EndpointSpec.model_validate(spec(replicas=2)).model_dump(mode="json")
    change = EndpointChange.model_validate({"container": {"image": "vllm/vllm-openai:v0.11.0"}})
    assert change.model_dump(exclude_unset=True) == {
        "container": {"image": "vllm/vllm-openai:v0.11.0"}
    }
    merged = EndpointSpec.model_validate(change.merged(recorded))
    assert merged.container is not None and merged.container.model == "Qwen/Qwen3-0.6B"
    assert merged.container.image == "vllm/vllm-openai:v0.11.0" and merged.replicas == 2
    with pytest.raises(ValidationError, match="names no field"):
        EndpointChange.model_validate({})
    wrong = EndpointChange.model_validate({"container": {"image": "lmsysorg/sglang:v0.5.2"}})
    with pytest.raises(ValidationError, match="not a vllm image"):
        EndpointSpec.model_validate(wrong.merged(recorded))
