"""`hyperpilot endpoints`: inference endpoints: deploy, list, describe, invoke, scale, delete."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.client import UsageError
from hyperpilot.commands.clusters import read_spec
from hyperpilot.commands.common import (
    Area,
    Cluster,
    ContractOption,
    DryRun,
    Limit,
    Output,
    PageToken,
    Wait,
    Yes,
    client,
    confirm,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.output import Column, Format, details, emit, table
from shared.contracts.inference import AutoscalingSpec, EndpointSpec

app = Area("endpoints", "Inference endpoints: deploy, list, describe, invoke, scale, delete.")

BASE = "/api/v1/endpoints"
COLUMNS = [
    Column("ENDPOINT", "name"),
    Column("CLUSTER", "cluster"),
    Column("KIND", "kind"),
    Column("STATUS", "status"),
    Column("READY", lambda e: f"{e.get('ready_replicas') or 0}/{e.get('replicas') or 0}"),
    Column("ADDRESS", "address", wrap=True),
    Column("UPDATED", "updated_at"),
]

Name = Annotated[str, typer.Argument(help="Endpoint name", show_default=False)]


@app.command(
    epilog=examples(
        "hyperpilot endpoints deploy -f qwen-vllm.yaml --wait",
        "hyperpilot endpoints deploy -f qwen-vllm.yaml -c llm-training --dry-run",
        "hyperpilot endpoints deploy --name chat --type ml.p5.48xlarge --gpus 1 "
        "--mig-profile mig-1g.10gb --model Qwen/Qwen3-0.6B --min-replicas 1 --max-replicas 4 "
        "--rps 20 --dry-run",
        "hyperpilot endpoints deploy --name chat --type ml.g5.8xlarge --fallback-type "
        "ml.g6e.xlarge --gpus 1 --model Qwen/Qwen3-0.6B",
    )
)
def deploy(
    file: Annotated[
        str | None,
        typer.Option("--file", "-f", help="Endpoint spec as YAML or JSON (- for stdin)"),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Endpoint name (overrides the file)")] = None,
    kind: Annotated[
        str | None, typer.Option(help="container, sglang, managed or jumpstart")
    ] = None,
    instance_type: Annotated[
        str | None, ContractOption(EndpointSpec, "instance_type", "--type")
    ] = None,
    fallback_type: Annotated[
        list[str] | None,
        ContractOption(
            EndpointSpec, "fallback_instance_types", "--fallback-type", notes="repeatable"
        ),
    ] = None,
    gpus: Annotated[int | None, ContractOption(EndpointSpec, "gpus")] = None,
    replicas: Annotated[int | None, typer.Option(min=0, max=64, help="Replicas to run")] = None,
    engine: Annotated[str | None, typer.Option(help="container: vllm, sglang or custom")] = None,
    model: Annotated[str | None, typer.Option(help="container: the model to serve")] = None,
    mig_profile: Annotated[str | None, ContractOption(EndpointSpec, "mig_profile")] = None,
    gpu_memory_mib: Annotated[int | None, ContractOption(EndpointSpec, "gpu_memory_mib")] = None,
    gpu_cores: Annotated[int | None, ContractOption(EndpointSpec, "gpu_cores")] = None,
    min_replicas: Annotated[
        int | None, typer.Option(min=0, max=64, help="autoscaling: fewest replicas")
    ] = None,
    max_replicas: Annotated[
        int | None, typer.Option(min=1, max=64, help="autoscaling: most replicas")
    ] = None,
    rps: Annotated[
        float | None,
        ContractOption(
            AutoscalingSpec, "requests_per_second", "--rps", notes="autoscaling trigger"
        ),
    ] = None,
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Deploy (or update) an endpoint; the file holds the body of POST /api/v1/endpoints, and
    the options set (or override) its fields. --min-replicas, --max-replicas and --rps set
    autoscaling (KEDA) of a self-managed endpoint."""
    body = read_spec(file) if file else {}
    for key, value in (
        ("name", name),
        ("kind", kind),
        ("instance_type", instance_type),
        ("gpus", gpus),
        ("replicas", replicas),
        ("mig_profile", mig_profile),
        ("gpu_memory_mib", gpu_memory_mib),
        ("gpu_cores", gpu_cores),
    ):
        if value is not None:
            body[key] = value
    if fallback_type:
        body["fallback_instance_types"] = list(fallback_type)
    if engine is not None or model is not None:
        container = dict(body.get("container") or {})
        container.update({k: v for k, v in (("engine", engine), ("model", model)) if v})
        body["container"] = container
    if min_replicas is not None or max_replicas is not None or rps is not None:
        scaling = dict(body.get("autoscaling") or {})
        for key, number in (
            ("min_replicas", min_replicas),
            ("max_replicas", max_replicas),
            ("requests_per_second", rps),
        ):
            if number is not None:
                scaling[key] = number
        body["autoscaling"] = scaling
    if not body:
        raise UsageError("no endpoint spec", "pass -f endpoint.yaml, or --name, --type, --gpus")
    with client() as api:
        mutate(
            api,
            "POST",
            BASE,
            body,
            output=fmt(output),
            wait=wait,
            dry_run=dry_run,
            params={"cluster": cluster},
        )


