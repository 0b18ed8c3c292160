"""Static checks of the root Dockerfile, one build target per image: each image, resolved through
the stages it is built on, is non-root, health-checked, built from the pinned lock and runs the
documented entry point."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from deploy_support import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
BASE_ARG = "${PYTHON_BASE}"

# Build target -> (command the image runs, port its health check probes)
EXPECTED: dict[str, tuple[list[str], int]] = {
    "gateway": (["python", "-m", "gateway"], 3099),
    "cluster-svc": (["python", "-m", "cluster_svc"], 8080),
    "workload-svc": (["python", "-m", "workload_svc"], 8080),
    "inference-svc": (["python", "-m", "inference_svc"], 8080),
    "mcp-svc": (["python", "-m", "mcp_svc"], 8765),
    "sim": (
        ["python", "-m", "sim", "--host", "0.0.0.0", "--port", "5000", "--profile", "fast"],
        5000,
    ),
}


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


@dataclass(frozen=True)
class Stage:
    name: str
    base: str
    instructions: list[Instruction]


def parse(text: str) -> dict[str, Stage]:
    """Build stages by name (an unnamed stage is named by its index), in file order. Continuation
    lines are joined; comments and parser directives are dropped."""
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
    stages: dict[str, Stage] = {}
    current: Stage | None = None
    for line in logical:
        keyword, _, args = line.partition(" ")
        instruction = Instruction(keyword.upper(), args.strip())
        if instruction.keyword == "FROM":
            words = instruction.args.split()
            has_name = len(words) == 3 and words[1].upper() == "AS"
            assert has_name or len(words) == 1, f"unexpected FROM: {line}"
            name = words[2] if has_name else str(len(stages))
            assert name not in stages, f"stage {name} defined twice"
            current = stages[name] = Stage(name, words[0], [])
        if instruction.keyword == "ARG" and current is None:
            continue
        assert current is not None, f"instruction before the first FROM: {line}"
        current.instructions.append(instruction)
    return stages


def chain(stages: dict[str, Stage], target: str) -> list[Stage]:
    """The stages an image is built from, outermost base first, ending with the target itself."""
    found: list[Stage] = []
    name = target
    while name in stages:
        stage = stages[name]
        assert stage not in found, f"{target}: stage {name} is its own base"
        found.insert(0, stage)
        name = stage.base
    return found


def resolved(stages: dict[str, Stage], target: str) -> list[Instruction]:
    """Every instruction that shapes the image of target, in the order they apply."""
    return [i for stage in chain(stages, target) for i in stage.instructions]


def last(instructions: list[Instruction], keyword: str) -> Instruction | None:
    found = [i for i in instructions if i.keyword == keyword]
    return found[-1] if found else None


@pytest.fixture(scope="module")
def stages() -> dict[str, Stage]:
    return parse(DOCKERFILE.read_text())


@pytest.fixture(params=sorted(EXPECTED))
def target(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def test_every_service_folder_has_a_target(stages: dict[str, Stage]) -> None:
    services = sorted(p.name for p in (REPO_ROOT / "services").iterdir() if p.is_dir())
    assert services, "no services found"
    for name in services:
        assert name in EXPECTED, f"services/{name} has no expected image"
    for name in EXPECTED:
        assert name in stages, f"the Dockerfile has no {name} target"
    # One Dockerfile builds every image.
    strays = [
        p.relative_to(REPO_ROOT).as_posix()
        for folder in ("services", "sim", "shared", "hyperpilot")
        for p in (REPO_ROOT / folder).rglob("Dockerfile*")
    ]
    assert strays == [], f"per-image Dockerfiles are back: {strays}"


def test_multi_stage_on_python_311_slim(stages: dict[str, Stage], target: str) -> None:
    base = re.search(r"^ARG PYTHON_BASE=(\S+)$", DOCKERFILE.read_text(), re.M)
    assert base is not None, "the base image must be the PYTHON_BASE build argument"
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base.group(1))
    # Every stage starts from PYTHON_BASE or from another stage of this file.
    for stage in stages.values():
        assert stage.base == BASE_ARG or stage.base in stages, f"{stage.name}: {stage.base}"
    built_on = chain(stages, target)
    assert built_on[0].base == BASE_ARG, f"{target}: {built_on[0].base}"
    # The image copies its environment from a separate build stage that is not part of it.
    sources = [
        c.args.split()[0].removeprefix("--from=")
        for c in resolved(stages, target)
        if c.keyword == "COPY" and c.args.startswith("--from=")
    ]
    assert sources, f"{target}: copies nothing from a build stage"
    for source in sources:
        assert source in stages and stages[source] not in built_on, f"{target}: {source}"
        assert chain(stages, source)[0].base == BASE_ARG


def test_dependencies_come_from_the_lock(stages: dict[str, Stage], target: str) -> None:
    build = [
        i
        for c in resolved(stages, target)
        if c.keyword == "COPY" and c.args.startswith("--from=")
        for i in resolved(stages, c.args.split()[0].removeprefix("--from="))
    ]
    copies = [i.args for i in build if i.keyword == "COPY"]
    assert any("requirements.lock" in c for c in copies), f"{target}: requirements.lock not copied"
    runs = " && ".join(i.args for i in build if i.keyword == "RUN")
    assert re.search(r"pip install --no-deps -r requirements\.lock", runs), target
    # The project itself goes in without resolving anything new.
    assert re.search(r"pip install --no-deps /wheels/\*\.whl", runs), target
    # Any other pip install in the image or its build is pinned to an exact version.
    everything = [*build, *resolved(stages, target)]
    for match in re.finditer(
        r"pip install ([^&;]+)", " && ".join(i.args for i in everything if i.keyword == "RUN")
    ):
        args = match.group(1).split()
        if "-r" in args or "--no-deps" in args:
            continue
        packages = [a for a in args if not a.startswith("-")]
        assert all("==" in p for p in packages), f"{target}: unpinned install {packages}"


def test_runs_as_non_root(stages: dict[str, Stage], target: str) -> None:
    image = resolved(stages, target)
    user = last(image, "USER")
    assert user is not None, f"{target}: no stage of the image sets a USER"
    name = user.args.split(":")[0]
    assert name not in {"root", "0"}, f"{target}: runs as {user.args}"
    # USER comes before the command and nothing after it switches back.
    keywords = [i.keyword for i in image]
    assert len(keywords) - 1 - keywords[::-1].index("USER") < keywords.index("CMD")


def test_health_check_uses_the_standard_library(stages: dict[str, Stage], target: str) -> None:
    _, port = EXPECTED[target]
    image = resolved(stages, target)
    check = last(image, "HEALTHCHECK")
    assert check is not None, f"{target}: no HEALTHCHECK"
    assert "NONE" not in check.args.split()
    command = json.loads(check.args[check.args.index("CMD") + len("CMD") :].strip())
    assert command[:2] == ["python", "-c"], f"{target}: {command}"
    compile(command[2], f"{target}:HEALTHCHECK", "exec")
    assert "curl" not in command[2] and "wget" not in command[2]
    if port == 8080:
        assert "HEALTH_PORT" in command[2] and "/healthz" in command[2]
    else:
        assert str(port) in command[2]
    expose = last(image, "EXPOSE")
    assert expose is not None and expose.args.split()[0] == str(port)


def test_command_is_the_documented_entry_point(stages: dict[str, Stage], target: str) -> None:
    expected, _ = EXPECTED[target]
    image = resolved(stages, target)
    cmd = last(image, "CMD")
    assert cmd is not None, f"{target}: no CMD"
    assert json.loads(cmd.args) == expected
    assert last(image, "ENTRYPOINT") is None, f"{target}: an ENTRYPOINT would wrap the command"


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
    """The checks above can fail: an image without USER or HEALTHCHECK is caught, and so is one
    whose own stage switches back to root after a base that did not."""
    bad = parse('FROM python:3.11-slim\nCOPY . .\nCMD ["python", "-m", "gateway"]\n')
    assert last(resolved(bad, "0"), "USER") is None
    assert last(resolved(bad, "0"), "HEALTHCHECK") is None
    root = parse(
        "FROM python:3.11-slim AS runtime\nUSER 10001:10001\n"
        'FROM runtime AS gateway\nUSER root\nCMD ["python"]\n'
    )
    user = last(resolved(root, "gateway"), "USER")
    assert user is not None and user.args == "root"
    # A target inherits its base's USER and HEALTHCHECK, and only its own chain's.
    inherits = parse(
        'FROM python:3.11-slim AS runtime\nUSER 10001\nHEALTHCHECK CMD ["python", "-c", "0"]\n'
        'FROM runtime AS gateway\nCMD ["python"]\nFROM python:3.11-slim AS other\nUSER root\n'
    )
    assert [s.name for s in chain(inherits, "gateway")] == ["runtime", "gateway"]
    inherited = last(resolved(inherits, "gateway"), "USER")
    assert inherited is not None and inherited.args == "10001"
    assert last(resolved(inherits, "gateway"), "HEALTHCHECK") is not None


def test_gateway_image_listens_on_every_interface(stages: dict[str, Stage]) -> None:
    env = " ".join(i.args for i in resolved(stages, "gateway") if i.keyword == "ENV")
    assert "GATEWAY_HOST=0.0.0.0" in env.split()
