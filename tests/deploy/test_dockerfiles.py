"""Static checks of every image's Dockerfile: non-root, health-checked, built from the pinned lock,
and running the documented entry point."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from deploy_support import REPO_ROOT

# Dockerfile -> (command the final image runs, port its health check probes)
EXPECTED: dict[str, tuple[list[str], int]] = {
    "services/gateway/Dockerfile": (["python", "-m", "gateway"], 3099),
    "services/cluster-svc/Dockerfile": (["python", "-m", "cluster_svc"], 8080),
    "services/workload-svc/Dockerfile": (["python", "-m", "workload_svc"], 8080),
    "services/inference-svc/Dockerfile": (["python", "-m", "inference_svc"], 8080),
    "services/mcp-svc/Dockerfile": (["python", "-m", "mcp_svc"], 8765),
    "sim/Dockerfile": (
        ["python", "-m", "sim", "--host", "0.0.0.0", "--port", "5000", "--profile", "fast"],
        5000,
    ),
}


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def parse(text: str) -> list[list[Instruction]]:
    """Instructions grouped by build stage (a new stage starts at each FROM). Continuation lines
    are joined; comments and parser directives are dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "a continuation line runs off the end of the file"
    stages: list[list[Instruction]] = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        instruction = Instruction(keyword.upper(), args.strip())
        if instruction.keyword == "FROM":
            stages.append([])
        if instruction.keyword == "ARG" and not stages:
            continue
        assert stages, f"instruction before the first FROM: {line}"
        stages[-1].append(instruction)
    return stages


def last(stage: list[Instruction], keyword: str) -> Instruction | None:
    found = [i for i in stage if i.keyword == keyword]
    return found[-1] if found else None


@pytest.fixture(params=sorted(EXPECTED), ids=lambda p: p.split("/")[-2])
def dockerfile(request: pytest.FixtureRequest) -> tuple[str, list[list[Instruction]]]:
    path: str = request.param
    return path, parse((REPO_ROOT / path).read_text())


def test_every_service_folder_has_a_dockerfile() -> None:
    services = sorted(p.name for p in (REPO_ROOT / "services").iterdir() if p.is_dir())
    assert services, "no services found"
    for name in services:
        assert f"services/{name}/Dockerfile" in EXPECTED, f"services/{name} has no expected image"
        assert (REPO_ROOT / "services" / name / "Dockerfile").is_file()


def test_multi_stage_on_python_311_slim(dockerfile: tuple[str, list[list[Instruction]]]) -> None:
    path, stages = dockerfile
    assert len(stages) >= 2, f"{path}: build and runtime stages expected"
    text = (REPO_ROOT / path).read_text()
    base = re.search(r"^ARG PYTHON_BASE=(\S+)$", text, re.M)
    assert base is not None, f"{path}: base image must be the PYTHON_BASE build argument"
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base.group(1))
    for stage in stages:
        assert stage[0].args.split()[0] == "${PYTHON_BASE}", f"{path}: {stage[0].args}"


def test_dependencies_come_from_the_lock(dockerfile: tuple[str, list[list[Instruction]]]) -> None:
    path, stages = dockerfile
    build = [i for stage in stages[:-1] for i in stage]
    copies = [i.args for i in build if i.keyword == "COPY"]
    assert any("requirements.lock" in c for c in copies), f"{path}: requirements.lock not copied"
    runs = " && ".join(i.args for i in build if i.keyword == "RUN")
    assert re.search(r"pip install --no-deps -r requirements\.lock", runs), path
    # The project itself goes in without resolving anything new.
    assert re.search(r"pip install --no-deps /wheels/\*\.whl", runs), path
    # Any other pip install in the image is pinned to an exact version.
    for match in re.finditer(r"pip install ([^&;]+)", runs):
        args = match.group(1).split()
        if "-r" in args or "--no-deps" in args:
            continue
        packages = [a for a in args if not a.startswith("-")]
        assert all("==" in p for p in packages), f"{path}: unpinned install {packages}"


def test_runs_as_non_root(dockerfile: tuple[str, list[list[Instruction]]]) -> None:
    path, stages = dockerfile
    user = last(stages[-1], "USER")
    assert user is not None, f"{path}: the runtime stage sets no USER"
    name = user.args.split(":")[0]
    assert name not in {"root", "0"}, f"{path}: runs as {user.args}"
    # USER comes before the command and nothing after it switches back.
    keywords = [i.keyword for i in stages[-1]]
    assert keywords.index("USER") < keywords.index("CMD")


def test_health_check_uses_the_standard_library(
    dockerfile: tuple[str, list[list[Instruction]]],
) -> None:
    path, stages = dockerfile
    _, port = EXPECTED[path]
    check = last(stages[-1], "HEALTHCHECK")
    assert check is not None, f"{path}: no HEALTHCHECK"
    assert "NONE" not in check.args.split()
    command = json.loads(check.args[check.args.index("CMD") + len("CMD") :].strip())
    assert command[:2] == ["python", "-c"], f"{path}: {command}"
    compile(command[2], f"{path}:HEALTHCHECK", "exec")
    assert "curl" not in command[2] and "wget" not in command[2]
    if port == 8080:
        assert "HEALTH_PORT" in command[2] and "/healthz" in command[2]
    else:
        assert str(port) in command[2]
    expose = last(stages[-1], "EXPOSE")
    assert expose is not None and expose.args.split()[0] == str(port)


def test_command_is_the_documented_entry_point(
    dockerfile: tuple[str, list[list[Instruction]]],
) -> None:
    path, stages = dockerfile
    expected, _ = EXPECTED[path]
    cmd = last(stages[-1], "CMD")
    assert cmd is not None, f"{path}: no CMD"
    assert json.loads(cmd.args) == expected
    assert last(stages[-1], "ENTRYPOINT") is None, f"{path}: an ENTRYPOINT would wrap the command"


def test_dockerignore_keeps_the_context_small() -> None:
    patterns = {
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for needed in {".git", ".venv", "tests", "**/__pycache__", ".env"}:
        assert needed in patterns, f".dockerignore misses {needed}"
    # What the images install must stay in the context.
    for kept in ("requirements.lock", "pyproject.toml", "shared", "sim", "services", "hyperpilot"):
        assert kept not in patterns, f".dockerignore drops {kept}, which the images need"


def test_parser_sees_a_root_image_as_root() -> None:
    """The checks above can fail: a Dockerfile without USER or HEALTHCHECK is caught."""
    bad = parse('FROM python:3.11-slim\nCOPY . .\nCMD ["python", "-m", "gateway"]\n')
    assert last(bad[-1], "USER") is None
    assert last(bad[-1], "HEALTHCHECK") is None
    root = parse('FROM python:3.11-slim\nUSER root\nCMD ["python"]\n')
    user = last(root[-1], "USER")
    assert user is not None and user.args == "root"


def test_gateway_image_listens_on_every_interface() -> None:
    stages = parse((REPO_ROOT / "services/gateway/Dockerfile").read_text())
    env = " ".join(i.args for i in stages[-1] if i.keyword == "ENV")
    assert "GATEWAY_HOST=0.0.0.0" in env.split()
