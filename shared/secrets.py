"""Secrets travel by reference, never by value: the one place that says what looks like one.

A credential in a job's or an endpoint's environment would be stored in the operation, its
events, the append-only audit log, the job or endpoint record and the event stream, where a
viewer reads it. So an environment value is refused when its *name* says it is a credential
(`AWS_SECRET_ACCESS_KEY`, `WANDB_API_KEY`, `HF_TOKEN`, `DB_PASSWORD`, ...) or its *value* has the
shape of one (an AWS access key id, a Hugging Face `hf_` or OpenAI/Anthropic `sk-` key, a GitHub
or Slack token, a JWT, a PEM private key, or a long high-entropy string). The hint names the two
references that work instead: a Kubernetes Secret the control plane writes from a write-only call,
or an AWS Secrets Manager ARN.

`redact` is the last line behind that refusal: whatever still reaches events, audit rows, logs and
the bus goes through it, and a value that looks like a secret leaves as `REDACTED`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from shared.validation import RuleViolation

REDACTED = "***REDACTED***"

# A name says "credential" when one of these words is in it. TOKEN is not matched inside
# TOKENIZER (TOKENIZERS_PARALLELISM is a common, harmless setting).
_SECRET_NAME = re.compile(
    r"TOKEN(?!IZ)|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
    r"|AUTH_?KEY|SESSION_?KEY|SIGNING_?KEY|CLIENT_?KEY|CONNECTION_?STRING",
    re.IGNORECASE,
)

# Shapes of well-known credentials, from their issuers' documented formats.
_SECRET_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # AWS access key ids: "AKIA" long-term, "ASIA" temporary (IAM User Guide, "IAM identifiers").
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("an API key (sk-...)", re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    (
        "a JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    ),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
_TOKEN_LIKE = re.compile(r"^[A-Za-z0-9+/=_\-]{32,}$")
_MIN_ENTROPY = 4.0  # bits per character; English words and hex digests stay below


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


# A command-line flag's name before its value (`--api-key=`), and an absolute path: a path is
# made of names (`/s3/models/Meta-Llama-3-8B-Instruct`), so each is judged on its own.
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.\-]*=")
_ABSOLUTE_PATH = re.compile(r"^(/[^/]+){2,}/?$")


def _high_entropy(value: str) -> bool:
    """A long random-looking string: 32+ token characters, upper, lower and digits mixed
    (a flag's value without the flag; an absolute path segment by segment)."""
    value = _FLAG.sub("", value, count=1)
    if _ABSOLUTE_PATH.match(value):
        return any(_high_entropy(segment) for segment in value.split("/") if segment)
    if not _TOKEN_LIKE.match(value):
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes == 3 and _entropy(value) >= _MIN_ENTROPY


def secret_name(name: str) -> bool:
    """Whether a variable or field name says it holds a credential."""
    return bool(_SECRET_NAME.search(name))


def secret_shape(value: str) -> str | None:
    """What kind of credential `value` looks like, or None."""
    for what, pattern in _SECRET_VALUES:
        if pattern.search(value):
            return what
    if _high_entropy(value):
        return "a long random string (a key or token)"
    return None


HINT = (
    "pass it by reference: write it into a Kubernetes Secret with POST"
    " /api/v1/clusters/{cluster}/secrets (the value is never recorded) and name it in a job's"
    ' secret_env ({"secret": "<name>", "key": "<key>"}), or keep it in AWS Secrets Manager and'
    ' give its ARN there ({"secrets_manager_arn": "arn:aws:secretsmanager:..."}); an'
    " endpoint's Hugging Face token goes in container.hf_token_secret; AWS credentials come"
    " from the pods' IAM role"
)


def check_env(env: dict[str, str], field: str = "env") -> dict[str, str]:
    """Refuse an environment that carries a credential by name or by value (RuleViolation)."""
    for name, value in env.items():
        if secret_name(name):
            raise RuleViolation(
                f"{field}.{name} looks like a secret by its name; secrets are never stored in a"
                " spec, its events or the audit log",
                HINT,
            )
        what = secret_shape(value)
        if what:
            raise RuleViolation(
                f"{field}.{name} holds what looks like {what}; secrets are never stored in a"
                " spec, its events or the audit log",
                HINT,
            )
    return env


def redact(value: Any, *, _env: bool = False) -> Any:
    """`value` with every secret-looking string, and every value of a secret-named variable in
    an `env` map, replaced by REDACTED. Dicts and lists are copied; nothing else is touched.
    (Fields that *name* a Secret, such as `hf_token_secret`, hold references and stay.)"""
    if isinstance(value, str):
        return REDACTED if secret_shape(value) else value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if _env and isinstance(key, str) and secret_name(key):
                out[key] = REDACTED
            else:
                out[key] = redact(item, _env=key in ENV_FIELDS)
        return out
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


ENV_FIELDS = frozenset({"env", "environment", "extra_env"})
