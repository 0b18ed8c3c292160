"""`hyperpilot teams`: task governance of a cluster (the add-on and its scheduler config:
priority classes, fair share, idle resource sharing) and its teams (compute quotas); and
`hyperpilot jobs why-pending JOB`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.text import Text

from hyperpilot.client import UsageError
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
    checked,
    client,
    confirm,
    examples,
    fmt,
    listed_in,
    mutate,
)
from hyperpilot.commands.jobs import Job
from hyperpilot.commands.jobs import app as jobs_app
from hyperpilot.output import Column, details, emit, table
from shared.boundary import api_path
from shared.contracts.governance import (
    NewTeam,
    TaskGovernanceChange,
    TeamChange,
)

app = Area("teams", "Task governance: teams (compute quotas), priority classes, fair share.")

Team = Annotated[str, typer.Argument(help="Team name", show_default=False)]


class SharingChoice(StrEnum):
    LEND = "Lend"
    DONT_LEND = "DontLend"
    LEND_AND_BORROW = "LendAndBorrow"


class PreemptChoice(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


Quota = Annotated[
    list[str] | None,
    typer.Option(
        "--instances",
        help="TYPE=N whole instances of an instance type (repeatable), e.g. ml.p5.48xlarge=1",
    ),
]
Gpus = Annotated[
    list[str] | None,
    typer.Option(
        "--gpus", help="TYPE=N accelerators of an instance type (repeatable), e.g. ml.p5.48xlarge=8"
    ),
]
Sharing = Annotated[SharingChoice | None, ContractOption(TeamChange, "sharing", "--sharing")]
BorrowLimit = Annotated[int | None, ContractOption(TeamChange, "borrow_limit", "--borrow-limit")]
Preempt = Annotated[PreemptChoice | None, ContractOption(TeamChange, "preempt", "--preempt")]
Weight = Annotated[
    int | None, ContractOption(TeamChange, "fair_share_weight", "--fair-share-weight")
]
Active = Annotated[
    bool | None,
    ContractOption(TeamChange, "active", "--active/--inactive", show_default=False),
]

TEAMS = [
    Column("TEAM", "name"),
    Column("NAMESPACE", "namespace"),
    Column(
        "QUOTA",
        lambda t: ", ".join(
            f"{r['instance_type']}={r['count']}"
            if "count" in r
            else f"{r['instance_type']} {r.get('accelerators', '?')} GPUs"
            for r in t.get("resources") or []
        ),
        wrap=True,
    ),
    Column("SHARING", "sharing"),
    Column("BORROW %", "borrow_limit"),
    Column("PREEMPT", "preempt"),
    Column("WEIGHT", "fair_share_weight"),
    Column("ACTIVE", "active"),
    Column("STATUS", "status"),
]


def _path(cluster: str, *rest: str) -> str:
    return api_path("clusters", cluster, "teams", *rest)


def _render(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return str(answer)
    governance = answer.get("task_governance") or {}
    classes = ", ".join(
        f"{p['name']}={p['weight']}" for p in governance.get("priority_classes") or []
    )
    head = (
        f"task governance: {'on' if governance.get('enabled') else 'off'} (add-on"
        f" {governance.get('addon_status') or 'absent'}); priority classes: {classes or 'none'};"
        f" fair share {governance.get('fair_share')}; idle resource sharing"
        f" {governance.get('idle_resource_sharing')}"
    )
    teams = answer.get("teams") or []
    return Group(Text(head), table(teams, TEAMS) if teams else Text("no teams"))


def _amounts(values: list[str] | None, flag: str, key: str) -> list[dict[str, Any]]:
    out = []
    for value in values or []:
        kind, sep, amount = value.partition("=")
        if not sep or not amount.isdigit():
            raise UsageError(f"{flag} {value!r} is not TYPE=N", f"use e.g. {flag} ml.p5.48xlarge=1")
        out.append({"instance_type": kind, key: int(amount)})
    return out


def _settings(
    instances: list[str] | None,
    gpus: list[str] | None,
    sharing: SharingChoice | None,
    borrow_limit: int | None,
    preempt: PreemptChoice | None,
    weight: int | None,
    active: bool | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    resources = _amounts(instances, "--instances", "count") + _amounts(
        gpus, "--gpus", "accelerators"
    )
    if resources:
        body["resources"] = resources
    for key, value in (
        ("sharing", sharing.value if sharing else None),
        ("borrow_limit", borrow_limit),
        ("preempt", preempt.value if preempt else None),
        ("fair_share_weight", weight),
        ("active", active),
    ):
        if value is not None:
            body[key] = value
    return body


@app.command("list", epilog=examples("hyperpilot teams list", "hyperpilot teams list -o yaml"))
def list_(
    cluster: Cluster = None,
    limit: Limit = None,
    page_token: PageToken = None,
    output: Output = None,
) -> None:
    """Task governance (add-on, priority classes) and every team's quota, read live; teams by
    name."""
    with client() as api:
        answer = listed_in(api, _path(active_cluster(api, cluster)), "teams", limit, page_token)
    emit(answer, fmt(output), _render)


@app.command(
    epilog=examples(
        "hyperpilot teams create team-a --instances ml.p5.48xlarge=1 --sharing LendAndBorrow",
        "hyperpilot teams create team-b --gpus ml.p5.48xlarge=8 --sharing Lend --dry-run",
    )
)
def create(
    team: Team,
    cluster: Cluster = None,
    instances: Quota = None,
    gpus: Gpus = None,
    sharing: Sharing = None,
    borrow_limit: BorrowLimit = None,
    preempt: Preempt = None,
    fair_share_weight: Weight = None,
    active: Active = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Create a team: its compute quota; its jobs go to namespace hyperpod-ns-TEAM (admin)."""
    body = {
        "name": team,
        **_settings(instances, gpus, sharing, borrow_limit, preempt, fair_share_weight, active),
    }
    if "resources" not in body:
        raise UsageError("a team needs a quota", "give --instances TYPE=N or --gpus TYPE=N")
    checked(NewTeam, body)
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


