"""`hyperpilot clusters inspect-adoption` and `hyperpilot clusters adopt`: bring an EKS cluster
Hyperpilot did not create under its management (read first, then add only what is missing);
`drift`, `refresh`, `accept-drift` and `restore-drift`: keep a cluster's record true."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.commands.clusters import BASE, app, parse_group, parse_pairs
from hyperpilot.commands.common import DryRun, Output, Region, Wait, client, examples, fmt, mutate
from hyperpilot.output import emit

EksName = Annotated[str, typer.Argument(help="The EKS cluster (hyperpilot inspect clusters)")]


def render_inspection(found: dict[str, Any]) -> str:
    cluster = found["cluster"]
    lines = [
        f"EKS cluster {cluster['name']}: Kubernetes {cluster['version']}, {cluster['status']},"
        f" authentication mode {cluster['authentication_mode']}",
        f"VPC {cluster['vpc_id']}, subnets {', '.join(cluster['subnet_ids'])}"
        f" (HyperPod routed through {found.get('private_route_table_id') or 'no NAT route'})",
        "node groups: "
        + (
            ", ".join(
                f"{n['name']} ({n['desired_size']} x {'/'.join(n['instance_types'])})"
                for n in found["nodegroups"]
            )
            or "none"
        ),
        "add-ons: " + (", ".join(f"{a['name']} {a['version']}" for a in found["addons"]) or "none"),
        "access entries: " + (", ".join(found["access_entries"]) or "none"),
        "adoption adds:",
        *[f"  - {m['adds']} ({m['stage']})" for m in found["missing"]],
    ]
    if found["blockers"]:
        lines.append("not adoptable:")
        lines += [f"  - {b['message']}: {b['hint']}" for b in found["blockers"]]
    else:
        lines.append("adoptable: hyperpilot clusters adopt " + cluster["name"] + " --dry-run")
    return "\n".join(lines)


@app.command(
    "inspect-adoption",
    epilog=examples("hyperpilot clusters inspect-adoption team-eks"),
)
def inspect_adoption(
    eks_cluster_name: EksName, region: Region = None, output: Output = None
) -> None:
    """Read an existing EKS cluster for adoption (changes nothing): version, networking, node
    groups, add-ons, access entries, OIDC, what HyperPod still needs, what stops it."""
    params = {"eks_cluster_name": eks_cluster_name, **({"region": region} if region else {})}
    with client() as api:
        found = api.get("/api/v1/inspect/adoption", **params)
    emit(found, fmt(output), render_inspection)


@app.command(
    epilog=examples(
        "hyperpilot clusters adopt team-eks --zone use1-az2"
        " -g name=workers,type=ml.g5.8xlarge,count=2 --dry-run",
        "hyperpilot clusters adopt team-eks --zone use1-az2"
        " -g name=workers,type=ml.g5.8xlarge,count=2 --wait",
    )
)
def adopt(
    eks_cluster_name: EksName,
    zone: Annotated[str, typer.Option(help="Availability Zone id of the HyperPod compute subnet")],
    instance_group: Annotated[
        list[str],
        typer.Option(
            "--instance-group",
            "-g",
            help="name=..,type=ml.*,count=N[,...] as for clusters create (repeat for more)",
        ),
    ],
    bucket: Annotated[
        str | None, typer.Option(help="S3 bucket for the lifecycle script (kept if it exists)")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="KEY=VALUE tag (repeatable)")
    ] = None,
    region: Region = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Adopt an EKS cluster Hyperpilot did not create: access entries, missing dependencies, a
    HyperPod cluster and its instance groups. Deleting it later removes only what was added."""
    body: dict[str, Any] = {
        "eks_cluster_name": eks_cluster_name,
        "availability_zone_id": zone,
        "instance_groups": [parse_group(g) for g in instance_group],
    }
    if bucket is not None:
        body["bucket"] = bucket
    if tag:
        body["tags"] = parse_pairs(tag, "--tag")
    if region is not None:
        body["region"] = region
    with client() as api:
        mutate(api, "POST", f"{BASE}/adopt", body, output=fmt(output), wait=wait, dry_run=dry_run)


# ---- drift ------------------------------------------------------------------------------------

ClusterName = Annotated[str, typer.Argument(help="Cluster name")]


def render_drift(found: dict[str, Any]) -> str:
    if not found["drifted"]:
        return f"{found['cluster']}: no drift (last observed {found.get('observed_at') or 'never'})"
    lines = [f"{found['cluster']}: drifted"]
    lines += [
        f"  {d['field']}: recorded {d['recorded']!r}, actual {d['actual']!r}"
        for d in found["differences"]
    ]
    lines.append(
        "accept the actual values: hyperpilot clusters accept-drift "
        f"{found['cluster']}; restore one: hyperpilot clusters restore-drift {found['cluster']}"
        " --field FIELD --dry-run"
    )
    return "\n".join(lines)


@app.command(epilog=examples("hyperpilot clusters drift llm-training"))
def drift(name: ClusterName, output: Output = None) -> None:
    """Where a cluster's record and its actual state differ, as the drift watcher last saw it."""
    with client() as api:
        found = api.get(f"{BASE}/{name}/drift")
    emit(found, fmt(output), render_drift)


@app.command(epilog=examples("hyperpilot clusters refresh llm-training"))
def refresh(name: ClusterName, output: Output = None) -> None:
    """Re-read a cluster's actual state now (AWS and Kubernetes are only read)."""
    with client() as api:
        found = api.post(f"{BASE}/{name}/refresh")
    emit(found, fmt(output), render_drift)


@app.command(
    "accept-drift",
    epilog=examples(
        "hyperpilot clusters accept-drift llm-training --field instance_groups.gpu.count"
    ),
)
def accept_drift(
    name: ClusterName,
    field: Annotated[
        list[str] | None, typer.Option("--field", help="A drifted field (repeat); all if omitted")
    ] = None,
    output: Output = None,
) -> None:
    """Write the actual values of drifted fields into the record (AWS is not changed)."""
    with client() as api:
        found = api.post(f"{BASE}/{name}/drift/accept", {"fields": field})
    emit(found, fmt(output), render_drift)


@app.command(
    "restore-drift",
    epilog=examples(
        "hyperpilot clusters restore-drift llm-training --field instance_groups.gpu.count"
        " --dry-run",
        "hyperpilot clusters restore-drift llm-training --field components.keda --wait",
    ),
)
def restore_drift(
    name: ClusterName,
    field: Annotated[str, typer.Option("--field", help="The drifted field to restore")],
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Put a drifted field's recorded value back with the operation that sets it."""
    with client() as api:
        mutate(
            api,
            "POST",
            f"{BASE}/{name}/drift/restore",
            {"field": field},
            output=fmt(output),
            wait=wait,
            dry_run=dry_run,
        )
