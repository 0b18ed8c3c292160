"""Inference endpoints: the request models, commands and events of inference-svc.

Four kinds of endpoint, one model:
- `container`: a serving container of the user's choice (vLLM, SGLang or any image and command)
  as a Deployment behind an external load balancer, a cluster-internal Service, or a model pool
  of warm workers reassigned between models by a label; vLLM and SGLang ones may be scaled by
  a KEDA ScaledObject on the engine's metrics.
- `sglang`: SGLang workers behind the SGLang router (cache-aware routing), scaled by a KEDA
  ScaledObject on the router's metrics.
- `managed`: an InferenceEndpointConfig the HyperPod inference operator deploys (optionally with
  disaggregated prefill and decode workers).
- `jumpstart`: a JumpStartModel the same operator deploys.

The GPU count per replica is always given: it is never inferred from a tensor-parallel size.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from shared.boundary import (
    DNS_LABEL_PATTERN,
    DNS_SUBDOMAIN_PATTERN,
    GOVERNED_NAME_PATTERN,
    RESERVED_NAMESPACE_PREFIXES,
    RESERVED_NAMESPACES,
    dns_subdomain,
    object_name,
    team_namespace,
)
from shared.boundary import namespace as user_namespace
from shared.contracts.cluster import ML_INSTANCE_PATTERN, NAME_PATTERN
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.gpu import (
    MAX_GPU_MEMORY_MIB,
    MIG_PROFILE_PATTERN,
    accelerator_amounts,
    check_share,
)
from shared.contracts.spec import Spec
from shared.contracts.storage import STORAGE_NAMESPACE, Volumes, check_volumes
from shared.secrets import check_env
from shared.validation import RuleViolation

ENDPOINT_NAME_PATTERN = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"
NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
LABEL_VALUE_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
# A pool's model names its workers' label and its Service (`<endpoint>-<model>`): a DNS label.
POOL_MODEL_PATTERN = DNS_LABEL_PATTERN
NAMESPACE_DESCRIPTION = (
    "the namespace the endpoint's objects go into (a DNS-1123 label). Refused: kube-system and"
    " every " + "/".join(p + "*" for p in RESERVED_NAMESPACE_PREFIXES) + " namespace, and the"
    " namespaces of the operators and add-ons the control plane installs ("
    + ", ".join(sorted(n for n in RESERVED_NAMESPACES if not n.startswith("kube-")))
    + ")"
)
DEFAULT_IMAGES = {
    "vllm": "vllm/vllm-openai:v0.10.1",
    "sglang": "lmsysorg/sglang:v0.5.2-cu126",
}
DEFAULT_PORTS = {"vllm": 8000, "sglang": 30000, "custom": 8000}
TP_FLAGS = ("--tensor-parallel-size", "--tp-size", "--tp", "-tp")
# Ports the serving container may not take: the kubelet's and the node exporter's.
RESERVED_PORTS = frozenset({10250, 10255, 9100})
ROUTING_STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")

Engine = Literal["vllm", "sglang", "custom"]
ServiceShape = Literal["external", "internal", "model_pool"]
EndpointKind = Literal["container", "sglang", "managed", "jumpstart"]
SELF_MANAGED_KINDS = frozenset({"container", "sglang"})  # a Deployment of their own, Kueue's


def workers_deployment(name: str, kind: str) -> str:
    """The Deployment of a self-managed endpoint's workers: the endpoint's name, or
    `<name>-workers` for SGLang (its router is the endpoint's name)."""
    return object_name(name, "workers", field="name") if kind == "sglang" else name


def tensor_parallel_size(args: list[str]) -> int | None:
    """The tensor-parallel size a serving command line asks for, if any."""
    for index, arg in enumerate(args):
        for flag in TP_FLAGS:
            if arg == flag and index + 1 < len(args) and args[index + 1].isdigit():
                return int(args[index + 1])
            if arg.startswith(flag + "=") and arg.split("=", 1)[1].isdigit():
                return int(arg.split("=", 1)[1])
    return None


def _port(value: int) -> int:
    if value in RESERVED_PORTS:
        raise RuleViolation(
            f"port {value} is reserved on the nodes (kubelet, node exporter)",
            "use the serving engine's own port (vLLM 8000, SGLang 30000) or another above 1024",
        )
    return value


def _env_rule(value: dict[str, str]) -> dict[str, str]:
    """Valid variable names, and no credential by name or by value (`shared.secrets`)."""
    for name in value:
        if not re.match(ENV_NAME_PATTERN, name):
            raise RuleViolation(
                f"environment variable name {name!r} is not valid",
                "use letters, digits and underscores, not starting with a digit",
            )
        if name.upper() in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            raise RuleViolation(
                f"{name} would put a secret into the endpoint's record",
                "store the token as a Secret (POST /api/v1/clusters/{cluster}/secrets/hf-token) "
                "and name that Secret in container.hf_token_secret",
            )
    return check_env(value, "container.env")


class ContainerSpec(Spec):
    """The serving container: engine, image, command line, port and environment."""

    engine: Engine = Field("vllm", description="vllm, sglang, or custom (any image and command)")
    image: str | None = Field(
        None, min_length=3, max_length=255, description="default: the engine's official image"
    )
    command: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="default: the engine's launcher; custom: required (or args)",
    )
    args: list[str] = Field(
        default_factory=list, max_length=128, description="extra server arguments, appended"
    )
    model: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="the model served (Hugging Face id or a path), passed as --model",
    )
    port: int = Field(0, ge=0, le=65535, description="0: the engine's default port")
    env: dict[str, str] = Field(
        default_factory=dict,
        max_length=64,
        description="environment variables; no credentials (use hf_token_secret)",
    )
    hf_token_secret: str | None = Field(
        None,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="a Kubernetes Secret (key `token`) holding the Hugging Face token",
    )

    @field_validator("port")
    @classmethod
    def _port_rule(cls, value: int) -> int:
        if value and value < 1024:
            raise RuleViolation(
                f"port {value} is privileged; the serving container runs unprivileged",
                "use a port from 1024 to 65535 (vLLM 8000, SGLang 30000)",
            )
        return _port(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        return _env_rule(value)

    @model_validator(mode="after")
    def _engine_and_image(self) -> Self:
        image = (self.image or "").lower()
        if self.engine == "custom":
            if not self.image:
                raise RuleViolation(
                    "a custom engine needs its image",
                    "set container.image, or choose engine vllm or sglang for their images",
                )
            if not self.command and not self.args:
                raise RuleViolation(
                    "a custom engine needs the command that starts the server",
                    "set container.command (and args), e.g. ['python', '-m', 'my_server']",
                )
        elif self.image and self.engine not in image:
            other = "sglang" if "sglang" in image else "vllm" if "vllm" in image else None
            raise RuleViolation(
                f"image {self.image} is not a {self.engine} image",
                f"use engine {other}"
                if other
                else "use engine custom for another image, "
                f"or leave image out for {DEFAULT_IMAGES[self.engine]}",
            )
        if self.engine != "custom" and not self.model and not self.args:
            raise RuleViolation(
                f"a {self.engine} server needs the model it serves",
                "set container.model (a Hugging Face id or a path), e.g. Qwen/Qwen3-0.6B",
            )
        return self

    def image_or_default(self) -> str:
        return self.image or DEFAULT_IMAGES.get(self.engine, "")

    def port_or_default(self) -> int:
        return self.port or DEFAULT_PORTS[self.engine]


class RouterSpec(Spec):
    """The SGLang router in front of the workers."""

    policy: Literal["cache_aware", "round_robin", "random", "power_of_two"] = Field(
        "cache_aware", description="how the router picks a worker"
    )
    port: int = Field(30000, ge=1024, le=65535, description="the router's port")
    replicas: int = Field(1, ge=1, le=8, description="router pods")
    service: Literal["external", "internal"] = Field(
        "internal", description="external: a load balancer; internal: in-cluster only"
    )


class AutoscalingSpec(Spec):
    """A KEDA ScaledObject on the serving metrics in Prometheus: running and queued requests,
    and, when set, the request rate and the GPU utilization (DCGM exporter) per replica."""

    min_replicas: int = Field(1, ge=0, le=64, description="lower bound (0: scale to zero)")
    max_replicas: int = Field(4, ge=1, le=64, description="upper bound, >= min_replicas")
    requests_per_replica: float = Field(
        10.0, gt=0, description="target running requests per worker"
    )
    queue_depth: float = Field(5.0, gt=0, description="target queued requests per worker")
    requests_per_second: float | None = Field(None, gt=0, description="target QPS per worker")
    rate_window_seconds: int = Field(60, ge=10, le=600, description="QPS window")
    gpu_utilization: float | None = Field(None, gt=0, le=100, description="target GPU % per worker")
    prometheus_address: str = Field(
        "http://prometheus-server.monitoring.svc.cluster.local:80",
        min_length=8,
        max_length=255,
        description="the Prometheus KEDA queries",
    )

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min_replicas > self.max_replicas:
            raise RuleViolation(
                f"min_replicas {self.min_replicas} is above max_replicas {self.max_replicas}",
                "make min_replicas at most max_replicas",
            )
        return self


class ModelSource(Spec):
    """Where a managed endpoint's model comes from."""

    type: Literal["s3", "fsx", "huggingface"] = Field(
        description="s3 needs s3_bucket, fsx fsx_file_system_id, huggingface hf_model_id"
    )
    s3_bucket: str | None = Field(
        None, pattern=r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$", description="type s3: the bucket"
    )
    region: str | None = Field(
        None, pattern=r"^[a-z]{2}-[a-z]+-[0-9]$", description="the bucket's; default us-east-1"
    )
    fsx_file_system_id: str | None = Field(
        None, pattern=r"^fs-[0-9a-f]{8,17}$", description="type fsx: e.g. fs-0123456789abcdef0"
    )
    fsx_mount_name: str | None = Field(
        None, min_length=1, max_length=64, description="the FSx for Lustre mount name"
    )
    hf_model_id: str | None = Field(
        None, min_length=1, max_length=255, description="type huggingface: e.g. Qwen/Qwen3-0.6B"
    )
    model_location: str | None = Field(
        None, min_length=1, max_length=1024, description="the model's path in the source"
    )

    @model_validator(mode="after")
    def _complete(self) -> Self:
        needs = {
            "s3": ("s3_bucket",),
            "fsx": ("fsx_file_system_id",),
            "huggingface": ("hf_model_id",),
        }[self.type]
        missing = [name for name in needs if getattr(self, name) is None]
        if missing:
            raise RuleViolation(
                f"a {self.type} model source needs {', '.join(missing)}",
                f"set model_source.{missing[0]}",
            )
        return self


class KvCacheSpec(Spec):
    """Managed tiered KV caching: L1 on the instance, L2 in the tiered-storage backend."""

    l1: bool = Field(True, description="KV cache in instance memory")
    l2: bool = Field(False, description="KV cache in the L2 backend")
    l2_backend: Literal["tieredstorage"] = Field(
        "tieredstorage", description="the L2 backend (when l2)"
    )


CaptureMode = Literal["Input", "Output"]
CAPTURE_MODES: tuple[CaptureMode, ...] = ("Input", "Output")
S3_URI_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]+[a-z0-9](/[^,=]*)?$"
DOMAIN_PATTERN = r"^[a-z0-9][a-z0-9.-]*\.[a-z0-9-]*[a-z0-9]$"


