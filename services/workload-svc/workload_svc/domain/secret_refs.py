"""A job's `secret_env`: which Kubernetes Secret and key each variable comes from (pure).

A `{"secret", "key"}` reference names a Secret in the jobs' namespace as it is. A Secrets
Manager reference (`secrets_manager_arn`, optionally `json_key`) names the Secret workload-svc
writes from it when it submits the job: `hp-sm-<the secret's name, DNS-safe>-<digest>`, key
`value`. The name is derived from the ARN and the JSON key alone, so rendering stays pure and
a dry run shows the same object the submit applies.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from shared.boundary import object_name
from shared.contracts.workloads import SYNCED_SECRET_PREFIX, JobBase, SecretRef
from shared.errors import PermanentError

SYNCED_KEY = "value"  # the key of a Secret copied from Secrets Manager
ARN_ANNOTATION = "hyperpilot.dev/secrets-manager-arn"
JSON_KEY_ANNOTATION = "hyperpilot.dev/secrets-manager-json-key"
_SLUG_MAX = 40  # hp-sm- (6) + slug (40) + '-' + digest (10) = 57 <= 63


@dataclass(frozen=True)
class Synced:
    """A Kubernetes Secret to write from a Secrets Manager secret before the job is applied."""

    env: str  # the first secret_env variable that names it (errors name this one)
    secret: str
    arn: str
    json_key: str | None


def synced_secret_name(arn: str, json_key: str | None) -> str:
    """`hp-sm-<name>-<digest>`: the name part of the ARN lowercased, every run of other
    characters a '-', cut to 40; the digest (of the ARN and the JSON key) keeps two secrets
    whose names read the same apart."""
    name = arn.split(":secret:", 1)[1]
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:_SLUG_MAX].strip("-")
    digest = hashlib.sha256(f"{arn}\n{json_key or ''}".encode()).hexdigest()[:10]
    return object_name(
        SYNCED_SECRET_PREFIX.rstrip("-"), slug or "secret", digest, field="secret_env"
    )


def key_ref(ref: SecretRef) -> tuple[str, str]:
    """(Secret, key) the variable's `valueFrom.secretKeyRef` names."""
    if ref.secrets_manager_arn is not None:
        return synced_secret_name(ref.secrets_manager_arn, ref.json_key), SYNCED_KEY
    assert ref.secret is not None and ref.key is not None  # SecretRef._one_source
    return ref.secret, ref.key


def kube_secrets(spec: JobBase) -> dict[str, str]:
    """The Kubernetes Secrets the spec names as they are: Secret -> the first variable."""
    named: dict[str, str] = {}
    for env, ref in sorted(spec.secret_env.items()):
        if ref.secret is not None:
            named.setdefault(ref.secret, env)
    return named


def synced(spec: JobBase) -> list[Synced]:
    """The Secrets to write from Secrets Manager, once each, in the variables' order."""
    found: dict[str, Synced] = {}
    for env, ref in sorted(spec.secret_env.items()):
        if ref.secrets_manager_arn is None:
            continue
        name = synced_secret_name(ref.secrets_manager_arn, ref.json_key)
        found.setdefault(name, Synced(env, name, ref.secrets_manager_arn, ref.json_key))
    return list(found.values())


def pick(secret: str, item: Synced) -> str:
    """The value to store: the secret string, or its JSON's `json_key` (a string as it is,
    anything else as JSON). Refusals name the variable, the ARN and the key, never the value."""
    if item.json_key is None:
        return secret
    where = f"secret_env.{item.env}"
    try:
        document = json.loads(secret)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise PermanentError(
            "SecretNotJson",
            f"{where}: secret {item.arn} is not a JSON object, so it has no key {item.json_key!r}",
            "drop json_key to use the whole secret string, or store the secret as JSON",
        ) from None
    if item.json_key not in document:
        raise PermanentError(
            "SecretKeyNotFound",
            f"{where}: secret {item.arn} has no JSON key {item.json_key!r}",
            "name one of the secret's JSON keys (aws secretsmanager get-secret-value shows"
            " them), or drop json_key",
        )
    value = document[item.json_key]
    return value if isinstance(value, str) else json.dumps(value)


__all__ = [
    "ARN_ANNOTATION",
    "JSON_KEY_ANNOTATION",
    "SYNCED_KEY",
    "Synced",
    "key_ref",
    "kube_secrets",
    "pick",
    "synced",
    "synced_secret_name",
]
