"""AWS Secrets Manager, read for a job's `secret_env` (boto3, run in threads).

A secret's value is returned to the caller and nothing else: never logged, never in an error (the
errors carry the ARN and Secrets Manager's code and message, which hold no value).
"""

from __future__ import annotations

import asyncio
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from shared.adapters import aws_session
from shared.errors import PermanentError, StageError, TemporaryError

RETRYABLE = frozenset(
    {"ThrottlingException", "InternalServiceError", "InternalFailure", "ServiceUnavailable"}
)
MISSING = frozenset({"ResourceNotFoundException"})
DENIED = frozenset({"AccessDeniedException", "AccessDenied", "UnrecognizedClientException"})


def region_of(arn: str) -> str:
    """arn:<partition>:secretsmanager:<region>:...: the region the secret lives in."""
    return arn.split(":")[3]


class SecretsManager:
    """GetSecretValue by ARN, with a client per region (the ARN says which)."""

    def __init__(self, endpoint_url: str | None = None) -> None:
        self.endpoint_url = endpoint_url
        self._clients: dict[str, Any] = {}

    def _client(self, region: str) -> Any:
        client = self._clients.get(region)
        if client is None:
            client = aws_session.client(
                "secretsmanager",
                region,
                self.endpoint_url,
                Config(retries={"max_attempts": 3, "mode": "standard"}),
            )
            self._clients[region] = client
        return client

    async def value(self, arn: str) -> str:
        """The secret's current string (a binary secret as UTF-8 text)."""

        def call() -> str:
            found = self._client(region_of(arn)).get_secret_value(SecretId=arn)
            text = found.get("SecretString")
            if text is not None:
                return str(text)
            try:
                return bytes(found.get("SecretBinary") or b"").decode("utf-8")
            except UnicodeDecodeError:
                raise PermanentError(
                    "SecretNotText",
                    f"secret {arn} holds binary data that is not UTF-8 text",
                    "store the value as a secret string (base64-encode binary data)",
                ) from None

        try:
            return await asyncio.to_thread(call)
        except StageError:
            raise
        except ClientError as exc:
            raise _error(exc, arn) from None
        except (EndpointConnectionError, ConnectionError) as exc:
            raise TemporaryError(
                "SecretsManagerUnreachable",
                f"reading secret {arn}: Secrets Manager is unreachable ({type(exc).__name__})",
            ) from None
        except BotoCoreError as exc:
            raise PermanentError(
                type(exc).__name__, f"reading secret {arn} failed ({type(exc).__name__})"
            ) from None


def _error(exc: ClientError, arn: str) -> StageError:
    code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
    message = str(exc.response.get("Error", {}).get("Message", ""))
    if code in MISSING:
        return PermanentError(
            "SecretNotFound",
            f"Secrets Manager has no secret {arn} ({message or code})",
            "check the ARN (aws secretsmanager describe-secret --secret-id <name> shows it),"
            " its region and account, or create the secret first",
        )
    if code in DENIED:
        return PermanentError(
            "SecretAccessDenied",
            f"workload-svc may not read secret {arn} ({code})",
            "grant the control plane's role secretsmanager:GetSecretValue on the secret (the"
            " CloudFormation deployment allows secrets named hyperpilot/* in its account and"
            " region), and kms:Decrypt on its key if it has its own",
        )
    if code in RETRYABLE:
        return TemporaryError(code, f"reading secret {arn}: {message or code}")
    return PermanentError(code, f"reading secret {arn}: {message or code}")


__all__ = ["SecretsManager", "region_of"]
