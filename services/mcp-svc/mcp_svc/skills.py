"""The playbooks in `skills/` served as MCP prompts, for clients that take no skill files.

Each `skills/<name>/SKILL.md` becomes a prompt named after the skill, described by its front
matter, whose text is the playbook. The directory is `MCP_SKILLS_DIR`, else the repository's
`skills/` next to this package in a development install; without one, no prompts are served.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mcp_svc.registry import HyperpilotServer

_FRONT_MATTER = re.compile(r"^---\n(.*?)\n---\n(.*)$", re.S)


@dataclass(frozen=True)
class Skill:
    name: str
    version: str
    description: str
    tools: tuple[str, ...]
    body: str


def skills_dir() -> Path | None:
    configured = os.environ.get("MCP_SKILLS_DIR")
    if configured:
        return Path(configured)
    candidate = Path(__file__).resolve().parents[3] / "skills"
    return candidate if candidate.is_dir() else None


def load(directory: Path) -> list[Skill]:
    found = []
    for path in sorted(directory.glob("*/SKILL.md")):
        match = _FRONT_MATTER.match(path.read_text(encoding="utf-8"))
        if match is None:
            continue
        meta: dict[str, Any] = yaml.safe_load(match.group(1)) or {}
        found.append(
            Skill(
                name=str(meta.get("name", path.parent.name)),
                version=str(meta.get("version", "")),
                description=str(meta.get("description", "")),
                tools=tuple(str(t) for t in meta.get("tools", [])),
                body=match.group(2).strip() + "\n",
            )
        )
    return found


def _text_of(skill: Skill) -> Callable[[], str]:
    def playbook() -> str:
        return skill.body

    return playbook


def register(server: HyperpilotServer, directory: Path | None) -> list[Skill]:
    if directory is None or not directory.is_dir():
        return []
    skills = load(directory)
    for skill in skills:
        server.prompt(
            name=skill.name,
            title=f"{skill.name} {skill.version}".strip(),
            description=skill.description,
        )(_text_of(skill))
    server.skills = skills
    return skills