class TlsSpec(Spec):
    """The endpoint's TLS certificate (tlsConfig) and DNS record (dnsConfig): an ACM
    certificate for a domain, optionally with a Route 53 record, or the operator's self-signed
    certificate kept in S3."""

    certificate_s3_uri: str | None = Field(
        None, max_length=512, pattern=S3_URI_PATTERN, description="self-signed cert store"
    )
    acm_certificate_arn: str | None = Field(
        None,
        pattern=r"^arn:aws:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$",
        description="ACM certificate for domain_name (set both)",
    )
    domain_name: str | None = Field(
        None, max_length=253, pattern=DOMAIN_PATTERN, description="lowercase, not a wildcard"
    )
    hosted_zone_id: str | None = Field(None, pattern=r"^Z[A-Z0-9]+$", description="Route 53 zone")

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if (self.acm_certificate_arn is None) != (self.domain_name is None):
            raise RuleViolation(
                "an ACM certificate is used for one domain: both or neither are needed",
                "set tls.acm_certificate_arn and tls.domain_name together",
            )
        if self.hosted_zone_id and self.acm_certificate_arn is None:
            raise RuleViolation(
                "a DNS record needs the ACM certificate of its domain",
                "set tls.acm_certificate_arn and tls.domain_name, or drop tls.hosted_zone_id",
            )
        if self.acm_certificate_arn is None and self.certificate_s3_uri is None:
            raise RuleViolation(
                "tls names no certificate",
                "set tls.acm_certificate_arn with tls.domain_name, or tls.certificate_s3_uri",
            )
        return self


