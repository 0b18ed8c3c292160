"""CLI fixtures: the real `hyperpilot` process against the real stack in the simulated world."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.e2e.conftest import (  # noqa: F401 - fixtures used by this package's tests
    TOKEN,
    Client,
    RunningStack,
    module_stack,
    running_stack,
    sim_aws,
)

COMMAND = [sys.executable, "-m", "hyperpilot"]


@dataclass
class Cli:
    """Runs `python -m hyperpilot ...` with HYPERPILOT_URL/TOKEN and a private config dir."""

    url: str
    token: str
    config_home: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("HYPERPILOT_") and k != "XDG_CONFIG_HOME"
        }
        env.update(
            HYPERPILOT_URL=self.url,
            HYPERPILOT_TOKEN=self.token,
            XDG_CONFIG_HOME=str(self.config_home),
            COLUMNS="200",
            NO_COLOR="1",
        )
        env.update(extra)
        return env

    def run(self, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*COMMAND, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(**env),
            stdin=subprocess.DEVNULL,
        )

    def start(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*COMMAND, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env(**env),
        )


class InProcessCli(Cli):
    """The same commands run in this process (typer's runner): quick, for the many small checks.

    The tests that matter as a user sees them (a wait with progress, a stream, Ctrl-C, the
    validation errors) run the real binary through `Cli`.
    """

    def run(self, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
        from hyperpilot.cli import app

        overrides: dict[str, str | None] = {
            k: None for k in os.environ if k.startswith("HYPERPILOT_")
        }
        overrides.update(
            HYPERPILOT_URL=self.url,
            HYPERPILOT_TOKEN=self.token,
            XDG_CONFIG_HOME=str(self.config_home),
            COLUMNS="200",
            NO_COLOR="1",
        )
        overrides.update(env)
        result = CliRunner().invoke(app, list(args), env=overrides, catch_exceptions=False)
        return subprocess.CompletedProcess(
            list(args), result.exit_code, result.stdout, result.stderr
        )


@pytest.fixture
def cli(module_stack: RunningStack, tmp_path: Path) -> Cli:  # noqa: F811
    """The real `hyperpilot` process."""
    return Cli(module_stack.stack.url, TOKEN, tmp_path / "config")


@pytest.fixture
def cli_in(module_stack: RunningStack, tmp_path: Path) -> Cli:  # noqa: F811
    """The CLI's commands in this process."""
    return InProcessCli(module_stack.stack.url, TOKEN, tmp_path / "config")
