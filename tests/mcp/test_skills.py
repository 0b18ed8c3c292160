"""The playbooks and agent configurations agree with the server they drive."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_svc.config import McpSettings
from mcp_svc.registry import HyperpilotServer
from mcp_svc.server import build_server

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "skills"
PLAYBOOKS = sorted(SKILLS.glob("*/SKILL.md"))
RULES = ("terminal state", "decision-grade", "nspect before")


@pytest.fixture(scope="module")
def server() -> HyperpilotServer:
    return build_server(McpSettings(allow_write=False, gateway_token=None))


def front_matter(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text()
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, f"{path} has no front matter"
    meta: dict[str, Any] = yaml.safe_load(match.group(1))
    return meta, match.group(2)


def test_the_expected_playbooks_exist() -> None:
    assert {p.parent.name for p in PLAYBOOKS} == {
        "create-cluster",
        "add-instance-group",
        "enable-managed-features",
        "diagnose-node-health",
        "diagnose-cluster-creation",
        "submit-training",
        "deploy-inference",
        "diagnose-nccl",
    }


@pytest.mark.parametrize("path", PLAYBOOKS, ids=lambda p: p.parent.name)
def test_a_playbook_is_versioned_names_real_tools_and_keeps_the_rules(
    path: Path, server: HyperpilotServer
) -> None:
    meta, body = front_matter(path)
    assert meta["name"] == path.parent.name
    assert re.match(r"^\d+\.\d+\.\d+$", str(meta["version"]))
    assert len(meta["description"]) > 40
    catalog = server.catalog
    assert set(meta["tools"]) <= set(catalog), set(meta["tools"]) - set(catalog)
    mutating = {t for t in meta["tools"] if catalog[t].mutating}
    assert set(meta["mutating_tools"]) == mutating
    for tool in meta["tools"]:
        assert tool in body, f"{tool} is listed but never used in the steps"
    for rule in RULES:
        assert rule in body, f"{path.parent.name} does not state the rule {rule!r}"
    assert "get_operation(operation_id" in body


def test_the_create_playbook_inspects_before_it_creates() -> None:
    _, body = front_matter(SKILLS / "create-cluster" / "SKILL.md")
    steps = body[body.index("## Steps") :]
    first = {
        t: steps.index(t)
        for t in (
            "list_clusters",
            "list_availability_zones",
            "list_instance_types",
            "create_cluster(",
        )
    }
    assert first["list_clusters"] < first["list_availability_zones"] < first["list_instance_types"]
    assert first["list_instance_types"] < first["create_cluster("]


@pytest.mark.parametrize(
    "name", ["diagnose-node-health", "diagnose-cluster-creation", "diagnose-nccl"]
)
def test_diagnostics_investigate_read_only_and_suggest_changes(name: str) -> None:
    _, body = front_matter(SKILLS / name / "SKILL.md")
    assert "read-only" in body and "suggestion" in body
    if name in ("diagnose-node-health", "diagnose-nccl"):
        assert "investigate -> reboot -> replace" in body


def test_each_recipe_and_each_inference_path_has_its_steps() -> None:
    _, training = front_matter(SKILLS / "submit-training" / "SKILL.md")
    for recipe in ("pytorch", "llama-factory", "ms-swift", "verl"):
        assert f'"recipe": "{recipe}"' in training
    _, inference = front_matter(SKILLS / "deploy-inference" / "SKILL.md")
    for kind in ("container", "sglang", "managed", "jumpstart"):
        assert f'`kind: "{kind}"`' in inference
    for service in ("internal", "external", "model_pool"):
        assert f'"{service}"' in inference
    assert "never inferred" in inference


def test_the_kiro_agent_auto_approves_exactly_the_read_only_tools(server: HyperpilotServer) -> None:
    agent = json.loads((SKILLS / "agents" / "hypd-inst-agent.json").read_text())
    assert agent["name"] == "hypd-inst-agent"
    entry = agent["mcpServers"]["hyperpilot"]
    assert entry["command"] == "hyperpilot" and entry["args"] == ["mcp"]
    assert set(entry["env"]) == {"MCP_GATEWAY_URL", "MCP_GATEWAY_TOKEN", "MCP_ALLOW_WRITE"}
    reads = {f"@hyperpilot/{i.name}" for i in server.catalog.values() if not i.mutating}
    assert set(agent["allowedTools"]) == reads
    assert "@hyperpilot" in agent["tools"]
    assert "skill://skills/*/SKILL.md" in agent["resources"]
    prompt = agent["prompt"].removeprefix("file://./")
    assert (SKILLS / "agents" / prompt).is_file()


def test_the_generic_config_runs_the_same_server_read_only() -> None:
    config = json.loads((SKILLS / "agents" / ".mcp.json").read_text())
    entry = config["mcpServers"]["hyperpilot"]
    assert entry["command"] == "hyperpilot" and entry["args"] == ["mcp"]
    assert entry["env"]["MCP_ALLOW_WRITE"] == "false"


async def test_the_config_starts_the_server_outside_the_virtual_environment() -> None:
    """The configuration as a host runs it: its command found on a PATH that holds the
    installation's bin folder but no activated environment (no VIRTUAL_ENV, no `python` of
    ours first), its env expanded; the SDK's stdio client lists the tools."""
    import os
    import sys
    from pathlib import Path

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    config = json.loads((SKILLS / "agents" / ".mcp.json").read_text())
    entry = config["mcpServers"]["hyperpilot"]
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"/usr/bin:/bin:{bin_dir}", "HOME": os.environ.get("HOME", "/root")}
    values = {"HYPERPILOT_URL": "http://127.0.0.1:9", "HYPERPILOT_MCP_TOKEN": "hp_unused"}
    for name, value in entry["env"].items():
        for var, real in values.items():
            value = value.replace("${" + var + "}", real)
        env[name] = value
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
    assert {"list_clusters", "get_operation"} <= {t.name for t in tools.tools}


