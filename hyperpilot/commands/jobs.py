"""`hyperpilot jobs`: training jobs from recipes: submit, list, describe, logs, cancel, delete."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer

from hyperpilot.client import EXIT_INTERRUPTED, Client, UsageError
from hyperpilot.commands.clusters import parse_pairs, read_spec
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
    active_cluster,
    client,
    confirm,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.output import Column, details, emit, table
from shared.boundary import api_path
from shared.contracts.gpu import MAX_GPU_MEMORY_MIB
from shared.contracts.workloads import Hyperparameters, PyTorchRecipe, Resources

app = Area("jobs", "Training jobs from recipes: submit, list, describe, logs, cancel, delete.")

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
COLUMNS = [
    Column("JOB", "name"),
    Column("RECIPE", "recipe"),
    Column("KIND", "kind"),
    Column("STATUS", "status"),
    Column("RESTARTS", lambda j: f"{j.get('restarts', 0)}/{j.get('budget', '-')}"),
    Column("REASON", "reason", wrap=True),
    Column("CREATED", "created_at"),
]

Job = Annotated[str, typer.Argument(help="Job name", show_default=False)]


def _resource_help(field: str) -> str:
    """The contract's description of a resources.<field> (the body's resources object)."""
    return f"resources.{field}: {Resources.model_fields[field].description}"


def _base(cluster: str) -> str:
    return api_path("clusters", cluster, "jobs")


@app.command(
    "list",
    epilog=examples(
        "hyperpilot jobs list",
        "hyperpilot jobs list -c llm-training -o json",
        "hyperpilot jobs list --limit 50",
    ),
)
def list_(
    cluster: Cluster = None,
    limit: Limit = None,
    page_token: PageToken = None,
    output: Output = None,
) -> None:
    """A cluster's jobs and their last observed status, oldest first."""
    with client() as api:
        rows = listed(api, _base(active_cluster(api, cluster)), limit, page_token)
    emit(rows, fmt(output), lambda r: table(r, COLUMNS) if r else "(no jobs)")


def _pods(job: dict[str, Any]) -> list[str]:
    observed = (job.get("live") or {}).get("observed") or {}
    return [str(p["name"]) for p in observed.get("pods") or [] if isinstance(p, dict)]


@app.command(
    epilog=examples(
        "hyperpilot jobs describe llama-sft", "hyperpilot jobs describe llama-sft -o yaml"
    )
)
def describe(job: Job, cluster: Cluster = None, output: Output = None) -> None:
    """A job: its record, restarts against the budget, and its pods (read live)."""
    with client() as api:
        found = api.get(f"{_base(active_cluster(api, cluster))}/{job}")

    def render(j: dict[str, Any]) -> Any:
        shown = {
            k: j.get(k)
            for k in ("name", "recipe", "kind", "namespace", "status", "reason", "message")
        }
        shown["restarts"] = f"{j.get('restarts', 0)} of {j.get('budget', '-')}"
        shown["pods"] = ", ".join(_pods(j)) or None
        shown["operation_id"] = j.get("operation_id")
        return details(shown)

    emit(found, fmt(output), render)