class DataCaptureSpec(Spec):
    """Request/response capture to S3 (dataCapture): the SageMaker endpoint, the load
    balancer's access logs, the model pods."""

    s3_uri: str | None = Field(
        None, max_length=512, pattern=S3_URI_PATTERN, description="default: tls.certificate_s3_uri"
    )
    sagemaker_endpoint: bool = Field(False, description="capture at the SageMaker endpoint")
    load_balancer: bool = Field(False, description="keep the load balancer's access logs")
    model_pod: bool = Field(True, description="capture at the model pods")
    capture: list[CaptureMode] = Field(
        default_factory=lambda: list(CAPTURE_MODES),
        min_length=1,
        max_length=2,
        description="Input, Output or both (default)",
    )
    sampling_percentage: int = Field(100, ge=0, le=100, description="% of requests captured")
    kms_key_id: str | None = Field(
        None,
        max_length=2048,
        pattern=r"^[a-zA-Z0-9:/_-]+$",
        description="KMS key for the captured data",
    )

    @model_validator(mode="after")
    def _some_tier(self) -> Self:
        if not (self.sagemaker_endpoint or self.load_balancer or self.model_pod):
            raise RuleViolation(
                "data capture names no tier to capture at",
                "set data_capture.model_pod, load_balancer or sagemaker_endpoint",
            )
        return self


