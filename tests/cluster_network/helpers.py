"""Drive stages the way the engine does (run, then poll until done) without a database, and
build the commands the stages read."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from pydantic import ValidationError

from shared.contracts.cluster import ClusterSpec
from shared.contracts.commands import COMMANDS, Command, CreateCluster, DeleteCluster
from shared.stages import Done, Stage, StageContext, Submitted

REGION = "us-east-1"


def create_command(name: str = "llm", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "availability_zone_id": "use1-az2",
        "instance_groups": [{"name": "workers", "instance_type": "ml.g5.8xlarge", "count": 2}],
        **spec,
    }
    command = CreateCluster(
        spec=ClusterSpec.model_validate(body), region=REGION, bucket=f"hyperpilot-{name}-data"
    )
    return command.model_dump(mode="json")


def delete_command(name: str, resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "region": REGION, "resources": resources}


def parsed(payload: dict[str, Any], *prefer: type[Command]) -> Command:
    """The command a stored payload is, as the engine parses it for the workflow's declared
    type: the first of `prefer` (then of every command) that validates strictly."""
    candidates: list[type[Command]] = [*prefer, CreateCluster, DeleteCluster, *COMMANDS.values()]
    for command in candidates:
        try:
            return command.model_validate(payload)
        except ValidationError:
            continue
    raise ValueError(f"no command validates {sorted(payload)}")


def context(
    stage: str,
    command: dict[str, Any],
    outputs: dict[str, dict[str, Any]] | None = None,
    external_id: str | None = None,
    own: dict[str, Any] | None = None,
    operation_id: uuid.UUID | None = None,
) -> StageContext[Any]:
    async def report(_message: str) -> None:
        return None

    return StageContext(
        operation_id=operation_id or uuid.uuid4(),
        stage=stage,
        command=command,
        outputs=outputs or {},
        external_id=external_id,
        own_outputs=own or {},
        _report=report,
        _parsed=parsed(command),
    )


async def drive(
    stage: Stage,
    command: dict[str, Any],
    outputs: dict[str, dict[str, Any]] | None = None,
    *,
    timeout: float = 15.0,
    interval: float = 0.05,
    operation_id: uuid.UUID | None = None,
) -> Done:
    """run(), then poll() until Done; the outputs merge as the engine merges them. Stages
    driven with one `operation_id` are one operation's (as in one pass of the engine)."""
    result = await stage.run(context(stage.name, command, outputs, operation_id=operation_id))
    if isinstance(result, Done):
        return result
    assert isinstance(result, Submitted)
    assert stage.poll is not None
    own = dict(result.outputs)
    async with asyncio.timeout(timeout):
        while True:
            polled = await stage.poll(
                context(stage.name, command, outputs, result.external_id, own, operation_id)
            )
            if isinstance(polled, Done):
                return Done({**own, **polled.outputs}, polled.noop)
            await asyncio.sleep(interval)


def by_name(stages: list[Stage]) -> dict[str, Stage]:
    return {s.name: s for s in stages}
