"""`hyperpilot training-plans`: search offerings, buy one (its fee shown and confirmed first),
and `hyperpilot prices`: the list price table with its source and date."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.commands.common import (
    Area,
    DryRun,
    Output,
    Region,
    Wait,
    Yes,
    accepted,
    client,
    confirm,
    examples,
    fmt,
    mutate,
)
from hyperpilot.output import Column, emit, table

app = Area("training-plans", "Training plans: search offerings and buy one (fee confirmed).")
prices_app = Area("prices", "List prices (AWS Price List API) with their source and date.")

BASE = "/api/v1/training-plans"
COLUMNS = [
    Column("OFFERING", "offering_id"),
    Column("TYPE", "instance_type"),
    Column("COUNT", "instance_count"),
    Column("ZONE", "availability_zone"),
    Column("START", "start_time"),
    Column("HOURS", "duration_hours"),
    Column("FEE (USD)", "upfront_fee"),
]
PRICE_COLUMNS = [Column("INSTANCE TYPE", "instance_type"), Column("USD/H", "price_per_hour")]

InstanceType = Annotated[
    str, typer.Option("--instance-type", help="e.g. ml.p5.48xlarge", show_default=False)
]
Count = Annotated[int, typer.Option("--count", help="1, 2, 4, 8, 16, 32 or 64 instances")]
Days = Annotated[int, typer.Option("--days", help="1 to 182 whole days")]
Target = Annotated[str, typer.Option("--target", help="hyperpod-cluster or training-job")]
StartAfter = Annotated[str | None, typer.Option("--start-after", help="ISO 8601 earliest start")]
EndBefore = Annotated[str | None, typer.Option("--end-before", help="ISO 8601 latest end")]


def _search(
    instance_type: str,
    count: int,
    days: int,
    target: str,
    start: str | None,
    end: str | None,
    region: str | None,
) -> dict[str, Any]:
    """The REST search (its rules are the gateway's); unset bounds are left out."""
    asked = (instance_type, count, days, target, start, end, region)
    keys = ("instance_type", "instance_count", "duration_days", "target", "start_after")
    return {
        k: v for k, v in zip((*keys, "end_before", "region"), asked, strict=True) if v is not None
    }


@app.command(
    epilog=examples(
        "hyperpilot training-plans offerings --instance-type ml.p5.48xlarge --count 2 --days 7"
    )
)
def offerings(
    instance_type: InstanceType,
    count: Count,
    days: Days,
    target: Target = "hyperpod-cluster",
    start_after: StartAfter = None,
    end_before: EndBefore = None,
    region: Region = None,
    output: Output = None,
) -> None:
    """Offerings for an instance type, count and duration, best match first, with their fee."""
    search = _search(instance_type, count, days, target, start_after, end_before, region)
    with client() as api:
        rows = api.get(f"{BASE}/offerings", **search)
        emit(rows, fmt(output), lambda r: table(r, COLUMNS) if r else "(no offerings)")


@app.command(
    epilog=examples(
        "hyperpilot training-plans buy p5-week --offering tpo-... --instance-type ml.p5.48xlarge"
        " --count 2 --days 7",
        "hyperpilot training-plans buy p5-week --offering tpo-... --instance-type ml.p5.48xlarge"
        " --count 2 --days 7 --fee 94977.12 --wait",
    )
)
def buy(
    name: Annotated[str, typer.Argument(help="The new plan's name")],
    offering: Annotated[
        str, typer.Option("--offering", help="The offering id", show_default=False)
    ],
    instance_type: InstanceType,
    count: Count,
    days: Days,
    target: Target = "hyperpod-cluster",
    start_after: StartAfter = None,
    end_before: EndBefore = None,
    region: Region = None,
    fee: Annotated[
        str | None, typer.Option("--fee", help="Confirm this upfront fee (USD) without asking")
    ] = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Buy an offering: the dry run shows its upfront fee, which you confirm (or pass --fee)."""
    body: dict[str, Any] = {
        "name": name,
        "offering_id": offering,
        "search": _search(instance_type, count, days, target, start_after, end_before, region),
    }
    if fee is not None:
        body["confirm_upfront_fee"] = fee
    with client() as api:
        if fee is None:
            plan = api.request("POST", BASE, params={"dry_run": "true"}, json=body)
            shown = _offered_fee(plan)
            if dry_run:
                emit(plan, fmt(output))
                return
            notes = (plan.get("plan") or {}).get("notes") or []
            confirm(f"{notes[0] if notes else 'Buy it'}. Buy it for ${shown} USD?", yes)
            body["confirm_upfront_fee"] = shown
        elif dry_run:
            mutate(api, "POST", BASE, body, output=fmt(output), wait=False, dry_run=True)
            return
        answer = api.request("POST", BASE, json=body)
        accepted(api, answer, fmt(output), wait)


def _offered_fee(answer: dict[str, Any]) -> str:
    """The upfront fee the dry run's plan shows."""
    plan = answer.get("plan") or {}
    requested = ((plan.get("diff") or {}).get("training_plan") or {}).get("requested") or {}
    return str(requested["upfront_fee"])


@prices_app.command(
    "show", epilog=examples("hyperpilot prices show", "hyperpilot prices show -o json")
)
def show(region: Region = None, output: Output = None) -> None:
    """A region's price table: USD per hour of each instance type, its source and date."""
    with client() as api:
        answer = api.get("/api/v1/prices", region=region)

        def render(raw: dict[str, Any]) -> Any:
            source = raw.get("prices") or {}
            return (
                f"{source.get('source')} ({source.get('region')}, {source.get('currency')}, "
                f"published {source.get('as_of')}, read {source.get('fetched_at')})\n"
                f"NAT gateway: ${raw.get('nat_gateway_per_hour')}/h\n"
            ), table(raw.get("instance_types") or [], PRICE_COLUMNS)

        emit(answer, fmt(output), render)