class CloudWatchTrigger(Spec):
    """A CloudWatch metric the operator's autoscaler scales on (cloudWatchTriggerList)."""

    name: str = Field(
        pattern=r"^[a-z0-9-]+$", max_length=63, description="unique among the triggers"
    )
    namespace: str = Field(min_length=1, max_length=255, description="e.g. AWS/SageMaker")
    metric_name: str = Field(min_length=1, max_length=255, description="the CloudWatch metric")
    dimensions: dict[str, str] = Field(
        default_factory=dict, max_length=30, description="metric dimensions, name to value"
    )
    target_value: float = Field(gt=0, description="the value per replica to scale to")
    stat: Literal["Average", "Sum", "Minimum", "Maximum", "SampleCount"] = Field(
        "Average", description="the statistic read"
    )
    metric_type: Literal["Average", "Value"] = Field(
        "Average", description="Average: per replica; Value: as a whole"
    )
    period_seconds: int = Field(300, ge=60, le=86400, description="statistic period")


def _capture_location(tls: TlsSpec | None, capture: DataCaptureSpec | None) -> None:
    """Captured data goes to data_capture.s3_uri, else to the certificate's bucket."""
    if capture and capture.s3_uri is None and (tls is None or tls.certificate_s3_uri is None):
        raise RuleViolation(
            "data capture needs the S3 location it writes to",
            "set data_capture.s3_uri (s3://bucket/prefix), or tls.certificate_s3_uri",
        )


class PdRole(Spec):
    """The prefill or the decode workers of a disaggregated endpoint."""

    replicas: int = Field(1, ge=1, le=64, description="pods of this role")
    gpus: int | None = Field(None, ge=1, le=8, description="default: the endpoint's gpus")
    args: list[str] = Field(default_factory=list, max_length=32, description="extra vLLM args")


class PdSpec(Spec):
    """Disaggregated prefill and decode (pdSpec): the operator runs separate prefill and decode
    Deployments and routes long prompts through remote prefill."""

    prefill: PdRole = Field(default_factory=PdRole, description="the prefill workers")
    decode: PdRole = Field(default_factory=PdRole, description="the decode workers")
    routing_threshold: int = Field(
        4096, ge=0, le=1_000_000, description="prompt tokens from which prefill is remote"
    )
    same_az: bool = Field(True, description="prefill and decode in one AZ")


