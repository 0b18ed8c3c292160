"""`hyperpilot spaces`: development spaces (JupyterLab, Code Editor) on a cluster through the
SageMaker Spaces add-on; yours alone (OwnerOnly). `connect` prints how to reach one: its URL
through the gateway, and the port-forward command a local IDE uses."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from hyperpilot.client import UsageError
from hyperpilot.commands.common import (
    Area,
    Cluster,
    DryRun,
    Limit,
    Output,
    PageToken,
    Wait,
    Yes,
    active_cluster,
    checked,
    client,
    confirm,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.output import Column, details, emit, table
from shared.boundary import api_path
from shared.contracts.spaces import SpaceChange, SpaceSpec

app = Area("spaces", "Development spaces (JupyterLab, Code Editor): yours alone.")

Space = Annotated[str, typer.Argument(help="Space name", show_default=False)]
Image = Annotated[str | None, typer.Option("--image", help="Container image")]
Cpu = Annotated[str | None, typer.Option("--cpu", help="CPU request, e.g. 2 or 500m")]
Memory = Annotated[str | None, typer.Option("--memory", help="Memory, e.g. 8Gi")]
Gpu = Annotated[int | None, typer.Option("--gpu", help="Whole NVIDIA GPUs")]
Volumes = Annotated[
    list[str] | None,
    typer.Option("--volume", help="CLAIM or CLAIM:/mount/path (repeatable), e.g. s3-claim:/data"),
]
Idle = Annotated[
    int | None, typer.Option("--idle-minutes", help="Stop after this many idle minutes")
]

TEMPLATES = [
    Column("TEMPLATE", "name"),
    Column("NAME", "display_name"),
    Column("APP", "app_type"),
    Column("IMAGE", "default_image"),
    Column("CPU", lambda t: (t.get("defaults") or {}).get("cpu")),
    Column("MEMORY", lambda t: (t.get("defaults") or {}).get("memory")),
    Column("GPU", lambda t: (t.get("defaults") or {}).get("gpu")),
    Column(
        "GPU BOUNDS",
        lambda t: "{min}-{max}".format(**b) if (b := (t.get("bounds") or {}).get("gpu")) else "",
    ),
]

SPACES = [
    Column("SPACE", "name"),
    Column("STATUS", "status"),
    Column("APP", "app_type"),
    Column("GPU", "gpu"),
    Column("CPU", "cpu"),
    Column("MEMORY", "memory"),
    Column("VOLUMES", lambda s: ", ".join(v["claim"] for v in s.get("volumes") or [])),
    Column("OWNER", "owner"),
]


def _path(cluster: str, *rest: str) -> str:
    return api_path("clusters", cluster, "spaces", *rest)


def _volumes(values: list[str] | None) -> list[dict[str, str]] | None:
    if values is None:
        return None
    out = []
    for value in values:
        claim, sep, path = value.partition(":")
        if not claim or (sep and not path):
            raise UsageError(f"--volume {value!r} is not CLAIM[:PATH]", "use e.g. s3-claim:/data")
        out.append({"claim": claim, **({"mount_path": path} if path else {})})
    return out


def _settings(
    image: str | None,
    cpu: str | None,
    memory: str | None,
    gpu: int | None,
    volumes: list[str] | None,
    idle_minutes: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        k: v
        for k, v in (
            ("image", image),
            ("cpu", cpu),
            ("memory", memory),
            ("gpu", gpu),
            ("volumes", _volumes(volumes)),
        )
        if v is not None
    }
    if idle_minutes is not None:
        body["idle_shutdown"] = {"enabled": True, "timeout_minutes": idle_minutes}
    return body


@app.command("list", epilog=examples("hyperpilot spaces list", "hyperpilot spaces list -o json"))
def list_(
    cluster: Cluster = None,
    limit: Limit = None,
    page_token: PageToken = None,
    output: Output = None,
) -> None:
    """Your spaces on the cluster (an admin's: every space), read live, by name."""
    with client() as api:
        answer = listed(api, _path(active_cluster(api, cluster)), limit, page_token)
    emit(answer, fmt(output), lambda rows: table(rows, SPACES) if rows else Text("no spaces"))


@app.command(epilog=examples("hyperpilot spaces templates", "hyperpilot spaces templates -o json"))
def templates(cluster: Cluster = None, output: Output = None) -> None:
    """The cluster's space templates (WorkspaceTemplate): defaults and bounds, for --template."""
    with client() as api:
        answer = api.get(api_path("clusters", active_cluster(api, cluster), "space-templates"))
    emit(answer, fmt(output), lambda rows: table(rows, TEMPLATES) if rows else Text("no templates"))


@app.command(epilog=examples("hyperpilot spaces describe my-lab"))
def describe(space: Space, cluster: Cluster = None, output: Output = None) -> None:
    """A space: its settings, status, URL and port-forward command."""
    with client() as api:
        answer = api.get(_path(active_cluster(api, cluster), space))
    emit(answer, fmt(output), details)


@app.command(
    epilog=examples(
        "hyperpilot spaces create my-lab --gpu 1 --volume s3-claim:/data --wait",
        "hyperpilot spaces create notes --app code-editor --cpu 2 --memory 8Gi --dry-run",
        "hyperpilot spaces create my-lab --template gpu-small --wait",
    )
)
def create(
    space: Space,
    cluster: Cluster = None,
    app_type: Annotated[
        str | None, typer.Option("--app", help="jupyterlab (default) or code-editor")
    ] = None,
    template: Annotated[
        str | None,
        typer.Option("--template", help="A space template: its defaults fill what is not given"),
    ] = None,
    image: Image = None,
    cpu: Cpu = None,
    memory: Memory = None,
    gpu: Gpu = None,
    volume: Volumes = None,
    idle_minutes: Idle = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Create a space you own; --wait follows it until it is Running (operator)."""
    body: dict[str, Any] = {
        "name": space,
        # a template's app type stands unless --app is given
        **({"app_type": app_type or "jupyterlab"} if app_type or not template else {}),
        **({"template": template} if template else {}),
        **_settings(image, cpu, memory, gpu, volume or [], idle_minutes),
    }
    checked(SpaceSpec, body)
    with client() as api:
        mutate(
            api,
            "POST",
            _path(active_cluster(api, cluster)),
            body,
            output=fmt(output),
            wait=wait,
            dry_run=dry_run,
        )


@app.command(epilog=examples("hyperpilot spaces update my-lab --memory 16Gi --wait"))
def update(
    space: Space,
    cluster: Cluster = None,
    image: Image = None,
    cpu: Cpu = None,
    memory: Memory = None,
    gpu: Gpu = None,
    volume: Volumes = None,
    idle_minutes: Idle = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Change a space: only the options given are sent."""
    body = _settings(image, cpu, memory, gpu, volume, idle_minutes)
    if not body:
        raise UsageError("nothing to change", "give at least one option, e.g. --memory 16Gi")
    checked(SpaceChange, body)
    with client() as api:
        path = _path(active_cluster(api, cluster), space)
        mutate(api, "PATCH", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


def _status(
    space: str, cluster: str | None, verb: str, dry_run: bool, wait: bool, output: Any
) -> None:
    with client() as api:
        path = _path(active_cluster(api, cluster), space, verb)
        mutate(api, "POST", path, None, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(epilog=examples("hyperpilot spaces start my-lab --wait"))
def start(
    space: Space,
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Start a stopped space."""
    _status(space, cluster, "start", dry_run, wait, output)


@app.command(epilog=examples("hyperpilot spaces stop my-lab --wait"))
def stop(
    space: Space,
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Stop a space: its pod goes, its settings and volumes stay."""
    _status(space, cluster, "stop", dry_run, wait, output)


@app.command(epilog=examples("hyperpilot spaces delete my-lab --yes --wait"))
def delete(
    space: Space,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Delete a space (the claims it mounted stay)."""
    with client() as api:
        name = active_cluster(api, cluster)
        if not dry_run:
            confirm(f"Delete space {space} of cluster {name}?", yes)
        mutate(
            api, "DELETE", _path(name, space), None, output=fmt(output), wait=wait, dry_run=dry_run
        )


@app.command(epilog=examples("hyperpilot spaces connect my-lab"))
def connect(space: Space, cluster: Cluster = None, output: Output = None) -> None:
    """How to open a space: its URL through the gateway (your token), and the port-forward
    command for a local IDE (needs the kubeconfig: hyperpilot clusters kubeconfig)."""
    with client() as api:
        found = api.get(_path(active_cluster(api, cluster), space))
        url = api.base_url.rstrip("/") + str(found["url"])
    answer = {
        "space": found["name"],
        "status": found["status"],
        "url": url,
        "port_forward": found["port_forward"],
        "then_open": "http://localhost:8888/lab",
    }
    emit(answer, fmt(output), details)
