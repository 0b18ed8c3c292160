"""Training workloads: typed recipes, the job commands and the job events.

A recipe is a typed request (inputs with defaults and validation) that workload-svc renders to a
custom resource: PyTorch, a shell script, LLaMA-Factory and MS-Swift (SFT and GRPO) to a
HyperPodPyTorchJob (`sagemaker.amazonaws.com/v1`), VERL to a KubeRay RayJob (`ray.io/v1`). Every
recipe shares one
data contract: the cluster's S3 bucket is mounted at `/s3` in the pods (claim `s3-claim`) and at
the same path in the development environment, so model and dataset paths are relative to the
bucket or absolute under `/s3`.

Secrets never travel in a command: a Hugging Face token or any other secret is written to a
Kubernetes Secret over a request/reply to workload-svc (`HfTokenRequest`, `StoreSecretRequest`),
and commands carry only references: the Secret's name and key, or an AWS Secrets Manager ARN
(`SecretRef` in a job's `secret_env`).
"""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any, Literal, Self
from urllib.parse import parse_qsl, urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from shared.boundary import DNS_SUBDOMAIN_PATTERN, GOVERNED_NAME_PATTERN, team_namespace
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.gpu import (
    MAX_GPU_MEMORY_MIB,
    MIG_PROFILE_PATTERN,
    accelerator_amounts,
    check_share,
)
from shared.contracts.spec import Spec
from shared.contracts.storage import Volumes, check_volumes
from shared.regions import REGION_PATTERN
from shared.secrets import HINT, check_env, secret_name, secret_shape
from shared.validation import RuleViolation

JOB_NAME_PATTERN = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"
GROUP_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
# A Secret is named by a DNS-1123 subdomain (shared.boundary); its fields also cap the length.
SECRET_PATTERN = DNS_SUBDOMAIN_PATTERN
MOUNT_PATH = "/s3"  # where the shared bucket is mounted, in pods and in the dev environment
S3_CLAIM = "s3-claim"
NAMESPACE = "default"
TERMINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A key of a Kubernetes Secret (IsConfigMapKey): at most 253 of these characters, not '.' or '..'.
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]{1,253}$"
_SECRET_KEY = re.compile(SECRET_KEY_PATTERN)
# An AWS Secrets Manager secret's ARN: arn:<partition>:secretsmanager:<region>:<account>:secret:<name>
# (the name as Secrets Manager allows it, with or without the 6-character suffix it appends).
SECRETS_MANAGER_ARN_PATTERN = (
    r"^arn:aws(-[a-z]+)*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d:\d{12}"
    r":secret:[A-Za-z0-9/_+=.@\-]{1,512}$"
)
_SECRETS_MANAGER_ARN = re.compile(SECRETS_MANAGER_ARN_PATTERN)
SYNCED_SECRET_PREFIX = "hp-sm-"  # the Kubernetes Secrets workload-svc writes from Secrets Manager
MAX_SECRET_KEYS = 20
MAX_SECRET_VALUE_BYTES = 64 * 1024
# Variables the renderer sets itself: a secret_env entry may not take their place.
RENDERED_ENV = frozenset({"HYPERPILOT_JOB", "SHARED_DATA"})
MLFLOW_ENV = frozenset({"MLFLOW_TRACKING_URI", "MLFLOW_RUN_NAME", "MLFLOW_EXPERIMENT_NAME"})
# What a VERL path may hold: a plain value of a Hydra override (`data.train_files=/s3/...`), so
# nothing of its grammar (quotes, ',' sweeps, '${...}' interpolation, lists, dicts, escapes).
_HYDRA_PLAIN = re.compile(r"^[A-Za-z0-9/._+@-]+$")


def _uri_credential(uri: str) -> str | None:
    """What credential a URI carries in its user info or its query, if any."""
    try:
        parts = urlsplit(uri)
        if parts.password:
            return "a password in the URI's user info"
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return None
    for key, item in query:
        if secret_name(key) or secret_shape(item):
            return f"a credential in the URI's query ({key}=...)"
    return None


