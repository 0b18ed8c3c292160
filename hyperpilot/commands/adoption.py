"""`hyperpilot clusters inspect-adoption` and `hyperpilot clusters adopt`: bring an EKS cluster
Hyperpilot did not create under its management (read first, then add only what is missing)."""

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