class ManagedSpec(Spec):
    """An InferenceEndpointConfig: model, worker image, caching, routing, scaling, load balancer,
    TLS and DNS, data capture."""

    model_name: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-zA-Z0-9][a-zA-Z0-9\-.]*$",
        description="the model's name (SM_MODEL_ID)",
    )
    model_source: ModelSource = Field(description="where the model is loaded from")
    kv_cache: KvCacheSpec | None = Field(None, description="tiered KV cache; default: none")
    routing_strategy: Literal["prefixaware", "kvaware", "session", "roundrobin"] | None = Field(
        None, description="intelligent routing; default: none"
    )
    autoscaling: AutoscalingSpec | None = Field(None, description="replica bounds; default: none")
    load_balancer: bool = Field(True, description="an ALB in front of the endpoint")
    health_check_path: str = Field(
        "/health", pattern=r"^/[A-Za-z0-9/_\-.]*$", description="the load balancer's probe"
    )
    metrics: bool = Field(True, description="the operator's metrics collection")
    tls: TlsSpec | None = Field(None, description="certificate and DNS record")
    data_capture: DataCaptureSpec | None = Field(None, description="capture requests to S3")
    cloudwatch_triggers: list[CloudWatchTrigger] = Field(
        default_factory=list, max_length=8, description="needs autoscaling"
    )
    disaggregation: PdSpec | None = Field(
        None, description="separate prefill and decode workers; not with autoscaling"
    )

    @model_validator(mode="after")
    def _options(self) -> Self:
        _capture_location(self.tls, self.data_capture)
        if self.cloudwatch_triggers and self.autoscaling is None:
            raise RuleViolation(
                "CloudWatch triggers scale between the autoscaling bounds",
                "set managed.autoscaling (min_replicas, max_replicas)",
            )
        if self.disaggregation is not None and self.autoscaling is not None:
            raise RuleViolation(
                "a disaggregated endpoint's prefill and decode replicas are set per role",
                "drop managed.autoscaling, or set disaggregation.prefill/decode.replicas",
            )
        names = [t.name for t in self.cloudwatch_triggers]
        if len(set(names)) != len(names):
            raise RuleViolation(
                "two CloudWatch triggers have the same name", "name each trigger once"
            )
        return self


class JumpStartSpec(Spec):
    """A JumpStartModel: a SageMaker JumpStart model the operator deploys, with the same tiered
    KV cache and intelligent routing options as a managed endpoint."""

    model_id: str = Field(
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9\-_.]*$",
        description="the JumpStart model id",
    )
    model_version: str | None = Field(None, max_length=32, description="default: the latest")
    accept_eula: bool = Field(False, description="accept the model's EULA (gated models)")
    kv_cache: KvCacheSpec | None = Field(None, description="tiered KV cache; default: none")
    routing_strategy: Literal["prefixaware", "kvaware", "session", "roundrobin"] | None = Field(
        None, description="intelligent routing; default: none"
    )
    tls: TlsSpec | None = Field(None, description="certificate and DNS record")
    data_capture: DataCaptureSpec | None = Field(None, description="capture requests to S3")

    @model_validator(mode="after")
    def _options(self) -> Self:
        _capture_location(self.tls, self.data_capture)
        return self