def shared_path(value: str, field: str) -> str:
    """A path in the shared bucket: relative to it, or absolute under /s3; never escaping it."""
    if not value or not value.strip():
        raise RuleViolation(f"{field} is empty", f"name a path in the bucket, e.g. models/{field}")
    if "://" in value:
        raise RuleViolation(
            f"{field} {value!r} is a URI; paths resolve against the shared bucket mounted at /s3",
            f"copy the data into the cluster's bucket and pass its key, e.g. datasets/{field}",
        )
    joined = value if value.startswith("/") else posixpath.join(MOUNT_PATH, value)
    normal = posixpath.normpath(joined)
    if normal != MOUNT_PATH and not normal.startswith(MOUNT_PATH + "/"):
        raise RuleViolation(
            f"{field} {value!r} is outside the shared bucket mounted at {MOUNT_PATH}",
            f"use a path relative to the bucket, or an absolute path under {MOUNT_PATH}/",
        )
    return normal


class Resources(Spec):
    gpus: int = Field(
        1,
        ge=0,
        le=64,
        description="nvidia.com/gpu per pod; with mig_profile the MIG partitions per pod; "
        "with gpu_memory_mib/gpu_cores the HAMi virtual GPUs per pod",
    )
    efa: int = Field(0, ge=0, le=32, description="vpc.amazonaws.com/efa interfaces per pod")
    cpu: str | None = Field(
        None, pattern=r"^[0-9]+(\.[0-9]+|m)?$", description="CPU request, e.g. 8 or 500m"
    )
    memory: str | None = Field(
        None, pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)?$", description="memory request, e.g. 64Gi"
    )
    mig_profile: str | None = Field(
        None,
        pattern=MIG_PROFILE_PATTERN,
        description="request MIG partitions (nvidia.com/mig-<profile>) of a group partitioned "
        "into this profile, e.g. mig-1g.10gb",
    )
    gpu_memory_mib: int | None = Field(
        None,
        ge=1,
        le=MAX_GPU_MEMORY_MIB,
        description="HAMi: device memory of each virtual GPU, MiB (nvidia.com/gpumem)",
    )
    gpu_cores: int | None = Field(
        None, ge=1, le=100, description="HAMi: percent of one GPU's cores (nvidia.com/gpucores)"
    )

    @model_validator(mode="after")
    def _share(self) -> Self:
        check_share(self.gpus, self.mig_profile, self.gpu_memory_mib, self.gpu_cores, "resources.")
        return self

    def accelerators(self) -> dict[str, str]:
        """The GPU resources of each pod's container (whole GPUs, partitions or shares)."""
        return accelerator_amounts(self.gpus, self.mig_profile, self.gpu_memory_mib, self.gpu_cores)


class RestartPolicy(Spec):
    eval_period_seconds: int = Field(3600, ge=1, description="window the restarts count in")
    num_restart_before_full_job_restart: int = Field(
        0, ge=0, description="pod restarts before the whole job restarts"
    )
    max_full_job_restarts: int | None = Field(None, ge=0, description="whole-job restarts allowed")


