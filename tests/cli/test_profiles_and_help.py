"""Profiles in the user's config directory, environment overrides, help with examples."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from hyperpilot import config
from hyperpilot.cli import app


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("HYPERPILOT_URL", "HYPERPILOT_TOKEN", "HYPERPILOT_PROFILE", "HYPERPILOT_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


def test_profiles_live_in_the_xdg_config_dir_with_mode_0600(_config_home: Path) -> None:
    config.add_profile("prod", "https://hp.example.com/", "hp_secret_token", make_current=False)
    path = _config_home / "hyperpilot" / "config.yaml"
    assert config.config_path() == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    saved = yaml.safe_load(path.read_text())
    assert saved == {
        "current": "prod",
        "profiles": {"prod": {"url": "https://hp.example.com", "token": "hp_secret_token"}},
    }


def test_without_xdg_the_file_is_under_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert config.config_path() == tmp_path / "home" / ".config" / "hyperpilot" / "config.yaml"


def test_what_a_command_uses_flags_then_environment_then_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert config.resolve().url == config.DEFAULT_URL
    assert config.resolve().token is None
    config.add_profile("a", "http://a:1", "tok_a", make_current=True)
    config.add_profile("b", "http://b:2", "tok_b", make_current=False)
    chosen = config.resolve()
    assert (chosen.profile, chosen.url, chosen.token) == ("a", "http://a:1", "tok_a")
    assert config.resolve(profile="b").url == "http://b:2"
    monkeypatch.setenv("HYPERPILOT_PROFILE", "b")
    assert config.resolve().token == "tok_b"
    monkeypatch.setenv("HYPERPILOT_URL", "http://env:3")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "tok_env")
    env = config.resolve()
    assert (env.url, env.token, env.url_source, env.token_source) == (
        "http://env:3",
        "tok_env",
        "HYPERPILOT_URL",
        "HYPERPILOT_TOKEN",
    )
    assert config.resolve(url="http://flag:4").url == "http://flag:4"
    monkeypatch.setenv("HYPERPILOT_PROFILE", "nope")
    with pytest.raises(config.ConfigError, match="no profile named 'nope'"):
        config.resolve()


def test_profile_commands_add_use_list_remove() -> None:
    runner = CliRunner()
    added = runner.invoke(
        app, ["profile", "add", "dev", "--url", "http://dev:1", "--token", "hp_dev_12345678"]
    )
    assert added.exit_code == 0, added.output
    runner.invoke(
        app, ["profile", "add", "prod", "--url", "https://prod", "--token", "t", "--no-use"]
    )
    listed = runner.invoke(app, ["profile", "list"])
    assert "* " in listed.stdout and "dev" in listed.stdout and "prod" in listed.stdout
    assert "hp_dev_12345678" not in listed.stdout
    assert runner.invoke(app, ["profile", "use", "prod"]).exit_code == 0
    assert config.load().current == "prod"
    missing = runner.invoke(app, ["profile", "use", "staging"])
    assert missing.exit_code == 2 and "no profile named 'staging'" in missing.stderr
    bad = runner.invoke(app, ["profile", "add", "x", "--url", "ftp://x", "--token", "t"])
    assert bad.exit_code == 2 and "not an http(s) URL" in bad.stderr
    assert runner.invoke(app, ["profile", "remove", "prod"]).exit_code == 0
    assert config.load().current == "dev"
    shown = runner.invoke(app, ["profile", "show", "-o", "yaml"])
    assert yaml.safe_load(shown.stdout)["url"] == "http://dev:1"


def test_a_broken_config_file_is_reported_not_a_traceback(_config_home: Path) -> None:
    path = _config_home / "hyperpilot" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("profiles: [unclosed")
    result = CliRunner().invoke(app, ["storage", "list"])
    assert result.exit_code == 2 and "not valid YAML" in result.stderr


def _leaves(command: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    children = getattr(command, "commands", None)
    if not children:
        return [(path, command)]
    found: list[tuple[tuple[str, ...], object]] = []
    for name, child in children.items():
        found += _leaves(child, (*path, name))
    return found


def test_every_command_has_help_with_examples() -> None:
    root = typer.main.get_command(app)
    leaves = _leaves(root)
    names = {" ".join(p) for p, _ in leaves}
    for expected in (
        "clusters create",
        "clusters import",
        "clusters use",
        "storage create",
        "operations wait",
        "operations retry",
        "events tail",
        "inspect availability-zones",
        "profile add",
        "up",
        "down",
        "status",
    ):
        assert expected in names
    for path, command in leaves:
        assert "Examples" in (getattr(command, "epilog", None) or ""), path
        assert (getattr(command, "help", None) or "").strip(), path
    runner = CliRunner()
    for path in [
        (),
        ("clusters", "create"),
        ("instance-groups", "add"),
        ("events", "tail"),
        ("up",),
    ]:
        shown = runner.invoke(app, [*path, "--help"])
        assert shown.exit_code == 0, path
        assert "Examples" in shown.stdout and "$ hyperpilot" in shown.stdout, path


def test_the_stack_commands_are_still_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYPERPILOT_HOME", str(tmp_path / "state"))
    runner = CliRunner()
    status = runner.invoke(app, ["status"])
    assert status.exit_code == 1 and "not running" in status.stdout
    down = runner.invoke(app, ["down"])
    assert down.exit_code == 0 and "not running" in down.stdout
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("hyperpilot ")


def test_the_cli_is_only_a_rest_client() -> None:
    """Loading every command pulls in no cloud client, database or bus module."""
    probe = (
        "import sys, hyperpilot.cli, hyperpilot.__main__\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('boto3', 'botocore', 'kubernetes', 'asyncpg', 'nats')"
        " or m in ('shared.db', 'shared.bus', 'shared.outbox', 'shared.consumer'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