@app.command(
    epilog=examples(
        "hyperpilot jobs submit -f llama-sft.yaml --wait",
        "hyperpilot jobs submit --recipe pytorch --name ddp --instance-group gpu "
        "--script code/train.py --replicas 2 --gpus 1 --dry-run",
        "hyperpilot jobs submit --recipe llama-factory --name sft --instance-group gpu "
        "--model Qwen/Qwen2.5-0.5B --dataset alpaca_en_demo",
        "hyperpilot jobs submit --recipe pytorch --name small --instance-group mig "
        "--script code/train.py --gpus 2 --mig-profile mig-1g.10gb",
        "hyperpilot jobs submit --recipe pytorch --name shared --instance-group gpu "
        "--script code/train.py --gpus 1 --gpu-memory-mib 20000 --gpu-cores 30",
        "hyperpilot jobs submit -f big.yaml --team team-a --priority high",
    )
)
def submit(
    cluster: Cluster = None,
    file: Annotated[
        str | None,
        typer.Option("--file", "-f", help="Job spec (a recipe) as YAML or JSON; - for stdin"),
    ] = None,
    recipe: Annotated[
        str | None, typer.Option(help="pytorch, llama-factory, ms-swift or verl")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Job name")] = None,
    instance_group: Annotated[str | None, typer.Option(help="Where the pods run")] = None,
    replicas: Annotated[int | None, typer.Option(help="Pods (nodes)")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs per pod")] = None,
    image: Annotated[str | None, typer.Option(help="Container image")] = None,
    script: Annotated[str | None, typer.Option(help="pytorch: the script in the bucket")] = None,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="pytorch: a script argument (repeatable)")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Fine-tuning recipes: the model")] = None,
    dataset: Annotated[str | None, typer.Option(help="Fine-tuning recipes: the dataset")] = None,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="KEY=VALUE environment (repeatable)")
    ] = None,
    mig_profile: Annotated[
        str | None, typer.Option(help=_resource_help("mig_profile"), show_default=False)
    ] = None,
    gpu_memory_mib: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_GPU_MEMORY_MIB, help=_resource_help("gpu_memory_mib")),
    ] = None,
    gpu_cores: Annotated[
        int | None, typer.Option(min=1, max=100, help=_resource_help("gpu_cores"))
    ] = None,
    team: Annotated[str | None, ContractOption(PyTorchRecipe, "team")] = None,
    priority: Annotated[str | None, ContractOption(PyTorchRecipe, "priority")] = None,
    batch_size: Annotated[
        int | None,
        ContractOption(Hyperparameters, "batch_size", notes="fine-tuning: the batch size"),
    ] = None,
    max_length: Annotated[
        int | None,
        ContractOption(Hyperparameters, "max_length", notes="fine-tuning: the cut-off length"),
    ] = None,
    lora_rank: Annotated[
        int | None, ContractOption(Hyperparameters, "lora_rank", notes="fine-tuning: LoRA rank")
    ] = None,
    max_steps: Annotated[
        int | None, ContractOption(Hyperparameters, "max_steps", notes="fine-tuning")
    ] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Submit a training job from a recipe; the file holds the body of POST .../jobs.

    --wait follows the submission (the job's custom resource is created); follow the job
    itself with `hyperpilot jobs logs JOB -f`.
    """
    body: dict[str, Any] = read_spec(file) if file else {}
    for key, value in (
        ("recipe", recipe),
        ("name", name),
        ("instance_group", instance_group),
        ("replicas", replicas),
        ("image", image),
        ("script", script),
        ("model", model),
        ("dataset", dataset),
        ("team", team),
        ("priority", priority),
    ):
        if value is not None:
            body[key] = value
    resources = {
        k: v
        for k, v in (
            ("gpus", gpus),
            ("mig_profile", mig_profile),
            ("gpu_memory_mib", gpu_memory_mib),
            ("gpu_cores", gpu_cores),
        )
        if v is not None
    }
    if resources:
        body["resources"] = {**(body.get("resources") or {}), **resources}
    tuning = {
        k: v
        for k, v in (
            ("batch_size", batch_size),
            ("max_length", max_length),
            ("lora_rank", lora_rank),
            ("max_steps", max_steps),
        )
        if v is not None
    }
    if tuning:
        body["hyperparameters"] = {**(body.get("hyperparameters") or {}), **tuning}
    if arg:
        body["args"] = arg
    if env:
        body["env"] = {**(body.get("env") or {}), **parse_pairs(env, "--env")}
    if not body:
        raise UsageError("no job spec", "pass -f spec.yaml, or --recipe, --name, ...")
    with client() as api:
        path = _base(active_cluster(api, cluster))
        mutate(api, "POST", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(epilog=examples("hyperpilot jobs cancel llama-sft --wait"))
def cancel(
    job: Job,
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Stop a job's pods; the job stays listed as cancelled."""
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/{job}/cancel"
        mutate(api, "POST", path, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(epilog=examples("hyperpilot jobs delete llama-sft --yes --wait"))
def delete(
    job: Job,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Delete a job: its custom resource and its record."""
    if not dry_run:
        confirm(f"Delete job {job}?", yes)
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/{job}"
        mutate(api, "DELETE", path, output=fmt(output), wait=wait, dry_run=dry_run)


def _log_page(
    api: Client, path: str, pod: str, start: int, previous: bool = False
) -> tuple[str, int]:
    """Lines of one pod from line `start`: the text and the next line number."""
    params: dict[str, Any] = {"pod": pod, "from": start}
    if previous:
        params["previous"] = "true"
    response = api.send("GET", f"{path}/logs", params=params)
    next_line = response.headers.get("X-Next-Line", "")
    text = response.text
    return text, int(next_line) if next_line.isdigit() else start + text.count("\n")


@app.command(
    epilog=examples(
        "hyperpilot jobs logs llama-sft",
        "hyperpilot jobs logs llama-sft -f",
        "hyperpilot jobs logs llama-sft --pod llama-sft-worker-1 --from 100",
        "hyperpilot jobs logs get-qwen --previous",
    )
)
def logs(
    job: Job,
    cluster: Cluster = None,
    pod: Annotated[
        str | None, typer.Option(help="Pod to read (the job's first pod if omitted)")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until the job ends")
    ] = False,
    start: Annotated[int, typer.Option("--from", min=0, help="Skip this many lines")] = 0,
    interval: Annotated[
        float, typer.Option(min=0.1, help="Seconds between reads while following")
    ] = 1.0,
    previous: Annotated[
        bool,
        typer.Option(
            "--previous",
            "-p",
            help="The log of the pod's container before its last restart (not with -f)",
        ),
    ] = False,
) -> None:
    """Print a pod's log; with -f keep printing new lines until the job ends (Ctrl-C stops).

    --previous prints what the pod's container logged before it last restarted in place.
    A pod the training operator recreated has none: `hyperpilot diagnose events` tells why.
    """
    if previous and follow:
        raise UsageError("--previous and --follow do not go together", "drop one of them")
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/{job}"
        if pod is None:
            pods = _pods(api.get(path))
            if not pods:
                raise UsageError(f"job {job} has no pods yet", "retry shortly, or pass --pod")
            pod = pods[0]
        cursor = start
        if previous:
            text, _ = _log_page(api, path, pod, cursor, previous=True)
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        try:
            while True:
                text, cursor = _log_page(api, path, pod, cursor)
                if text:
                    sys.stdout.write(text)
                    sys.stdout.flush()
                if not follow:
                    return
                if not text:
                    status = api.get(path, live="false").get("status")
                    if status in TERMINAL:
                        final, cursor = _log_page(api, path, pod, cursor)
                        sys.stdout.write(final)
                        sys.stdout.flush()
                        sys.stderr.write(f"job {job} {status}\n")
                        return
                    time.sleep(interval)
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_INTERRUPTED) from None


RUN_COLUMNS = [
    Column("RUN", "run_id"),
    Column("STATUS", "status"),
    Column("STEP", lambda r: (r.get("metrics") or {}).get("loss", {}).get("step", "-")),
    Column("LOSS", lambda r: (r.get("metrics") or {}).get("loss", {}).get("value", "-")),
    Column(
        "TOKENS/S", lambda r: (r.get("metrics") or {}).get("tokens_per_sec", {}).get("value", "-")
    ),
]


@app.command(
    epilog=examples(
        "hyperpilot jobs runs llama-sft",
        "hyperpilot jobs runs llama-sft --metric loss",
        "hyperpilot jobs runs llama-sft --metric tokens_per_sec -o json",
    )
)
def runs(
    job: Job,
    cluster: Cluster = None,
    metric: Annotated[
        str | None,
        typer.Option(help="Print this metric's history of the newest run (loss, tokens_per_sec)"),
    ] = None,
    output: Output = None,
) -> None:
    """The job's MLflow runs on its SageMaker tracking server, or one metric's history."""
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/{job}/runs"
        found = api.get(path)
        if metric is None:
            reason = found.get("reason")
            emit(
                found,
                fmt(output),
                lambda r: table(r["runs"], RUN_COLUMNS) if r["runs"] else f"(no runs: {reason})",
            )
            return
        if not found["runs"]:
            raise UsageError(
                f"job {job} has no MLflow run yet: {found.get('reason')}", "retry once it trains"
            )
        history = api.get(path, metric=metric)["history"]
    emit(
        history,
        fmt(output),
        lambda h: table(
            [{**p, "value": f"{p['value']:.4f}"} for p in h["points"]],
            [Column("STEP", "step"), Column(metric.upper(), "value")],
            title=f"run {h['run_id']}",
        ),
    )