class LogMonitor(Spec):
    """A log pattern the training operator watches: no match in time means the job hangs."""

    name: str = Field(min_length=1, max_length=63, description="the monitor's name")
    log_pattern: str = Field(min_length=1, max_length=500, description="a regular expression")
    expected_start_cutoff_seconds: int | None = Field(
        None, ge=1, description="first match due within"
    )
    expected_recurring_frequency_seconds: int | None = Field(
        None, ge=1, description="then a match due every"
    )

    @field_validator("log_pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        import re

        try:
            re.compile(value)
        except re.error as exc:
            raise RuleViolation(
                f"log_pattern is not a regular expression: {exc}",
                "escape special characters, e.g. .*step \\d+.*",
            ) from exc
        return value

    @model_validator(mode="after")
    def _some_deadline(self) -> LogMonitor:
        if (
            self.expected_start_cutoff_seconds is None
            and self.expected_recurring_frequency_seconds is None
        ):
            raise RuleViolation(
                "a log monitor needs a deadline to detect a hang",
                "set expected_start_cutoff_seconds and/or expected_recurring_frequency_seconds",
            )
        return self


class RunPolicy(Spec):
    """The recovery budget: restarts allowed before the job fails, and how they happen."""

    job_max_retry_count: int = Field(3, ge=0, le=100, description="retries before it fails")
    restart_policy: RestartPolicy | None = Field(None, description="how restarts escalate")
    log_monitoring: list[LogMonitor] = Field(
        default_factory=list, max_length=10, description="hang detection by log pattern"
    )
    active_deadline_seconds: int | None = Field(None, ge=1, description="the job's time limit")
    clean_pod_policy: Literal["All", "Running", "None"] = Field(
        "Running", description="pods deleted when the job ends"
    )


class ElasticPolicy(Spec):
    """The sizes the training operator may run an elastic HyperPodPyTorchJob at: every
    `replica_increment_step` from `min_replicas` up to `max_replicas`, or exactly the
    `replica_discrete_values` (one or the other, as the HyperPod CLI enforces)."""

    min_replicas: int = Field(ge=1, le=256, description="fewest pods")
    max_replicas: int = Field(ge=1, le=256, description="most pods")
    replica_increment_step: int | None = Field(None, ge=1, le=256, description="sizes step by")
    replica_discrete_values: list[int] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="the exact replica counts allowed, ascending, within [min, max]",
    )
    scaling_timeout_seconds: int | None = Field(
        None,
        ge=0,
        le=86_400,
        description="how long free nodes must last before the job grows onto them",
    )

    @field_validator("replica_discrete_values")
    @classmethod
    def _discrete(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if any(v < 1 for v in value):
            raise RuleViolation(
                f"elastic.replica_discrete_values {value} has a value below 1",
                "list replica counts of at least 1",
            )
        if value != sorted(set(value)):
            raise RuleViolation(
                f"elastic.replica_discrete_values {value} is not ascending without repeats",
                f"list each count once, ascending: {sorted(set(value))}",
            )
        return value

    @model_validator(mode="after")
    def _bounds(self) -> ElasticPolicy:
        if self.min_replicas > self.max_replicas:
            raise RuleViolation(
                f"elastic.min_replicas {self.min_replicas} is above max_replicas"
                f" {self.max_replicas}",
                "make min_replicas <= max_replicas",
            )
        values = self.replica_discrete_values
        if values is not None and self.replica_increment_step is not None:
            raise RuleViolation(
                "elastic.replica_increment_step and elastic.replica_discrete_values are"
                " exclusive (the training operator takes one way of sizing)",
                "keep replica_increment_step for evenly spaced sizes, or"
                " replica_discrete_values for exact sizes, not both",
            )
        if values is not None:
            outside = [v for v in values if not self.min_replicas <= v <= self.max_replicas]
            if outside:
                raise RuleViolation(
                    f"elastic.replica_discrete_values {outside} outside [min_replicas"
                    f" {self.min_replicas}, max_replicas {self.max_replicas}]",
                    "drop those values, or widen min_replicas/max_replicas to include them",
                )
        return self

    def sizes(self) -> list[int]:
        """The replica counts the policy allows, smallest first."""
        if self.replica_discrete_values is not None:
            return list(self.replica_discrete_values)
        step = self.replica_increment_step or 1
        return list(range(self.min_replicas, self.max_replicas + 1, step))


def _shown(value: str) -> str:
    """A refused name as a refusal may quote it: never one that looks like a credential (a value
    pasted where its name goes)."""
    if secret_shape(value):
        return "(not shown: it looks like a credential)"
    return repr(value if len(value) <= 80 else value[:77] + "...")


def secret_key(value: str, field: str) -> str:
    """`value` if it is a key of a Kubernetes Secret."""
    if not _SECRET_KEY.match(value) or value in (".", "..") or value.startswith(".."):
        raise RuleViolation(
            f"{field} {_shown(value)} is not a Kubernetes Secret key",
            "use at most 253 letters, digits, '-', '_' and '.' (not '.' or '..')",
        )
    return value


def secret_object_name(value: str, field: str) -> str:
    """`value` if it can name a Kubernetes Secret (a DNS-1123 subdomain)."""
    if len(value) > 253 or not re.match(DNS_SUBDOMAIN_PATTERN, value):
        raise RuleViolation(
            f"{field} {_shown(value)} is not a Kubernetes Secret name",
            "use at most 253 lowercase letters, digits, '-' and '.', starting and ending with a"
            " letter or digit",
        )
    return value


class SecretRef(Spec):
    """Where one variable of a job's `secret_env` comes from, by reference: a key of a
    Kubernetes Secret in the jobs' namespace (`secret` and `key`; written, say, by
    POST /api/v1/clusters/{cluster}/secrets), or an AWS Secrets Manager secret
    (`secrets_manager_arn`, with `json_key` to take one key of a JSON secret), which
    workload-svc copies into a Kubernetes Secret when it submits the job."""

    secret: str | None = Field(
        None,
        min_length=1,
        max_length=253,
        description="a Kubernetes Secret in the jobs' namespace (with key)",
    )
    key: str | None = Field(
        None, min_length=1, max_length=253, description="the key of that Secret"
    )
    secrets_manager_arn: str | None = Field(
        None,
        max_length=2048,
        description="arn:aws:secretsmanager:<region>:<account>:secret:<name>",
        examples=["arn:aws:secretsmanager:us-east-1:123456789012:secret:hyperpilot/wandb"],
    )
    json_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="with secrets_manager_arn: the key of the secret's JSON whose value to use"
        " (default: the whole secret string)",
    )

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        return None if value is None else secret_object_name(value, "secret")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        return None if value is None else secret_key(value, "key")

    @field_validator("secrets_manager_arn")
    @classmethod
    def _arn(cls, value: str | None) -> str | None:
        if value is not None and not _SECRETS_MANAGER_ARN.match(value):
            raise RuleViolation(
                f"secrets_manager_arn {_shown(value)} is not a Secrets Manager secret's ARN",
                "use arn:aws:secretsmanager:<region>:<account>:secret:<name>, as"
                " `aws secretsmanager describe-secret --secret-id <name>` shows it",
            )
        return value

    @field_validator("json_key")
    @classmethod
    def _json_key(cls, value: str | None) -> str | None:
        if value is not None and not value.isprintable():
            raise RuleViolation(
                "json_key has a control character", "name a key of the secret's JSON object"
            )
        return value

    @model_validator(mode="after")
    def _one_source(self) -> SecretRef:
        kube = self.secret is not None or self.key is not None
        aws = self.secrets_manager_arn is not None or self.json_key is not None
        if kube and aws:
            raise RuleViolation(
                "a secret reference names either a Kubernetes Secret (secret, key) or a Secrets"
                " Manager secret (secrets_manager_arn, json_key), not both",
                "keep one of the two",
            )
        if kube and (self.secret is None or self.key is None):
            raise RuleViolation(
                "a Kubernetes Secret reference needs both secret and key",
                'e.g. {"secret": "wandb", "key": "api-key"}',
            )
        if aws and self.secrets_manager_arn is None:
            raise RuleViolation(
                "json_key needs secrets_manager_arn", "add the secret's ARN, or drop json_key"
            )
        if not kube and not aws:
            raise RuleViolation(
                "a secret reference is empty",
                'use {"secret": "<Secret>", "key": "<key>"} or {"secrets_manager_arn":'
                ' "arn:aws:secretsmanager:<region>:<account>:secret:<name>"}',
            )
        return self


