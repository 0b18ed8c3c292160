"""The Secrets Manager adapter against the simulated AWS, with secrets made by plain boto3: it
reads a secret string or UTF-8 binary by ARN in the ARN's region, and a missing secret is a
permanent error naming the ARN (and never a value)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from shared.errors import PermanentError
from sim.aws import SimulatedAws
from sim.testing import aws_client, aws_env, simulated_aws
from workload_svc.adapters.secretsmanager import SecretsManager, region_of

ACCOUNT = "222222222222"
sim = simulated_aws(profile="fast", account_id=ACCOUNT, set_env=False, scope="module")


@pytest.fixture
def manager(sim: SimulatedAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[SecretsManager]:
    for key, value in aws_env(sim).items():
        monkeypatch.setenv(key, value)
    yield SecretsManager(sim.endpoint_url)


async def test_reads_a_string_and_a_binary_secret_by_arn(
    sim: SimulatedAws, manager: SecretsManager
) -> None:
    client = aws_client(sim, "secretsmanager")
    text = client.create_secret(Name="hyperpilot/wandb", SecretString="wandb-value")["ARN"]
    blob = client.create_secret(Name="hyperpilot/blob", SecretBinary=b"bytes-value")["ARN"]
    assert await manager.value(text) == "wandb-value"
    assert await manager.value(blob) == "bytes-value"
    client.put_secret_value(SecretId=text, SecretString="rotated")
    assert await manager.value(text) == "rotated"  # the current version, read each time


async def test_binary_that_is_not_text_is_refused(
    sim: SimulatedAws, manager: SecretsManager
) -> None:
    client = aws_client(sim, "secretsmanager")
    arn = client.create_secret(Name="hyperpilot/raw", SecretBinary=b"\xff\xfe\x00")["ARN"]
    with pytest.raises(PermanentError) as refused:
        await manager.value(arn)
    assert refused.value.code == "SecretNotText" and arn in refused.value.message


async def test_a_missing_secret_is_permanent_and_names_the_arn(manager: SecretsManager) -> None:
    arn = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:hyperpilot/none-AbCdEf"
    with pytest.raises(PermanentError) as missing:
        await manager.value(arn)
    assert missing.value.code == "SecretNotFound"
    assert missing.value.message.startswith(f"Secrets Manager has no secret {arn}")
    assert missing.value.__cause__ is None and missing.value.__suppress_context__


async def test_the_client_is_of_the_arns_region(sim: SimulatedAws, manager: SecretsManager) -> None:
    env = aws_env(sim)
    client = boto3.client(
        "secretsmanager",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name="eu-west-1",
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    arn = client.create_secret(Name="hyperpilot/eu", SecretString="eu-value")["ARN"]
    assert region_of(arn) == "eu-west-1"
    assert await manager.value(arn) == "eu-value"