def test_the_index_lists_every_playbook_with_its_version() -> None:
    index = (SKILLS / "README.md").read_text()
    for path in PLAYBOOKS:
        meta, _ = front_matter(path)
        assert f"[{meta['name']}]({path.parent.name}/SKILL.md) | {meta['version']} |" in index


async def test_the_playbooks_are_served_as_prompts(server: HyperpilotServer) -> None:
    prompts = {p.name: p for p in await server.list_prompts()}
    assert set(prompts) == {p.parent.name for p in PLAYBOOKS}
    for path in PLAYBOOKS:
        meta, body = front_matter(path)
        prompt = prompts[meta["name"]]
        assert prompt.description == meta["description"] and not prompt.arguments
        rendered = await server.get_prompt(meta["name"])
        assert rendered.messages[0].content.text.strip() == body.strip()  # type: ignore[union-attr]


# ---- every tool a playbook or an agent config names is one the server has --------------------

TEXTS = sorted(p for p in SKILLS.rglob("*") if p.is_file() and p.suffix in (".md", ".json"))
# `name(` or `name` in backticks: how a playbook names a tool (and an argument, a field, a code).
CALL = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\(")
QUOTED = re.compile(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`")
AGENT_TOOL = re.compile(r"@hyperpilot/([A-Za-z0-9_]+)")


def calls(text: str) -> list[tuple[str, str]]:
    """Each `tool(arguments)` of a text: its name and the text between its parentheses."""
    found = []
    for match in CALL.finditer(text):
        depth, end = 1, match.end()
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        found.append((match.group(1), text[match.end() : end - 1]))
    return found


def argument_names(arguments: str) -> set[str]:
    """The keyword names, and the bare positional names, of a call's top-level arguments."""
    parts, depth, current = [], 0, ""
    for char in arguments:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    names = set()
    for part in (p.strip() for p in parts):
        if match := re.match(r"^([a-z_][a-z0-9_]*)\s*=", part):
            names.add(match.group(1))
        elif re.fullmatch(r"[a-z_][a-z0-9_]*", part):
            names.add(part)
    return names


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(SKILLS)))
def test_every_tool_a_playbook_or_config_names_is_a_server_tool_with_those_arguments(
    path: Path, server: HyperpilotServer
) -> None:
    catalog = server.catalog
    # A name is a tool's when it starts as some tool's name does (list_, get_, update_, ...).
    verbs = {name.split("_", 1)[0] for name in catalog}
    text = path.read_text()
    named = {n for n in CALL.findall(text) + QUOTED.findall(text) if n.split("_", 1)[0] in verbs}
    named |= set(AGENT_TOOL.findall(text))
    assert named - set(catalog) == set(), f"{path.name} names tools the server lacks"
    for tool, arguments in calls(text):
        if tool in catalog:
            unknown = argument_names(arguments) - set(catalog[tool].parameters)
            assert not unknown, f"{path.name}: {tool}({arguments}) passes {sorted(unknown)}"
    if path.name == "SKILL.md":
        meta, body = front_matter(path)
        used = {n for n in CALL.findall(body) + QUOTED.findall(body) if n in catalog}
        assert used <= set(meta["tools"]), (
            f"{path.parent.name} uses unlisted {used - set(meta['tools'])}"
        )


def test_the_shared_bucket_is_read_where_it_is_listed(server: HyperpilotServer) -> None:
    """The cluster's own bucket (mounted at /s3) is in get_cluster's resources; the managed
    bucket list does not hold it, so no playbook sends an agent there for it."""
    for name in ("submit-training", "deploy-inference"):
        _, body = front_matter(SKILLS / name / "SKILL.md")
        assert "list_storage_buckets" not in body, name
        assert "get_cluster(name)" in body and "resources.bucket.bucket" in body, name
