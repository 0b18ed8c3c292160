"""What looks like a credential, by name and by value, and the redaction behind the refusal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.secrets import REDACTED, check_env, redact, secret_name, secret_shape
from shared.validation import RuleViolation

SECRET_NAMES = [
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN",
    "WANDB_API_KEY",
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "DB_PASSWORD",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "my_private_key",
]
PLAIN_NAMES = ["NCCL_DEBUG", "TOKENIZERS_PARALLELISM", "PYTORCH_CUDA_ALLOC_CONF", "HF_HOME", "KEYS"]
SECRET_VALUES = [
    "AKIAIOSFODNN7EXAMPLE",  # AWS's documented example access key id
    "ASIAY34FZKBOKMUTVV7A",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS's documented example secret key
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    "sk-proj-AbCdEfGhIjKlMnOpQrSt",
    "sk-ant-api03-AbCdEfGhIjKlMnOp",
    "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE",
    "--api-key=sk-AbCdEfGhIjKlMnOpQrSt",
]
PLAIN_VALUES = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen3-0.6B",
    "s3://team-llm-data/checkpoints",
    "/s3/models/qwen3",
    "0123456789abcdef0123456789abcdef01234567",  # a git commit: hex, one case
    "123e4567-e89b-12d3-a456-426614174000",
    "http://mlflow.mlflow.svc:5000",
    "expandable_segments:True",
    "1e-4",
    "INFO",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_credential_names_are_recognised(name: str) -> None:
    assert secret_name(name)
    with pytest.raises(RuleViolation) as refused:
        check_env({name: "x"})
    assert name in str(refused.value) and "Secret" in refused.value.hint


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names_pass(name: str) -> None:
    assert not secret_name(name)


@pytest.mark.parametrize("value", SECRET_VALUES)
def test_credential_values_are_recognised(value: str) -> None:
    assert secret_shape(value)
    with pytest.raises(RuleViolation) as refused:
        check_env({"SOME_SETTING": value})
    assert "SOME_SETTING" in str(refused.value)
    assert value not in str(refused.value)  # the refusal never repeats the secret


@pytest.mark.parametrize("value", PLAIN_VALUES)
def test_plain_values_pass(value: str) -> None:
    assert secret_shape(value) is None
    assert check_env({"SETTING": value}) == {"SETTING": value}


def test_redaction_keeps_references_and_replaces_values() -> None:
    payload = {
        "spec": {
            "env": {"WANDB_API_KEY": "abc", "NCCL_DEBUG": "INFO"},
            "hf_token_secret": "hf-token",
            "args": ["--lr", "1e-4", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"],
        },
        "token_secret": "hf-token",
    }
    assert redact(payload) == {
        "spec": {
            "env": {"WANDB_API_KEY": REDACTED, "NCCL_DEBUG": "INFO"},
            "hf_token_secret": "hf-token",
            "args": ["--lr", "1e-4", REDACTED],
        },
        "token_secret": "hf-token",
    }


@given(
    st.recursive(
        st.text() | st.sampled_from(SECRET_VALUES) | st.integers() | st.none(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_redaction_is_idempotent_and_leaves_no_secret_shape(value: object) -> None:
    once = redact(value)
    assert redact(once) == once
    assert not [s for s in _strings(once) if secret_shape(s)]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