@app.command(
    "list",
    epilog=examples("hyperpilot endpoints list", "hyperpilot endpoints list --all -o json"),
)
def list_(
    cluster: Cluster = None,
    all_clusters: Annotated[bool, typer.Option("--all", help="Every cluster's endpoints")] = False,
    limit: Limit = None,
    page_token: PageToken = None,
    output: Output = None,
) -> None:
    """Endpoints of a cluster (the active one unless -c), or of every cluster with --all."""
    with client() as api:
        rows = listed(api, BASE, limit, page_token, cluster="*" if all_clusters else cluster)
    emit(rows, fmt(output), lambda r: table(r, COLUMNS) if r else "(no endpoints)")


@app.command(epilog=examples("hyperpilot endpoints describe qwen -o yaml"))
def describe(name: Name, cluster: Cluster = None, output: Output = None) -> None:
    """An endpoint: its record and, read live, its status and pods."""
    with client() as api:
        found = api.get(f"{BASE}/{name}", cluster=cluster)

    def render(e: dict[str, Any]) -> Any:
        keys = ("name", "cluster", "namespace", "kind", "status", "replicas", "ready_replicas")
        shown = {k: e.get(k) for k in (*keys, "address", "message", "operation_id")}
        return details(shown)

    emit(found, fmt(output), render)


@app.command(
    epilog=examples(
        'hyperpilot endpoints invoke qwen --message "What is HyperPod?"',
        "hyperpilot endpoints invoke qwen -f request.json -o json",
    )
)
def invoke(
    name: Name,
    message: Annotated[str | None, typer.Option("--message", "-m", help="One user message")] = None,
    file: Annotated[
        str | None,
        typer.Option("--file", "-f", help="A whole OpenAI chat request (YAML or JSON)"),
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Longest answer, in tokens")] = None,
    cluster: Cluster = None,
    output: Output = None,
) -> None:
    """Send an OpenAI-compatible chat request to the endpoint and print the answer."""
    body: dict[str, Any] = read_spec(file) if file else {}
    if message is not None:
        body["messages"] = [{"role": "user", "content": message}]
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if not body.get("messages"):
        raise UsageError("nothing to send", 'pass --message "..." or -f request.json')
    with client() as api:
        answer = api.request(
            "POST", f"{BASE}/{name}/invoke", json=body, params={"cluster": cluster}
        )
    output = fmt(output)
    if output is Format.TABLE and isinstance(answer, dict) and answer.get("choices"):
        for choice in answer["choices"]:
            content = (choice.get("message") or {}).get("content") or choice.get("text") or ""
            typer.echo(content)
        return
    emit(answer, output)


@app.command(
    epilog=examples(
        "hyperpilot endpoints scale qwen --replicas 3 --wait",
        "hyperpilot endpoints scale qwen --replicas 0 --dry-run",
    )
)
def scale(
    name: Name,
    replicas: Annotated[int, typer.Option(min=0, help="Replicas to run")],
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Set an endpoint's replicas."""
    with client() as api:
        mutate(
            api,
            "POST",
            f"{BASE}/{name}/scale",
            {"replicas": replicas},
            output=fmt(output),
            wait=wait,
            dry_run=dry_run,
            params={"cluster": cluster},
        )


@app.command(epilog=examples("hyperpilot endpoints delete qwen --yes --wait"))
def delete(
    name: Name,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Delete an endpoint and what it runs."""
    if not dry_run:
        confirm(f"Delete endpoint {name}?", yes)
    with client() as api:
        mutate(
            api,
            "DELETE",
            f"{BASE}/{name}",
            output=fmt(output),
            wait=wait,
            dry_run=dry_run,
            params={"cluster": cluster},
        )
