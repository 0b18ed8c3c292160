"""`hyperpilot features`: managed features of a cluster (operators, checkpointing, autoscaling)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.client import UsageError
from hyperpilot.commands.common import (
    Area,
    Cluster,
    ContractOption,
    DryRun,
    Output,
    Wait,
    active_cluster,
    checked,
    client,
    examples,
    fmt,
    mutate,
)
from hyperpilot.output import Column, compact, details, emit, table
from shared.boundary import api_path
from shared.contracts.features import AutoscalingChange, FeaturesChange, TieredCheckpointingChange

app = Area(
    "features",
    "Managed features: training and inference operators, tiered checkpointing, autoscaling.",
)


def _path(cluster: str) -> str:
    return api_path("clusters", cluster, "features")


COLUMNS = [
    Column("FEATURE", "feature"),
    Column("ENABLED", "enabled"),
    Column("STATUS", "status"),
    Column("DETAILS", "details", wrap=True),
]


def _render(answer: Any) -> Any:
    """One row per feature: enabled, status, and its identifiers (all of it with -o yaml)."""
    if not isinstance(answer, dict):
        return str(answer)
    rows = [
        {
            "feature": name,
            "enabled": value.get("enabled"),
            "status": value.get("status"),
            "details": compact({k: v for k, v in value.items() if k not in ("enabled", "status")}),
        }
        for name, value in answer.items()
        if isinstance(value, dict)
    ]
    return table(rows, COLUMNS) if rows else details(answer)


@app.command(
    epilog=examples("hyperpilot features show", "hyperpilot features show -c llm-training -o yaml")
)
def show(cluster: Cluster = None, output: Output = None) -> None:
    """The actual state of each managed feature, read live from the cluster."""
    with client() as api:
        answer = api.get(_path(active_cluster(api, cluster)))
    emit(answer, fmt(output), _render)


_POOL_KEYS = {
    "weight": "weight",
    "gpu-limit": "gpu_limit",
    "consolidation": "consolidation",
    "after": "consolidate_after",
}


def parse_pool(text: str) -> dict[str, Any]:
    """NAME=GROUP[+GROUP...][,key=value...] as a node_pools entry (the contract checks it)."""
    head, *options = text.split(",")
    name, sep, groups = head.partition("=")
    if not sep or not name or not groups:
        raise UsageError(
            f"--node-pool {text!r} names no pool and groups",
            "write NAME=GROUP[+GROUP...], e.g. gpus=gpu+spot,weight=50",
        )
    pool: dict[str, Any] = {"name": name, "instance_groups": groups.split("+")}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in _POOL_KEYS:
            raise UsageError(
                f"--node-pool {text!r}: {option!r} is not an option of a pool",
                "use weight=N, gpu-limit=N, consolidation=WhenEmpty|WhenEmptyOrUnderutilized,"
                " after=5m",
            )
        field = _POOL_KEYS[key]
        if field in ("weight", "gpu_limit"):
            if not value.isdigit():
                raise UsageError(f"--node-pool {text!r}: {key} is not a number", f"{key}=10")
            pool[field] = int(value)
        else:
            pool[field] = value
    return pool


@app.command(
    "set",
    epilog=examples(
        "hyperpilot features set --training-operator --wait",
        "hyperpilot features set --hami --dry-run",
        "hyperpilot features set --observability --dry-run",
        "hyperpilot features set --tiered-checkpointing --checkpoint-memory-percentage 20 --dry-run",
        "hyperpilot features set --no-autoscaling -c llm-training --wait",
        "hyperpilot features set --autoscaling --node-pool gpus=gpu+spot,weight=50,gpu-limit=64 "
        "--node-pool cpus=cpu,consolidation=WhenEmptyOrUnderutilized,after=30s --dry-run",
    ),
)
def set_(
    cluster: Cluster = None,
    training_operator: Annotated[
        bool | None,
        ContractOption(
            FeaturesChange,
            "training_operator",
            "--training-operator/--no-training-operator",
            show_default=False,
        ),
    ] = None,
    inference_operator: Annotated[
        bool | None,
        ContractOption(
            FeaturesChange,
            "inference_operator",
            "--inference-operator/--no-inference-operator",
            show_default=False,
        ),
    ] = None,
    spaces: Annotated[
        bool | None,
        ContractOption(FeaturesChange, "spaces", "--spaces/--no-spaces", show_default=False),
    ] = None,
    hami: Annotated[
        bool | None,
        ContractOption(FeaturesChange, "hami", "--hami/--no-hami", show_default=False),
    ] = None,
    observability: Annotated[
        bool | None,
        ContractOption(
            FeaturesChange,
            "observability",
            "--observability/--no-observability",
            show_default=False,
        ),
    ] = None,
    container_insights: Annotated[
        bool | None,
        ContractOption(
            FeaturesChange,
            "container_insights",
            "--container-insights/--no-container-insights",
            show_default=False,
        ),
    ] = None,
    tiered_checkpointing: Annotated[
        bool | None,
        ContractOption(
            TieredCheckpointingChange,
            "enabled",
            "--tiered-checkpointing/--no-tiered-checkpointing",
            show_default=False,
        ),
    ] = None,
    checkpoint_memory_percentage: Annotated[
        int | None,
        ContractOption(
            TieredCheckpointingChange, "memory_percentage", "--checkpoint-memory-percentage"
        ),
    ] = None,
    autoscaling: Annotated[
        bool | None,
        ContractOption(
            AutoscalingChange, "enabled", "--autoscaling/--no-autoscaling", show_default=False
        ),
    ] = None,
    node_pool: Annotated[
        list[str] | None,
        typer.Option(
            "--node-pool",
            help="autoscaling: a Karpenter NodePool, NAME=GROUP[+GROUP...] with optional"
            " ,weight=N ,gpu-limit=N ,consolidation=WhenEmpty|WhenEmptyOrUnderutilized"
            " ,after=5m (repeatable; the whole list; needs --autoscaling)",
        ),
    ] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Enable or disable managed features: only the flags given are sent."""
    body: dict[str, Any] = {}
    if training_operator is not None:
        body["training_operator"] = training_operator
    if inference_operator is not None:
        body["inference_operator"] = inference_operator
    if spaces is not None:
        body["spaces"] = spaces
    if hami is not None:
        body["hami"] = hami
    if observability is not None:
        body["observability"] = observability
    if container_insights is not None:
        body["container_insights"] = container_insights
    tiered: dict[str, Any] = {}
    if tiered_checkpointing is not None:
        tiered["enabled"] = tiered_checkpointing
    if checkpoint_memory_percentage is not None:
        tiered["memory_percentage"] = checkpoint_memory_percentage
    if tiered:
        body["tiered_checkpointing"] = tiered
    if node_pool and autoscaling is None:
        raise UsageError("--node-pool needs --autoscaling", "add --autoscaling")
    if autoscaling is not None:
        body["autoscaling"] = {"enabled": autoscaling}
        if node_pool:
            body["autoscaling"]["node_pools"] = [parse_pool(p) for p in node_pool]
    if not body:
        raise UsageError(
            "nothing to change", "give at least one feature flag, e.g. --training-operator"
        )
    checked(FeaturesChange, body)
    with client() as api:
        path = _path(active_cluster(api, cluster))
        mutate(api, "PATCH", path, body, output=fmt(output), wait=wait, dry_run=dry_run)
