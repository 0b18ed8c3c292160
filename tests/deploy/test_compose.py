"""docker-compose.yml (local and simulated world) and the compose file the CloudFormation instance
writes: `docker compose config` accepts them, and their shape is the one the docs describe."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import COMPOSE_PATH, REPO_ROOT, instance_compose_text

APP_SERVICES = {
    "gateway": ["python", "-m", "gateway"],
    "cluster-svc": ["python", "-m", "cluster_svc"],
    "workload-svc": ["python", "-m", "workload_svc"],
    "inference-svc": ["python", "-m", "inference_svc"],
    "mcp-svc": ["python", "-m", "mcp_svc"],
}
WORKERS = ("cluster-svc", "workload-svc", "inference-svc")
RUNTIME_ENV = ("DATABASE_URL", "NATS_URL", "AWS_REGION", "LOG_LEVEL", "ACK_WAIT_SECONDS")


def run_compose(
    command: list[str], compose_file: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # A clean environment: the result must not depend on the caller's shell.
    base = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [*command, "-f", str(compose_file), "--project-directory", str(compose_file.parent), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
        cwd=compose_file.parent,
    )


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_PATH.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def instance_compose_file(
    template: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    folder = tmp_path_factory.mktemp("instance")
    path = folder / "docker-compose.yml"
    path.write_text(instance_compose_text(template))
    return path


# The .env the instance's prepare script writes, with made-up values.
INSTANCE_ENV = {
    "AWS_REGION": "us-east-1",
    "HYPERPILOT_REGISTRY": "123456789012.dkr.ecr.us-east-1.amazonaws.com/hyperpilot",
    "HYPERPILOT_TAG": "0.1.0",
    "LOG_GROUP": "/hyperpilot/hyperpilot",
    "HYPERPILOT_ADMIN_TOKEN": "token-from-secrets-manager",
    "DATABASE_URL": "postgresql://hyperpilot:pw@postgres:5432/hyperpilot",
    "POSTGRES_PASSWORD": "pw",
}


# ---------------------------------------------------------------------------- docker compose config


def test_compose_config_validates(compose_command: list[str]) -> None:
    result = run_compose(compose_command, COMPOSE_PATH, "config", "-q")
    assert result.returncode == 0, result.stderr


def test_compose_config_with_sim_profile_and_replicas(compose_command: list[str]) -> None:
    result = run_compose(
        compose_command,
        COMPOSE_PATH,
        "--profile",
        "sim",
        "config",
        "--format",
        "json",
        env={"CLUSTER_SVC_REPLICAS": "3", "AWS_ENDPOINT_URL": "http://sim:5000"},
    )
    assert result.returncode == 0, result.stderr
    rendered = json.loads(result.stdout)
    services = rendered["services"]
    assert set(services) == {*APP_SERVICES, "nats", "postgres", "migrate", "sim"}
    assert services["cluster-svc"]["deploy"]["replicas"] == 3
    assert services["workload-svc"]["deploy"]["replicas"] == 1
    assert services["gateway"]["environment"]["AWS_ENDPOINT_URL"] == "http://sim:5000"
    # Every built image resolves to a target of the root Dockerfile.
    for name in (*APP_SERVICES, "migrate", "sim"):
        build = services[name]["build"]
        assert (Path(build["context"]) / build["dockerfile"]) == REPO_ROOT / "Dockerfile", name
        assert build["target"] == ("gateway" if name == "migrate" else name), name


def test_compose_config_without_sim_passes_no_endpoint(compose_command: list[str]) -> None:
    result = run_compose(compose_command, COMPOSE_PATH, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    assert "sim" not in services
    # Unset for compose means unset in the container: boto3 then talks to real AWS.
    assert services["cluster-svc"]["environment"].get("AWS_ENDPOINT_URL") is None


def test_compose_config_rejects_a_broken_file(compose_command: list[str], tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(
        "services:\n  gateway:\n    image: x\n    depends_on:\n      nowhere:\n        condition: service_healthy\n"
    )
    result = run_compose(compose_command, broken, "config", "-q")
    assert result.returncode != 0


def test_instance_compose_validates(
    compose_command: list[str], instance_compose_file: Path
) -> None:
    for profile_env in ({"COMPOSE_PROFILES": "localdb"}, {}):
        result = run_compose(
            compose_command,
            instance_compose_file,
            "config",
            "--format",
            "json",
            env={**INSTANCE_ENV, **profile_env},
        )
        assert result.returncode == 0, result.stderr
        services = json.loads(result.stdout)["services"]
        assert ("postgres" in services) == bool(profile_env)
        assert services["gateway"]["image"] == (
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/hyperpilot/gateway:0.1.0"
        )
        assert services["gateway"]["logging"]["driver"] == "awslogs"
        assert (
            services["gateway"]["logging"]["options"]["awslogs-group"] == "/hyperpilot/hyperpilot"
        )


# ---------------------------------------------------------------------------- shape (no compose needed)


def test_every_service_is_present(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {*APP_SERVICES, "nats", "postgres", "migrate", "sim"}


def test_entry_points_and_images(compose: dict[str, Any]) -> None:
    services = compose["services"]
    # Every image is a target of the one root Dockerfile.
    targets = re.findall(r"^FROM \S+ AS (\S+)$", (REPO_ROOT / "Dockerfile").read_text(), re.M)
    for name, command in APP_SERVICES.items():
        assert services[name]["command"] == command, name
        assert services[name]["build"] == {"context": ".", "target": name}, name
        assert name in targets, name
    assert services["migrate"]["command"] == ["python", "-m", "shared.migrate"]
    assert services["migrate"]["build"] == {"context": ".", "target": "gateway"}
    assert services["sim"]["command"][:3] == ["python", "-m", "sim"]
    assert services["sim"]["build"] == {"context": ".", "target": "sim"}
    assert "sim" in targets


def test_long_running_services_have_health_checks(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if name == "migrate":
            continue
        check = service.get("healthcheck")
        assert check and not check.get("disable"), f"{name} has no health check"
        assert check["test"][0] in {"CMD", "CMD-SHELL"}
        assert service.get("restart") == "unless-stopped", name


def test_migrate_is_one_shot_and_gates_the_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    migrate = services["migrate"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in APP_SERVICES:
        if name == "mcp-svc":
            # The MCP server talks only to the gateway, which itself waits for migrate.
            assert services[name]["depends_on"]["gateway"]["condition"] == "service_healthy"
            continue
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["nats"]["condition"] == "service_healthy", name


def test_infrastructure_is_persisted(compose: dict[str, Any]) -> None:
    services = compose["services"]
    nats = services["nats"]
    assert nats["image"].startswith("nats:2.10")
    command = nats["command"]
    assert "-js" in command and command[command.index("-sd") + 1] == "/data"
    assert "nats-data:/data" in nats["volumes"]
    postgres = services["postgres"]
    assert postgres["image"].startswith("postgres:16")
    assert "postgres-data:/var/lib/postgresql/data" in postgres["volumes"]
    assert set(compose["volumes"]) == {"nats-data", "postgres-data"}


def test_sim_is_an_optional_profile(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["sim"]["profiles"] == ["sim"]
    for name, service in services.items():
        if name != "sim":
            assert "profiles" not in service, f"{name} must start without a profile"
    for name in WORKERS:
        assert services[name]["depends_on"]["sim"]["required"] is False


def test_configuration_reaches_every_backend_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("migrate", "gateway", *WORKERS):
        environment = services[name]["environment"]
        for key in RUNTIME_ENV:
            assert key in environment, f"{name} misses {key}"
        assert environment["NATS_URL"] == "nats://nats:4222"
        assert environment["DATABASE_URL"].startswith("postgresql://")
        assert "AWS_ENDPOINT_URL" in environment and environment["AWS_ENDPOINT_URL"] is None
    for name in WORKERS:
        assert services[name]["environment"]["HEALTH_PORT"] == "8080"
        assert str(services[name]["deploy"]["replicas"]).startswith("${")
    assert "HYPERPILOT_ADMIN_TOKEN" in services["gateway"]["environment"]
    # The gateway's own default is loopback; in a container it must listen on every interface.
    assert services["gateway"]["environment"]["GATEWAY_HOST"] == "0.0.0.0"
    mcp = services["mcp-svc"]["environment"]
    assert mcp["MCP_GATEWAY_URL"] == "http://gateway:3099"
    assert mcp["MCP_ALLOW_WRITE"] == "${MCP_ALLOW_WRITE:-false}"
    assert services["gateway"]["ports"] == ["${GATEWAY_BIND:-127.0.0.1}:3099:3099"]


def test_instance_compose_matches_the_repository_one(
    compose: dict[str, Any], template: dict[str, Any]
) -> None:
    instance = yaml.safe_load(instance_compose_text(template))
    services = instance["services"]
    assert set(services) == set(compose["services"]) - {"sim"}
    for name, service in services.items():
        assert "build" not in service, f"{name}: the instance pulls images, it builds nothing"
        assert service.get("command") == compose["services"][name].get("command"), name
        if name != "migrate":
            assert (
                service["healthcheck"]["test"] == compose["services"][name]["healthcheck"]["test"]
            )
    assert services["postgres"]["profiles"] == ["localdb"]
    assert services["migrate"]["depends_on"]["postgres"]["required"] is False
    assert services["gateway"]["ports"] == ["127.0.0.1:3099:3099"]
    assert services["gateway"]["environment"]["GATEWAY_HOST"] == "0.0.0.0"
    assert services["mcp-svc"]["ports"] == ["127.0.0.1:8765:8765"]
    assert services["nats"]["volumes"] == ["/var/lib/hyperpilot/nats:/data"]
    assert services["postgres"]["volumes"] == [
        "/var/lib/hyperpilot/postgres:/var/lib/postgresql/data"
    ]


# ---------------------------------------------------------------------------- the MCP HTTP token

MCP_TOKEN_TARGET = "/run/secrets/mcp_http_token"


def assert_mcp_token_from_a_secret(compose_file: dict[str, Any], source: str) -> None:
    """mcp-svc reads its bearer token from a compose secret that is a file, by path; no service
    is handed the token itself (MCP_HTTP_TOKEN) and the file is no literal of the compose file."""
    mcp = compose_file["services"]["mcp-svc"]
    assert mcp["environment"]["MCP_HTTP_TOKEN_FILE"] == MCP_TOKEN_TARGET
    assert mcp["secrets"] == ["mcp_http_token"]
    secret = compose_file["secrets"]["mcp_http_token"]
    assert secret == {"file": source}, "a file secret: not environment:, not content:"
    for name, service in compose_file["services"].items():
        environment = service.get("environment") or {}
        assert "MCP_HTTP_TOKEN" not in environment, f"{name} is given the MCP HTTP token by value"
    assert set(compose_file["secrets"]) == {"mcp_http_token"}


def test_the_mcp_http_token_comes_from_a_secret(compose: dict[str, Any]) -> None:
    assert_mcp_token_from_a_secret(
        compose, "${MCP_HTTP_TOKEN_SECRET_FILE:-./.hyperpilot/mcp-http-token}"
    )
    # .hyperpilot/ (the default place of the file) never reaches git or an image.
    assert ".hyperpilot/" in (REPO_ROOT / ".gitignore").read_text().split()
    assert ".hyperpilot" in (REPO_ROOT / ".dockerignore").read_text().split()
    mcp = compose["services"]["mcp-svc"]["environment"]
    assert mcp["MCP_HTTP_ALLOWED_HOSTS"] == "${MCP_HTTP_ALLOWED_HOSTS:-}"
    assert mcp["MCP_HTTP_ALLOWED_ORIGINS"] == "${MCP_HTTP_ALLOWED_ORIGINS:-}"


def test_the_instance_mcp_http_token_comes_from_a_secret(template: dict[str, Any]) -> None:
    instance = yaml.safe_load(instance_compose_text(template))
    assert_mcp_token_from_a_secret(instance, "/opt/hyperpilot/secrets/mcp-http-token")


def test_compose_config_mounts_the_mcp_http_token(
    compose_command: list[str], tmp_path: Path, instance_compose_file: Path
) -> None:
    token_file = tmp_path / "token"
    result = run_compose(
        compose_command,
        COMPOSE_PATH,
        "config",
        "--format",
        "json",
        env={"MCP_HTTP_TOKEN_SECRET_FILE": str(token_file)},
    )
    assert result.returncode == 0, result.stderr
    rendered = json.loads(result.stdout)
    assert rendered["secrets"]["mcp_http_token"]["file"] == str(token_file)
    mcp = rendered["services"]["mcp-svc"]
    assert mcp["secrets"] == [{"source": "mcp_http_token", "target": MCP_TOKEN_TARGET}]
    assert mcp["environment"]["MCP_HTTP_TOKEN_FILE"] == MCP_TOKEN_TARGET
    # Unset allow-lists reach the server empty, which means its defaults.
    assert mcp["environment"]["MCP_HTTP_ALLOWED_HOSTS"] == ""
    default = run_compose(compose_command, COMPOSE_PATH, "config", "--format", "json")
    assert json.loads(default.stdout)["secrets"]["mcp_http_token"]["file"] == str(
        REPO_ROOT / ".hyperpilot" / "mcp-http-token"
    )

    instance = run_compose(
        compose_command, instance_compose_file, "config", "--format", "json", env=INSTANCE_ENV
    )
    assert instance.returncode == 0, instance.stderr
    rendered = json.loads(instance.stdout)
    assert rendered["secrets"]["mcp_http_token"]["file"] == "/opt/hyperpilot/secrets/mcp-http-token"
    assert rendered["services"]["mcp-svc"]["secrets"] == [
        {"source": "mcp_http_token", "target": MCP_TOKEN_TARGET}
    ]