# HyperPod's node labels a placement reads: the deep health check's result ("Resilience-related
# Kubernetes labels by SageMaker HyperPod") and EC2 instance topology's network nodes, layer 1
# the farthest from the instance, layer 3 the nearest (the label names without their prefix).
DEEP_HEALTH_CHECK_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
TOPOLOGY_PREFIX = "topology.k8s.aws/"
TopologyLayer = Literal["network-node-layer-1", "network-node-layer-2", "network-node-layer-3"]


class Placement(Spec):
    """Which of the group's nodes, how close together."""

    deep_health_check_passed: bool = Field(
        False, description="only nodes whose deep health check passed"
    )
    topology: TopologyLayer | None = Field(None, description="pods under one network node")
    topology_required: bool = Field(False, description="else preferred")

    @model_validator(mode="after")
    def _topology(self) -> Placement:
        if self.topology_required and self.topology is None:
            raise RuleViolation(
                "placement.topology_required needs placement.topology",
                "name the layer, e.g. network-node-layer-3, or drop topology_required",
            )
        return self


class JobBase(Spec):
    name: str = Field(
        pattern=JOB_NAME_PATTERN, examples=["llama-sft"], description="the job's name"
    )
    instance_group: str = Field(pattern=GROUP_PATTERN, description="placement: the pods' group")
    replicas: int = Field(1, ge=1, le=256, description="pods (nodes)")
    nproc_per_node: int | None = Field(None, ge=1, le=64, description="default: the GPUs")
    image: str | None = Field(
        None, min_length=1, max_length=500, description="default: the recipe's image"
    )
    resources: Resources = Field(default_factory=Resources, description="per pod")
    placement: Placement = Field(default_factory=Placement, description="which nodes")
    run_policy: RunPolicy = Field(default_factory=RunPolicy, description="restarts")
    elastic: ElasticPolicy | None = Field(None, description="default: fixed replicas")
    env: dict[str, str] = Field(
        default_factory=dict, max_length=50, description="no secrets (use secret_env)"
    )
    secret_env: dict[str, SecretRef] = Field(
        default_factory=dict,
        max_length=50,
        description="variables whose values come from a Secret by reference: a Kubernetes"
        " Secret's key (POST /api/v1/clusters/{cluster}/secrets writes one) or a Secrets Manager"
        " ARN; the value never enters the spec",
    )
    mlflow_tracking_uri: str | None = Field(
        None, description="an MLflow URI or a SageMaker MLflow tracking server ARN"
    )
    team: str | None = Field(
        None,
        max_length=40,
        pattern=GOVERNED_NAME_PATTERN,
        description="task governance: the team whose quota runs the job (namespace"
        " hyperpod-ns-<team>, its Kueue LocalQueue); default: no team, namespace default",
    )
    priority: str | None = Field(
        None,
        max_length=40,
        pattern=GOVERNED_NAME_PATTERN,
        description="task governance: a priority class of the cluster's scheduler config"
        " (with team)",
    )
    volumes: Volumes = Field(default_factory=list)

    @model_validator(mode="after")
    def _volumes(self) -> Self:
        check_volumes(self.volumes)
        if self.volumes and self.team is not None:
            raise RuleViolation(
                f"volumes: added storage claims live in namespace {NAMESPACE}, and a job of"
                f" team {self.team} runs in {team_namespace(self.team)}",
                "drop team to mount added claims, or use the team's s3-claim at /s3",
            )
        return self

    @model_validator(mode="after")
    def _priority_needs_team(self) -> Self:
        if self.priority is not None and self.team is None:
            raise RuleViolation(
                "priority: a priority class applies to a job queued for a team",
                "send team too (GET /api/v1/clusters/{name}/teams lists them), or drop priority",
            )
        return self

    def namespace(self) -> str:
        """Where the job runs: its team's namespace, or the jobs' default namespace."""
        return team_namespace(self.team) if self.team else NAMESPACE

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not _ENV_NAME.match(key):
                raise RuleViolation(
                    f"env name {key!r} is not a valid variable name", "use letters, digits and _"
                )
        # A credential by its name (HF_TOKEN, WANDB_API_KEY, ...) or by its value (AKIA...,
        # hf_..., sk-..., a JWT, a long random string): secrets travel by reference only.
        return check_env(value, "env")

    @field_validator("secret_env")
    @classmethod
    def _secret_env_names(cls, value: dict[str, SecretRef]) -> dict[str, SecretRef]:
        for key in value:
            if not _ENV_NAME.match(key):
                raise RuleViolation(
                    f"secret_env name {_shown(key)} is not a valid variable name",
                    "use letters, digits and _",
                )
            if secret_shape(key):
                raise RuleViolation(
                    "secret_env has a name that looks like a credential",
                    'name the variable and reference its value, e.g. {"WANDB_API_KEY":'
                    ' {"secret": "wandb", "key": "api-key"}}',
                )
            if key in RENDERED_ENV:
                raise RuleViolation(
                    f"secret_env.{key} is set by the control plane on every pod",
                    "use another variable name",
                )
        return value

    @model_validator(mode="after")
    def _env_once(self) -> JobBase:
        both = sorted(set(self.env) & set(self.secret_env))
        if both:
            raise RuleViolation(
                f"secret_env.{both[0]} is also in env: a variable has one value",
                f"keep {both[0]} in secret_env (by reference) or in env, not both",
            )
        if self.mlflow_tracking_uri:
            taken = sorted(set(self.secret_env) & MLFLOW_ENV)
            if taken:
                raise RuleViolation(
                    f"secret_env.{taken[0]} is set from mlflow_tracking_uri",
                    f"drop mlflow_tracking_uri to pass {taken[0]} from a Secret, or drop it"
                    " from secret_env",
                )
        return self

    @field_validator("image", "mlflow_tracking_uri")
    @classmethod
    def _no_credential(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        what = secret_shape(value)
        if what is None and info.field_name == "mlflow_tracking_uri":
            what = _uri_credential(value)
        if what:
            raise RuleViolation(
                f"{info.field_name} holds what looks like {what}; secrets are never stored in a"
                " spec, its events or the audit log",
                HINT,
            )
        return value

    @model_validator(mode="after")
    def _elastic_rules(self) -> JobBase:
        if self.elastic is None:
            return self
        if not self.elastic.min_replicas <= self.replicas <= self.elastic.max_replicas:
            raise RuleViolation(
                f"elastic: replicas {self.replicas} is outside [{self.elastic.min_replicas},"
                f" {self.elastic.max_replicas}]",
                "start with replicas between elastic.min_replicas and elastic.max_replicas",
            )
        if self.run_policy.job_max_retry_count == 0:
            raise RuleViolation(
                "elastic: an elastic job needs a retry budget (run_policy.job_max_retry_count"
                " is 0)",
                "set run_policy.job_max_retry_count >= 1 so scaling events can restart workers",
            )
        return self


class PyTorchRecipe(JobBase):
    """A plain PyTorch script launched with torchrun on every node."""

    recipe: Literal["pytorch"] = Field("pytorch", description="torchrun a script")
    script: str = Field(description="the training script, in the shared bucket")
    args: list[str] = Field(default_factory=list, max_length=100, description="script arguments")

    @field_validator("script")
    @classmethod
    def _script(cls, value: str) -> str:
        return shared_path(value, "script")

    @field_validator("args")
    @classmethod
    def _args(cls, value: list[str]) -> list[str]:
        for i, arg in enumerate(value):
            what = secret_shape(arg)
            if what:
                # The refusal names the argument by its place, never repeats it.
                raise RuleViolation(
                    f"args[{i}] holds what looks like {what}; secrets are never stored in a spec,"
                    " its events or the audit log (nor passed on a command line, where the pod's"
                    " spec and its process list show them)",
                    HINT,
                )
        return value


class ShellRecipe(JobBase):
    """A bash script run on every worker, with torchrun's rendezvous environment."""

    recipe: Literal["shell"] = Field("shell", description="a bash script")
    body: str = Field(min_length=1, max_length=16_000, description="the script bash runs")

    @field_validator("body")
    @classmethod
    def _body(cls, value: str) -> str:
        for line, text in enumerate(value.splitlines(), start=1):
            what = next((w for w in map(secret_shape, text.split()) if w), None)
            if what:
                # The refusal names the line, never repeats it.
                raise RuleViolation(
                    f"body line {line} holds what looks like {what}; secrets are never stored in"
                    " a spec, its events or the audit log",
                    HINT,
                )
        return value


class Hyperparameters(Spec):
    """Batch and sequence sizes of a fine-tuning recipe."""

    batch_size: int = Field(1, ge=1, le=1024, description="per device")
    gradient_accumulation_steps: int = Field(8, ge=1, le=1024, description="per optimizer step")
    max_length: int = Field(2048, ge=16, le=1_048_576, description="tokens per sample")
    lora_rank: int = Field(8, ge=1, le=1024, description="with LoRA")
    max_steps: int | None = Field(None, ge=1, description="stop after; default: the epochs")


class LlamaFactoryRecipe(JobBase):
    """Supervised fine-tuning with LLaMA-Factory (`llamafactory-cli train`)."""

    recipe: Literal["llama-factory"] = Field("llama-factory", description="LLaMA-Factory SFT")
    model: str = Field(description="the model, a path in the shared bucket")
    dataset: str = Field(description="the dataset, a path in the shared bucket")
    template: str = Field("qwen", pattern=r"^[a-z0-9_.\-]{1,40}$", description="the chat template")
    finetuning_type: Literal["lora", "full", "freeze"] = Field("lora", description="how")
    epochs: float = Field(3.0, gt=0, le=1000, description="passes over the data")
    learning_rate: float = Field(1e-4, gt=0, lt=1, description="the optimizer's")
    hyperparameters: Hyperparameters = Field(
        default_factory=Hyperparameters, description="batch, sequence, LoRA sizes"
    )
    output: str | None = Field(None, description="where the result goes, in the shared bucket")

    @field_validator("model", "dataset", "output")
    @classmethod
    def _paths(cls, value: str | None, info: Any) -> str | None:
        return None if value is None else shared_path(value, info.field_name)


RewardFunc = Literal["accuracy", "format", "cosine", "repetition", "soft_overlong"]


def _rewards() -> list[RewardFunc]:
    return ["accuracy", "format"]


class MsSwiftRecipe(JobBase):
    """Fine-tuning with MS-Swift: `swift sft`, or GRPO (`swift rlhf --rlhf_type grpo`)."""

    recipe: Literal["ms-swift"] = Field("ms-swift", description="MS-Swift")
    algorithm: Literal["sft", "grpo"] = Field("sft", description="the training method")
    model: str = Field(description="the model, a path in the shared bucket")
    dataset: str = Field(description="the dataset, a path in the shared bucket")
    train_type: Literal["lora", "full"] = Field("lora", description="how")
    reward_funcs: list[RewardFunc] = Field(
        default_factory=_rewards,
        min_length=1,
        max_length=5,
        description="with grpo",
    )
    num_generations: int = Field(8, ge=2, le=64, description="with grpo: completions per prompt")
    epochs: float = Field(1.0, gt=0, le=1000, description="passes over the data")
    learning_rate: float = Field(1e-4, gt=0, lt=1, description="the optimizer's")
    hyperparameters: Hyperparameters = Field(
        default_factory=Hyperparameters, description="batch, sequence, LoRA sizes"
    )
    output: str | None = Field(None, description="where the result goes, in the shared bucket")

    @field_validator("model", "dataset", "output")
    @classmethod
    def _paths(cls, value: str | None, info: Any) -> str | None:
        return None if value is None else shared_path(value, info.field_name)


class VerlRecipe(JobBase):
    """Reinforcement learning with VERL on a KubeRay RayJob (head + GPU workers)."""

    recipe: Literal["verl"] = Field("verl", description="VERL on a RayJob")
    model: str = Field(description="the model, a path in the shared bucket")
    train_files: str = Field(description="training data (parquet), in the shared bucket")
    val_files: str = Field(description="validation data (parquet), in the shared bucket")
    algorithm: Literal["grpo", "ppo"] = Field("grpo", description="the RL algorithm")
    epochs: int = Field(1, ge=1, le=1000, description="passes over the data")

    @field_validator("model", "train_files", "val_files")
    @classmethod
    def _paths(cls, value: str, info: Any) -> str:
        path = shared_path(value, info.field_name)
        if not _HYDRA_PLAIN.match(path):
            raise RuleViolation(
                f"{info.field_name} {value!r} has characters VERL's Hydra overrides would read"
                " (a value is `key=value`, where spaces, quotes, ',', '$', '\\', ':', '='"
                " and brackets mean something)",
                "use a path of letters, digits and / . _ - + @, e.g. datasets/gsm8k/train.parquet",
            )
        return path

    @model_validator(mode="after")
    def _no_elastic(self) -> VerlRecipe:
        if self.elastic is not None:
            raise RuleViolation(
                "elastic: VERL runs on a RayJob; elastic policy applies to HyperPodPyTorchJob",
                "remove elastic, or use the pytorch, llama-factory or ms-swift recipe",
            )
        return self


JobSpec = Annotated[
    PyTorchRecipe | ShellRecipe | LlamaFactoryRecipe | MsSwiftRecipe | VerlRecipe,
    Field(discriminator="recipe"),
]
RECIPES = ("pytorch", "shell", "llama-factory", "ms-swift", "verl")


class ModelDownloadSpec(Spec):
    """A Hugging Face model pulled into the shared bucket by a Kubernetes Job."""

    name: str = Field(pattern=JOB_NAME_PATTERN, description="the download Job's name")
    repo_id: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$",
        description="Hugging Face repo, e.g. Qwen/Qwen2.5-7B",
    )
    revision: str = Field(
        "main", pattern=r"^[A-Za-z0-9_.\-/]{1,100}$", description="branch, tag or commit"
    )
    target: str | None = Field(None, description="default: models/<repo name>")
    token_secret: str | None = Field(
        None,
        max_length=253,
        pattern=SECRET_PATTERN,
        description="a Secret made by POST .../secrets/hf-token",
    )
    instance_group: str | None = Field(
        None, pattern=GROUP_PATTERN, description="the group the Job runs on; default: any node"
    )
    volumes: Volumes = Field(default_factory=list)

    @model_validator(mode="after")
    def _volumes(self) -> Self:
        check_volumes(self.volumes)
        return self

    @field_validator("target")
    @classmethod
    def _target(cls, value: str | None) -> str | None:
        return None if value is None else shared_path(value, "target")

    def target_path(self) -> str:
        return self.target or shared_path("models/" + self.repo_id.split("/", 1)[1], "target")


