"""One settings model for every process, read from the environment (and `.env`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.regions import served_regions

NATS_SCHEMES = ("nats://", "tls://")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: str = Field(
        "postgresql://postgres@127.0.0.1:5432/hyperpilot",
        description="PostgreSQL DSN (postgresql://user:pass@host:port/db or a socket path in ?host=)",
    )
    nats_url: str = Field(
        "nats://127.0.0.1:4222", description="NATS server with JetStream (nats:// or tls://)"
    )
    aws_region: str = Field(
        "us-east-1",
        description="The default region; with HYPERPILOT_AWS_REGIONS set, the first one listed",
    )
    hyperpilot_aws_regions: str | None = Field(
        None,
        description=(
            "The regions this control plane manages clusters in, separated by commas (e.g."
            " us-east-1,us-west-2), the first being the default; unset: AWS_REGION alone"
        ),
    )
    aws_endpoint_url: str | None = Field(
        None, description="Unset for real AWS; the simulated world's endpoint otherwise"
    )
    aws_account_id: str | None = Field(
        None,
        description="The account the AWS call budget is kept for; unset: STS GetCallerIdentity",
    )
    aws_calls_per_second: float = Field(
        10.0,
        gt=0,
        description="AWS calls per second per account and region, across every service replica",
    )
    aws_call_burst: float = Field(
        20.0, gt=0, description="AWS calls that may go at once before aws_calls_per_second applies"
    )
    log_level: str = "INFO"
    log_format: str = Field("json", description="json or console")

    # Gateway
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 3099
    max_body_bytes: int = 256 * 1024
    hyperpilot_admin_token: SecretStr | None = Field(
        None, description="Bootstrap admin token, stored hashed at startup"
    )
    mutations_per_minute: int = Field(600, description="Per-principal mutation rate limit")
    mutation_burst: int = Field(100, description="Mutations a principal may send at once")
    oidc_issuer: str | None = Field(None, description="Accept JWTs from this issuer (OIDC)")
    oidc_audience: str | None = Field(None, description="The audience the JWTs must name")
    oidc_jwks: str | None = Field(
        None, description="The issuer's JSON Web Key Set (JSON text) or an https URL serving it"
    )
    oidc_role_claim: str = Field(
        "hyperpilot_role", description="Claim holding viewer|operator|admin"
    )
    cors_origins: list[str] = Field(
        default_factory=list, description="Origins allowed to call the API from a browser"
    )
    metrics_bind: str | None = Field(
        None,
        description=(
            "host:port (e.g. 127.0.0.1:9464) of a separate server for /metrics without a token;"
            " unset: /metrics is on the gateway's port and needs a viewer token"
        ),
    )

    # Bus and consumers
    nats_stream_replicas: int = Field(
        1,
        ge=1,
        le=5,
        description=(
            "Servers each JetStream stream is stored on: 1 for a single NATS server (the embedded"
            " stack), 3 on a NATS cluster of three or more (survives one server down)"
        ),
    )
    ack_wait_seconds: float = Field(30.0, description="Redelivery delay of an unacked command")
    max_deliver: int = Field(10, description="Deliveries before a command fails its operation")
    consumer_concurrency: int = 16
    outbox_poll_seconds: float = 1.0
    health_port: int = Field(0, description="Port of a domain service's /healthz (0 = off)")
    kube_connect_timeout_seconds: float = Field(
        10.0, gt=0, description="How long a Kubernetes API request may take to connect"
    )
    kube_request_timeout_seconds: float = Field(
        60.0,
        gt=0,
        description="How long a Kubernetes API request may wait for its answer (watches and"
        " log streams keep their own); past it the call fails as temporary and is retried",
    )
    malloc_arenas: int = Field(
        2,
        ge=0,
        description="How many glibc malloc arenas a service's threads share (mallopt"
        " M_ARENA_MAX; 0 = glibc's default of eight per core, each keeping its own free memory)",
    )
    memory_trim_seconds: float = Field(
        10.0,
        ge=0,
        description="How often a domain service gives freed heap memory back (glibc's"
        " malloc_trim; 0 = never)",
    )

    # Stage engine
    poll_initial_seconds: float = 0.05
    poll_max_seconds: float = 15.0
    poll_max_evented_seconds: float = Field(
        60.0,
        gt=0,
        description=(
            "Longest poll interval of a wait AWS events cover (a HyperPod cluster's) while the"
            " event queue is read; an event ends the wait at once"
        ),
    )

    @property
    def served_regions(self) -> tuple[str, ...]:
        """The regions this control plane manages clusters in; the first is the default."""
        return served_regions(self.hyperpilot_aws_regions, self.aws_region)

    @model_validator(mode="after")
    def _regions(self) -> Settings:
        served = served_regions(self.hyperpilot_aws_regions, self.aws_region)
        explicit = "aws_region" in self.model_fields_set
        if self.hyperpilot_aws_regions and explicit and self.aws_region not in served:
            raise ValueError(
                f"AWS_REGION {self.aws_region} is not one of HYPERPILOT_AWS_REGIONS"
                f" ({self.hyperpilot_aws_regions}): add it to the list, or leave AWS_REGION"
                " unset (the first region listed is the default)"
            )
        self.aws_region = served[0]
        return self

    @field_validator("nats_url")
    @classmethod
    def _nats_over_tcp(cls, value: str) -> str:
        # Services connect over TCP; the WebSocket client library is kept out of them
        # (shared/slim.py). One URL, or a NATS cluster's client URLs separated by commas.
        if not all(part.strip().startswith(NATS_SCHEMES) for part in value.split(",")):
            raise ValueError(
                f"NATS_URL: each URL must start with {' or '.join(NATS_SCHEMES)} (got {value!r}):"
                " give the NATS servers' client ports (a cluster's separated by commas),"
                " not a WebSocket URL"
            )
        return value

    @field_validator("metrics_bind")
    @classmethod
    def _host_and_port(cls, value: str | None) -> str | None:
        if not value:
            return None
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"METRICS_BIND must be host:port, e.g. 127.0.0.1:9464 (got {value!r})")
        return value


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def shipped_defaults(settings: type[BaseSettings]) -> dict[str, Any]:
    """A settings class's defaults by field name, as shipped (no environment, no .env): what
    benches and tests compare against instead of restating them."""
    return {name: field.default for name, field in settings.model_fields.items()}
