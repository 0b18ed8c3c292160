"""`hyperpilot`: the terminal face, a client of the gateway's REST API, plus the stack commands.

Areas (clusters, storage, operations, events, inspect, profile) live in `hyperpilot.commands`;
`hyperpilot up | down | status` run the embedded stack on this machine.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

from hyperpilot import __version__
from hyperpilot.commands import AREAS
from hyperpilot.commands.common import GLOBALS, examples
from hyperpilot.commands.complete import profile_names
from hyperpilot.infra import free_port
from hyperpilot.stack import Stack, process_alive, read_state, terminate
from shared.validation import RuleViolation

app = typer.Typer(
    no_args_is_help=True,
    epilog=examples(
        "hyperpilot profile add local --url http://127.0.0.1:3099 --token $(cat .hyperpilot/admin-token)",
        "hyperpilot storage create team-llm-data --wait",
        "hyperpilot clusters create -f cluster.yaml --wait -o json",
        "hyperpilot operations wait <operation-id>",
        "hyperpilot events tail --limit 20",
    )
    + "\n\nExit codes: 0 succeeded (or nothing to do), 1 failed, 2 usage or validation error, "
    "3 cancelled, 4 server or connection error, 130 interrupted while waiting.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hyperpilot {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            envvar="HYPERPILOT_PROFILE",
            help="Profile to use (see `hyperpilot profile list`)",
            autocompletion=profile_names,
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            help="Gateway URL; overrides the profile and HYPERPILOT_URL", show_default=False
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Hyperpilot: GPU clusters on EKS + SageMaker HyperPod from a web page, REST, MCP or here.

    Every command below except up, down and status calls the gateway's REST API with the token
    of the current profile (or HYPERPILOT_URL / HYPERPILOT_TOKEN), so it passes the same
    validation and authorization as the web UI and the MCP tools.
    """
    GLOBALS.profile = profile
    GLOBALS.url = url


for _area in AREAS:
    app.add_typer(_area, name=_area.area_name)


def _state_dir() -> Path:
    return Path(os.environ.get("HYPERPILOT_HOME", ".hyperpilot")).resolve()


def _admin_token(state_dir: Path) -> str:
    """The embedded stack's admin token: made once, kept (mode 0600) beside its data."""
    env = os.environ.get("HYPERPILOT_ADMIN_TOKEN")
    if env:
        return env
    path = state_dir / "admin-token"
    if path.exists():
        return path.read_text().strip()
    state_dir.mkdir(parents=True, exist_ok=True)
    token = "hp_" + secrets.token_urlsafe(32)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@app.command(
    rich_help_panel="Local stack",
    epilog=examples("hyperpilot up", "hyperpilot up --port 3199 --profile real"),
)
def up(
    port: Annotated[int, typer.Option(help="Port of the web UI and REST API")] = 3099,
    profile: Annotated[
        str, typer.Option(help="Simulated world's time profile: fast or real")
    ] = "fast",
) -> None:
    """Start the whole system on its embedded default and stay in the foreground (Ctrl-C stops).

    PostgreSQL and NATS are started privately unless DATABASE_URL / NATS_URL are set; the
    simulated AWS and Kubernetes start unless AWS_ENDPOINT_URL is set.
    """
    state_dir = _state_dir()
    existing = read_state(state_dir)
    if existing and process_alive(int(existing["pid"])):  # type: ignore[call-overload]
        typer.echo(
            f"already running at {existing['url']} (pid {existing['pid']}); `hyperpilot down` stops it"
        )
        raise typer.Exit(1)
    if not _port_free(port):
        typer.echo(f"port {port} is taken; choose another with --port {free_port()}", err=True)
        raise typer.Exit(2)
    token = _admin_token(state_dir)
    stack = Stack(
        state_dir=state_dir,
        gateway_port=port,
        profile=profile,
        database_url=os.environ.get("DATABASE_URL"),
        nats_url=os.environ.get("NATS_URL"),
        aws_endpoint_url=os.environ.get("AWS_ENDPOINT_URL"),
        admin_token=token,
        prometheus=True,
    )
    stopping = False

    def _stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        typer.echo("starting PostgreSQL, NATS, the simulated world and the services...")
        started = time.monotonic()
        stack.start()
        typer.echo(
            f"\nHyperpilot is up in {time.monotonic() - started:.1f}s\n"
            f"  UI and REST API:  {stack.url}   (API docs: {stack.url}/docs)\n"
            f"  admin token:      {state_dir / 'admin-token'}\n"
            f"  simulated AWS:    {stack.aws_endpoint_url}\n"
            f"  logs:             {state_dir}/*.log\n"
            f"  metrics:          {stack.metrics_source}\n\n"
            f"  export HYPERPILOT_URL={stack.url} HYPERPILOT_TOKEN=$(cat {state_dir / 'admin-token'})\n\n"
            "Ctrl-C stops everything."
        )
        while not stopping:
            # PostgreSQL, NATS and every service: what died is started again
            for restarted in stack.supervise():
                typer.echo(f"{restarted} had stopped; restarted it", err=True)
            time.sleep(0.5)
    finally:
        typer.echo("stopping...")
        stack.stop()
        typer.echo("stopped.")


