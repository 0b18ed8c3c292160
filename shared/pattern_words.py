"""The contracts' name and identifier patterns in words, so that a value that does not match
one is refused with what to send ("use 1 to 40 lowercase letters, digits and hyphens, starting
with a letter") rather than the regular expression. REST and MCP word schema errors through
`pattern_hint`; a pattern not listed here falls back to naming the expression."""

from __future__ import annotations

from collections.abc import Mapping

from shared.boundary import (
    DNS_LABEL_PATTERN,
    DNS_SUBDOMAIN_PATTERN,
    GOVERNED_NAME_PATTERN,
    LABEL_VALUE_PATTERN,
    MODEL_ID_PATTERN,
)
from shared.contracts.cluster import (
    ML_INSTANCE_PATTERN,
    NAME_PATTERN,
    ZONE_ID_PATTERN,
)
from shared.contracts.diagnostics import KIND_PATTERN, OBJECT_PATTERN, POD_PATTERN
from shared.contracts.gpu import MIG_PROFILE_PATTERN
from shared.contracts.inference import ENDPOINT_NAME_PATTERN, ENV_NAME_PATTERN
from shared.contracts.instance_groups import LIFECYCLE_URI_PATTERN
from shared.contracts.metrics import DURATION_PATTERN
from shared.contracts.nodes import NODE_ID_PATTERN
from shared.contracts.spaces import QUANTITY_PATTERN, SPACE_NAME_PATTERN
from shared.contracts.storage import FILE_SYSTEM_ID_PATTERN
from shared.contracts.training_plans import PLAN_NAME_PATTERN
from shared.contracts.workloads import JOB_NAME_PATTERN, SECRET_KEY_PATTERN
from shared.regions import REGION_PATTERN
from shared.validation import rule_message

_AWS_NAME = "1 to 63 letters, digits and hyphens, starting and ending with a letter or digit"
_SHORT_NAME = "1 to 40 lowercase letters, digits and hyphens, starting with a letter"

WORDS: dict[str, str] = {
    NAME_PATTERN: _AWS_NAME,
    PLAN_NAME_PATTERN: "1 to 64 letters, digits and hyphens, starting and ending with a letter"
    " or digit",
    REGION_PATTERN: "an AWS Region code such as us-east-1",
    ZONE_ID_PATTERN: "an Availability Zone ID such as use1-az1 (list_availability_zones names"
    " them)",
    ML_INSTANCE_PATTERN: "a SageMaker instance type such as ml.g5.8xlarge",
    JOB_NAME_PATTERN: _SHORT_NAME,
    ENDPOINT_NAME_PATTERN: _SHORT_NAME,
    SPACE_NAME_PATTERN: _SHORT_NAME,
    GOVERNED_NAME_PATTERN: "1 to 40 lowercase letters, digits and hyphens, starting and ending"
    " with a letter or digit",
    DNS_LABEL_PATTERN: "1 to 63 lowercase letters, digits and hyphens, starting and ending with"
    " a letter or digit",
    DNS_SUBDOMAIN_PATTERN: "lowercase letters, digits, hyphens and dots, each part starting and"
    " ending with a letter or digit",
    LABEL_VALUE_PATTERN: "at most 63 letters, digits, hyphens, underscores and dots, starting and"
    " ending with a letter or digit",
    POD_PATTERN: "at most 253 lowercase letters, digits, hyphens and dots, starting and ending"
    " with a letter or digit",
    KIND_PATTERN: "a Kubernetes kind such as Pod or PyTorchJob",
    OBJECT_PATTERN: "a Kubernetes object name",
    MODEL_ID_PATTERN: "a Hugging Face model ID such as Qwen/Qwen3-0.6B",
    ENV_NAME_PATTERN: "an environment variable name: letters, digits and underscores, not"
    " starting with a digit",
    SECRET_KEY_PATTERN: "1 to 253 letters, digits, hyphens, underscores and dots",
    NODE_ID_PATTERN: "a HyperPod node ID such as i-0123456789abcdef0",
    FILE_SYSTEM_ID_PATTERN: "an FSx file system ID such as fs-0123456789abcdef0",
    LIFECYCLE_URI_PATTERN: "an S3 URI such as s3://my-bucket/lifecycle",
    MIG_PROFILE_PATTERN: "a MIG profile such as mig-1g.10gb",
    DURATION_PATTERN: "a duration such as 30s, 5m or 1h",
    QUANTITY_PATTERN: "a Kubernetes quantity such as 4, 500m or 16Gi",
}


def pattern_hint(pattern: object) -> str:
    """What to send instead of a value that did not match `pattern`."""
    words = WORDS.get(str(pattern))
    return f"use {words}" if words else f"use a value matching {pattern}"


def schema_message(err: Mapping[str, object]) -> str:
    """What a schema error says on every face: `rule_message`, and a value that does not match
    a listed pattern said without the expression."""
    ctx = err.get("ctx")
    if (
        err.get("type") == "string_pattern_mismatch"
        and isinstance(ctx, Mapping)
        and str(ctx.get("pattern")) in WORDS
    ):
        return "is not in the form this field takes"
    return rule_message(err)