@app.command(
    epilog=examples(
        "hyperpilot teams update team-b --sharing Lend --wait",
        "hyperpilot teams update team-a --gpus ml.p5.48xlarge=16 --dry-run",
    )
)
def update(
    team: Team,
    cluster: Cluster = None,
    instances: Quota = None,
    gpus: Gpus = None,
    sharing: Sharing = None,
    borrow_limit: BorrowLimit = None,
    preempt: Preempt = None,
    fair_share_weight: Weight = None,
    active: Active = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Change a team: only the options given are sent (admin)."""
    body = _settings(instances, gpus, sharing, borrow_limit, preempt, fair_share_weight, active)
    if not body:
        raise UsageError("nothing to change", "give at least one option, e.g. --sharing Lend")
    checked(TeamChange, body)
    with client() as api:
        path = _path(active_cluster(api, cluster), team)
        mutate(api, "PATCH", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(epilog=examples("hyperpilot teams delete team-a --yes --wait"))
def delete(
    team: Team,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Delete a team's compute quota (admin)."""
    with client() as api:
        name = active_cluster(api, cluster)
        if not dry_run:
            confirm(f"Delete team {team} of cluster {name}?", yes)
        mutate(
            api, "DELETE", _path(name, team), None, output=fmt(output), wait=wait, dry_run=dry_run
        )


@app.command(
    epilog=examples(
        "hyperpilot teams policy --enable --wait",
        "hyperpilot teams policy --priority-class inference=100 --priority-class training=50",
        "hyperpilot teams policy --disable --dry-run",
    )
)
def policy(
    cluster: Cluster = None,
    enable: Annotated[
        bool | None,
        ContractOption(TaskGovernanceChange, "enabled", "--enable/--disable", show_default=False),
    ] = None,
    priority_class: Annotated[
        list[str] | None,
        typer.Option("--priority-class", help="NAME=WEIGHT (repeatable): the whole list"),
    ] = None,
    fair_share: Annotated[
        bool | None,
        ContractOption(
            TaskGovernanceChange, "fair_share", "--fair-share/--no-fair-share", show_default=False
        ),
    ] = None,
    idle_sharing: Annotated[
        bool | None,
        ContractOption(
            TaskGovernanceChange,
            "idle_resource_sharing",
            "--idle-sharing/--no-idle-sharing",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Enable or disable task governance, or change its scheduler config (admin)."""
    body: dict[str, Any] = {}
    if enable is not None:
        body["enabled"] = enable
    if priority_class:
        classes = []
        for value in priority_class:
            name, sep, weight = value.partition("=")
            if not sep or not weight.isdigit():
                raise UsageError(
                    f"--priority-class {value!r} is not NAME=WEIGHT",
                    "use e.g. --priority-class training=50",
                )
            classes.append({"name": name, "weight": int(weight)})
        body["priority_classes"] = classes
    if fair_share is not None:
        body["fair_share"] = fair_share
    if idle_sharing is not None:
        body["idle_resource_sharing"] = idle_sharing
    if not body:
        raise UsageError("nothing to change", "give --enable, --priority-class, --fair-share, ...")
    checked(TaskGovernanceChange, body)
    with client() as api:
        path = api_path("clusters", active_cluster(api, cluster), "task-governance")
        mutate(api, "PATCH", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


def _why(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return str(answer)
    lines = [str(answer.get("summary"))]
    lines += [f"  fix: {f}" for f in answer.get("fixes") or []]
    events = (answer.get("facts") or {}).get("events") or []
    lines += [f"  event {e.get('object')}: {e.get('reason')}: {e.get('message')}" for e in events]
    return Group(
        Text("\n".join(lines)),
        details({"reason": answer.get("reason"), "pending": answer.get("pending")}),
    )


@jobs_app.command(
    "why-pending",
    epilog=examples(
        "hyperpilot jobs why-pending llama-sft", "hyperpilot jobs why-pending big -o yaml"
    ),
)
def why_pending(job: Job, cluster: Cluster = None, output: Output = None) -> None:
    """Why the job waits: Kueue's admission, the team's quota and borrowing, free GPUs per
    node, node health and events, with the fixes."""
    with client() as api:
        answer = api.get(api_path("clusters", active_cluster(api, cluster), "jobs", job, "pending"))
    emit(answer, fmt(output), _why)