class HfTokenRequest(Spec):
    """The token is written to a Kubernetes Secret and never stored by Hyperpilot."""

    token: str = Field(min_length=8, max_length=400, pattern=r"^[A-Za-z0-9_\-]+$")
    secret: str = Field("hf-token", max_length=253, pattern=SECRET_PATTERN)


class StoreSecretRequest(Spec):
    """A Kubernetes Secret written (created or replaced) in the jobs' namespace; its values are
    never stored, logged or answered by Hyperpilot. A job names it in `secret_env`."""

    name: str = Field(
        min_length=1,
        max_length=253,
        description="the Secret's name (a DNS-1123 subdomain)",
        examples=["wandb"],
    )
    data: dict[str, str] = Field(
        min_length=1,
        max_length=MAX_SECRET_KEYS,
        description=f"key -> value; keys as Kubernetes allows them ([-._a-zA-Z0-9]+), at most"
        f" {MAX_SECRET_KEYS} keys, each value at most {MAX_SECRET_VALUE_BYTES // 1024} KiB",
        examples=[{"api-key": "..."}],
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        secret_object_name(value, "name")
        if value.startswith(SYNCED_SECRET_PREFIX):
            raise RuleViolation(
                f"name {value!r}: Secrets named {SYNCED_SECRET_PREFIX}* are the copies of Secrets"
                " Manager secrets that workload-svc writes",
                "use another name, or reference the Secrets Manager secret by its ARN in"
                " secret_env",
            )
        return value

    @field_validator("data")
    @classmethod
    def _data(cls, value: dict[str, str]) -> dict[str, str]:
        # The refusals name the key, never the value.
        for key, item in value.items():
            secret_key(key, "data key")
            if secret_shape(key):
                raise RuleViolation(
                    "data has a key that looks like a credential; keys are recorded, values not",
                    'name each value by its key, e.g. {"api-key": "<the value>"}',
                )
            size = len(item.encode("utf-8"))
            if size == 0:
                raise RuleViolation(f"data.{key} is empty", "send the secret's value")
            if size > MAX_SECRET_VALUE_BYTES:
                raise RuleViolation(
                    f"data.{key} is {size} bytes; a value holds at most"
                    f" {MAX_SECRET_VALUE_BYTES} bytes",
                    "store large files in the bucket; a Secret holds credentials",
                )
        return value


# ---- commands --------------------------------------------------------------------------------


class SubmitJob(Command):
    domain = "workload"
    verb = "submit"

    cluster: str
    region: str
    spec: JobSpec


class CancelJob(Command):
    domain = "workload"
    verb = "cancel"

    cluster: str
    name: str


class DeleteJob(Command):
    domain = "workload"
    verb = "delete"

    cluster: str
    name: str


class DownloadModel(Command):
    domain = "workload"
    verb = "download"

    cluster: str
    region: str
    spec: ModelDownloadSpec


# ---- events ----------------------------------------------------------------------------------


class JobSubmitted(Event):
    what = "job_submitted"
    cluster: str
    name: str
    kind: str
    recipe: str


class JobStatusChanged(Event):
    """What the status watcher saw change: phase, restarts used against the budget, faulty pods."""

    what = "job_status_changed"
    cluster: str
    name: str
    status: str
    previous: str | None = None
    restarts: int = 0
    budget: int | None = None
    faulty_pods: list[str] = []
    reason: str | None = None
    message: str | None = None


class JobCancelled(Event):
    what = "job_cancelled"
    cluster: str
    name: str


class JobDeleted(Event):
    what = "job_deleted"
    cluster: str
    name: str


class HfTokenStored(Event):
    """A token Secret was written (only its name; the token is never recorded)."""

    what = "hf_token_stored"
    cluster: str
    secret: str


class SecretStored(Event):
    """A Secret was written by POST .../secrets: its name and keys (never a value)."""

    what = "secret_stored"
    cluster: str
    secret: str
    namespace: str
    keys: list[str]


# ---- MLflow ----------------------------------------------------------------------------------


class TrackingServerSpec(Spec):
    """A SageMaker managed MLflow tracking server recipes report throughput and loss to."""

    name: str = Field(
        pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$",
        max_length=256,
        description="the tracking server's name",
    )
    artifact_store_uri: str = Field(
        pattern=r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$",
        examples=["s3://my-bucket/mlflow"],
        description="s3://bucket/prefix for artifacts",
    )
    role_arn: str = Field(
        pattern=r"^arn:aws[a-z\-]*:iam::\d{12}:role/.+$",
        description="the role the server uses to reach the artifact store",
    )
    size: Literal["Small", "Medium", "Large"] = Field("Small", description="server size")
    mlflow_version: str | None = Field(
        None, pattern=r"^\d+\.\d+(\.\d+)?$", description="default: SageMaker's"
    )
    region: str | None = Field(
        None,
        pattern=REGION_PATTERN,
        description="a region the control plane serves; default: its default region",
    )


class CreateTrackingServer(Command):
    domain = "workload"
    verb = "create_tracking_server"

    region: str
    spec: TrackingServerSpec


class TrackingServerCreated(Event):
    what = "tracking_server_created"
    name: str
    arn: str
    url: str | None = None