class EndpointSpec(Spec):
    """One inference endpoint on a cluster. `gpus` is the GPU count of one replica."""

    name: str = Field(
        pattern=ENDPOINT_NAME_PATTERN,
        min_length=1,
        max_length=40,
        description="the endpoint's name (a DNS label)",
    )
    namespace: str = Field("default", pattern=NAMESPACE_PATTERN, description=NAMESPACE_DESCRIPTION)
    kind: EndpointKind = Field("container", description="container, sglang, managed or jumpstart")
    instance_type: str = Field(pattern=ML_INSTANCE_PATTERN, description="e.g. ml.g5.8xlarge")
    fallback_instance_types: list[Annotated[str, Field(pattern=ML_INSTANCE_PATTERN)]] = Field(
        default_factory=list,
        max_length=4,
        description="other acceptable types, by preference",
    )
    container: ContainerSpec | None = Field(None, description="kinds container and sglang")
    managed: ManagedSpec | None = Field(None, description="kind managed")
    jumpstart: JumpStartSpec | None = Field(None, description="kind jumpstart")
    gpus: int | None = Field(
        None,
        ge=1,
        le=8,
        validate_default=True,
        description="GPUs per replica: required, never inferred",
    )
    replicas: int = Field(1, ge=0, le=64, description="serving pods (sglang: workers)")
    service: ServiceShape = Field(
        "internal", description="external (load balancer), internal, or model_pool"
    )
    router: RouterSpec | None = Field(None, description="kind sglang only")
    autoscaling: AutoscalingSpec | None = Field(
        None, description="KEDA scaling (container, sglang)"
    )
    mig_profile: str | None = Field(
        None,
        pattern=MIG_PROFILE_PATTERN,
        description="serve on MIG partitions of this profile (gpus counts them), e.g. "
        "mig-1g.10gb, on nodes of an instance group partitioned into it",
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
    team: str | None = Field(
        None,
        max_length=40,
        pattern=GOVERNED_NAME_PATTERN,
        description="task governance (self-managed kinds): the team whose quota serves it; its"
        " namespace is then hyperpod-ns-<team>",
    )
    priority: str | None = Field(
        None,
        max_length=40,
        pattern=GOVERNED_NAME_PATTERN,
        description="task governance: a priority class of the cluster's scheduler config (with"
        " team)",
    )
    volumes: Volumes = Field(default_factory=list)

    @model_validator(mode="after")
    def _volumes(self) -> Self:
        if not self.volumes:
            return self
        check_volumes(self.volumes, default_mounted=False)
        if self.kind not in ("container", "sglang"):
            raise RuleViolation(
                f"volumes: a {self.kind} endpoint's pods are made by its operator",
                "mount storage claims on a self-managed (container or sglang) endpoint, or drop"
                " volumes",
            )
        if self.namespace != STORAGE_NAMESPACE:
            raise RuleViolation(
                f"volumes: storage claims live in namespace {STORAGE_NAMESPACE}, and this"
                f" endpoint runs in {self.namespace}",
                f"deploy it in namespace {STORAGE_NAMESPACE} (no team) to mount claims",
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _team_namespace(cls, data: Any) -> Any:
        """With a team and no namespace, the endpoint goes into the team's namespace."""
        if isinstance(data, dict) and data.get("team") and "namespace" not in data:
            team = data["team"]
            if isinstance(team, str) and re.match(GOVERNED_NAME_PATTERN, team):
                return {**data, "namespace": team_namespace(team)}
        return data

    @model_validator(mode="after")
    def _governed(self) -> Self:
        if self.priority is not None and self.team is None:
            raise RuleViolation(
                "priority: a priority class applies to an endpoint of a team",
                "send team too (GET /api/v1/clusters/{name}/teams lists them), or drop priority",
            )
        if self.team is None:
            return self
        if self.kind not in ("container", "sglang"):
            raise RuleViolation(
                f"team: task governance queues self-managed endpoints; a {self.kind} endpoint's"
                " pods are made by its operator",
                "drop team and priority, or use kind container or sglang",
            )
        if self.namespace != team_namespace(self.team):
            raise RuleViolation(
                f"namespace: a team's endpoint runs in {team_namespace(self.team)}, not"
                f" {self.namespace}",
                "drop namespace (it follows the team), or send the team's namespace",
            )
        return self

    def accelerators(self, gpus: int | None = None) -> dict[str, str]:
        """The GPU resources of one worker (whole GPUs, MIG partitions or HAMi shares)."""
        return accelerator_amounts(
            gpus or self.gpus or 0, self.mig_profile, self.gpu_memory_mib, self.gpu_cores
        )

    @field_validator("namespace")
    @classmethod
    def _namespace_rule(cls, value: str) -> str:
        return user_namespace(value, "namespace")

    @field_validator("gpus", mode="after")
    @classmethod
    def _gpus_given(cls, value: int | None, info: ValidationInfo) -> int | None:
        container = info.data.get("container")
        tp = tensor_parallel_size(container.args + container.command) if container else None
        if value is None:
            raise RuleViolation(
                "gpus is required: the GPU count per replica is never inferred"
                + (f" (not even from tensor-parallel size {tp})" if tp else ""),
                "set gpus to the GPUs one replica uses, e.g. 1 for a single-GPU model",
            )
        if tp is not None and tp > value:
            raise RuleViolation(
                f"the command asks for tensor-parallel size {tp} but gpus is {value}",
                f"set gpus to at least {tp}, or lower the tensor-parallel size",
            )
        return value

    @field_validator("fallback_instance_types")
    @classmethod
    def _distinct_types(cls, value: list[str], info: ValidationInfo) -> list[str]:
        seen = [info.data.get("instance_type"), *value]
        twice = sorted({t for t in value if seen.count(t) > 1})
        if twice:
            raise RuleViolation(
                f"{', '.join(twice)} is named twice among the instance types",
                "name each acceptable instance type once, instance_type first",
            )
        return value

    def instance_types(self) -> list[str]:
        """Every acceptable instance type, most preferred first."""
        return [self.instance_type, *self.fallback_instance_types]

    @model_validator(mode="after")
    def _shape(self) -> Self:
        check_share(self.gpus or 0, self.mig_profile, self.gpu_memory_mib, self.gpu_cores, "")
        if self.kind == "jumpstart" and (self.mig_profile or self.gpu_memory_mib or self.gpu_cores):
            raise RuleViolation(
                "a JumpStartModel's server takes whole GPUs of its instance type",
                "drop mig_profile, gpu_memory_mib and gpu_cores, or use kind managed",
            )
        if self.kind == "jumpstart" and self.fallback_instance_types:
            raise RuleViolation(
                "a JumpStartModel runs on one instance type (server.instanceType)",
                "drop fallback_instance_types, or use kind managed for a preference list",
            )
        if self.kind in ("container", "sglang") and self.container is None:
            raise RuleViolation(
                f"a {self.kind} endpoint needs its container", "set container.engine and model"
            )
        if self.kind == "sglang" and self.container and self.container.engine != "sglang":
            raise RuleViolation(
                f"an sglang endpoint runs SGLang workers, not {self.container.engine}",
                "set container.engine to sglang, or use kind container",
            )
        if self.kind == "managed" and self.managed is None:
            raise RuleViolation(
                "a managed endpoint needs its managed spec", "set managed.model_source"
            )
        if self.kind == "jumpstart" and self.jumpstart is None:
            raise RuleViolation("a jumpstart endpoint needs the model", "set jumpstart.model_id")
        if self.service == "model_pool" and self.kind != "container":
            raise RuleViolation(
                "a model pool is made of container workers",
                "use kind container with service model_pool",
            )
        if self.router is not None and self.kind != "sglang":
            raise RuleViolation("only an sglang endpoint has a router", "drop router")
        if self.autoscaling is not None and self.kind not in ("container", "sglang"):
            raise RuleViolation(
                "autoscaling is for self-managed (container, sglang) endpoints",
                "drop autoscaling (managed endpoints set managed.autoscaling)",
            )
        if self.autoscaling is not None and self.service == "model_pool":
            raise RuleViolation(
                "a model pool's workers are assigned to models by hand, not scaled by KEDA",
                "drop autoscaling, or use service internal or external",
            )
        if self.autoscaling is not None and self.container and self.container.engine == "custom":
            raise RuleViolation(
                "a custom engine has no known serving metrics to scale on",
                "use engine vllm or sglang, or drop autoscaling and scale by replicas",
            )
        return self


class EndpointTarget(Spec):
    cluster: str = Field(pattern=NAME_PATTERN)
    name: str = Field(pattern=ENDPOINT_NAME_PATTERN, description="the endpoint's name")
    namespace: str = Field("default", pattern=NAMESPACE_PATTERN, description=NAMESPACE_DESCRIPTION)

    @field_validator("namespace")
    @classmethod
    def _namespace_rule(cls, value: str) -> str:
        return user_namespace(value, "namespace")


class ScaleRequest(Spec):
    replicas: int = Field(ge=0, le=64, description="the replicas wanted")


class PoolWorker(Spec):
    """A worker of a model pool, by its pod's name (returned to the unassigned workers)."""

    pod: str = Field(
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="the worker's pod (a DNS-1123 subdomain)",
    )

    @field_validator("pod")
    @classmethod
    def _pod_name(cls, value: str) -> str:
        return dns_subdomain(value, "pod")


class PoolAssignment(PoolWorker):
    """Move a warm worker of a model pool to a model (or back to unassigned)."""

    model: str | None = Field(
        None,
        pattern=POOL_MODEL_PATTERN,
        description="the model to serve, as the pool's requests name it in `model` (lowercase"
        " letters, digits and '-': it names the workers' label and the Service <endpoint>-<model>);"
        " null: unassign",
    )


class ContainerChange(Spec):
    """Fields of the serving container to change; the merged container is checked as a whole."""

    engine: Engine | None = Field(None, description="vllm, sglang, or custom")
    image: str | None = Field(None, min_length=3, max_length=255, description="the image")
    command: list[str] | None = Field(None, max_length=64, description="replaces the command")
    args: list[str] | None = Field(None, max_length=128, description="replaces the args")
    model: str | None = Field(None, min_length=1, max_length=255, description="the model served")
    port: int | None = Field(None, ge=0, le=65535, description="0: the engine's default")
    env: dict[str, str] | None = Field(None, max_length=64, description="replaces the env")
    hf_token_secret: str | None = Field(
        None,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="Secret (key `token`) with the HF token",
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return None if value is None else _env_rule(value)


class EndpointChange(Spec):
    """A change to a deployed endpoint: only the fields sent change (nested ones too); the
    merged spec passes every rule of a deploy."""

    instance_type: str | None = Field(
        None, pattern=ML_INSTANCE_PATTERN, description="e.g. ml.g5.8xlarge"
    )
    fallback_instance_types: list[Annotated[str, Field(pattern=ML_INSTANCE_PATTERN)]] | None = (
        Field(None, max_length=4, description="replaces the fallback types")
    )
    gpus: int | None = Field(None, ge=1, le=8, description="GPUs per replica")
    replicas: int | None = Field(None, ge=0, le=64, description="serving pods")
    service: ServiceShape | None = Field(None, description="external, internal or model_pool")
    container: ContainerChange | None = Field(None, description="container fields to change")
    router: RouterSpec | None = Field(None, description="router fields, merged")
    autoscaling: AutoscalingSpec | None = Field(None, description="KEDA scaling, merged")
    managed: ManagedSpec | None = Field(None, description="the managed spec, merged")
    jumpstart: JumpStartSpec | None = Field(None, description="the jumpstart spec, merged")

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not self.model_fields_set:
            raise RuleViolation(
                "the change names no field", "send only the fields to change, e.g. replicas"
            )
        return self

    def merged(self, recorded: dict[str, Any]) -> dict[str, Any]:
        """The recorded spec with this change laid over it (nested objects merged)."""
        return _merge(recorded, self.model_dump(mode="json", exclude_unset=True))


def _merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "env":
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


# ---- commands --------------------------------------------------------------------------------


class DeployEndpoint(Command):
    domain = "inference"
    verb = "deploy"

    cluster: str
    spec: EndpointSpec


class DeleteEndpoint(Command):
    domain = "inference"
    verb = "delete"

    target: EndpointTarget


class ScaleEndpoint(Command):
    domain = "inference"
    verb = "scale"

    target: EndpointTarget
    replicas: int


class AssignPoolWorker(Command):
    domain = "inference"
    verb = "assign"

    target: EndpointTarget
    pod: str
    model: str | None = None


# ---- events ----------------------------------------------------------------------------------


class EndpointDeployed(Event):
    what = "endpoint_deployed"
    cluster: str
    name: str
    kind: str
    objects: list[str] = []


class EndpointStatusChanged(Event):
    """What the status watcher saw change."""

    what = "endpoint_status_changed"
    cluster: str
    name: str
    status: str
    previous: str | None = None
    ready_replicas: int = 0
    replicas: int = 0
    message: str | None = None


class EndpointScaled(Event):
    what = "endpoint_scaled"
    cluster: str
    name: str
    replicas: int
    previous: int | None = None


class PoolWorkerAssigned(Event):
    what = "pool_worker_assigned"
    cluster: str
    name: str
    pod: str
    model: str | None
    previous: str | None = None


class EndpointDeleted(Event):
    what = "endpoint_deleted"
    cluster: str
    name: str


def summary(spec: dict[str, Any]) -> dict[str, Any]:
    """What a list shows of a recorded spec."""
    container = spec.get("container") or {}
    return {
        "kind": spec.get("kind"),
        "engine": container.get("engine"),
        "service": spec.get("service"),
        "instance_type": spec.get("instance_type"),
        "gpus": spec.get("gpus"),
    }