@app.command(rich_help_panel="Local stack", epilog=examples("hyperpilot down"))
def down() -> None:
    """Stop the embedded stack started by `hyperpilot up`."""
    state = read_state(_state_dir())
    if not state or not process_alive(int(state["pid"])):  # type: ignore[call-overload]
        typer.echo("not running")
        return
    terminate(int(state["pid"]))  # type: ignore[call-overload]
    deadline = time.monotonic() + 30
    while process_alive(int(state["pid"])) and time.monotonic() < deadline:  # type: ignore[call-overload]
        time.sleep(0.1)
    typer.echo("stopped")


@app.command(rich_help_panel="Local stack", epilog=examples("hyperpilot status"))
def status() -> None:
    """Show whether the embedded stack runs, each process (PostgreSQL, NATS, the simulated
    world, the services) with its live PID, and the gateway's readiness."""
    state = read_state(_state_dir())
    if not state or not process_alive(int(state["pid"])):  # type: ignore[call-overload]
        typer.echo("not running (start it with `make up` or `hyperpilot up`)")
        raise typer.Exit(1)
    typer.echo(f"running at {state['url']} (pid {state['pid']})")
    # the supervisor rewrites stack.json after each restart, so these are the live PIDs
    processes = state.get("processes") or state.get("services", {})
    assert isinstance(processes, dict)
    for name, pid in processes.items():
        alive = pid is not None and process_alive(pid)
        typer.echo(f"  {name:<14} pid {pid or '-':<8} {'alive' if alive else 'DEAD'}")
    try:
        with urllib.request.urlopen(f"{state['url']}/readyz", timeout=3) as response:
            body = json.loads(response.read())
    except Exception as exc:
        body = {"status": f"unreachable: {exc}"}
    typer.echo(f"  readiness: {json.dumps(body)}")
    typer.echo(f"  metrics:   {state.get('metrics') or 'promql-lite, scraped by workload-svc'}")


@app.command(
    rich_help_panel="Local stack",
    context_settings={
        "allow_extra_args": True,
        "ignore_unknown_options": True,
        "help_option_names": [],
    },
    epilog=examples("hyperpilot mcp", "hyperpilot mcp --transport streamable-http --port 8765"),
)
def mcp(ctx: typer.Context) -> None:
    """Run the MCP server (stdio by default) with this installation's interpreter, so an agent
    configuration needs only `hyperpilot mcp` on its PATH; arguments go to `python -m mcp_svc`
    (`hyperpilot mcp --help` lists them)."""
    os.execv(sys.executable, [sys.executable, "-m", "mcp_svc", *ctx.args])


def main() -> None:
    # The same name (usage lines, completion variable) whether run as a script or `python -m`.
    try:
        app(prog_name="hyperpilot", standalone_mode=True)
    except RuleViolation as exc:  # a name that cannot be part of a URL path, say
        typer.echo(f"error: {exc}\n  hint: {exc.hint}", err=True)
        raise SystemExit(2) from exc
