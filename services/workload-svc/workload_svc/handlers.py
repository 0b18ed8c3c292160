"""The command -> handler table of workload-svc."""

from __future__ import annotations

from typing import Any

from shared.consumer import Handler
from shared.contracts.envelope import Envelope
from shared.stages import Delivery, StageEngine, Workflow


def run_workflow(engine: StageEngine, workflow: Workflow[Any]) -> Handler:
    async def handle(envelope: Envelope, delivery: Delivery) -> None:
        await engine.run(workflow, envelope.correlation_id, envelope.payload, delivery)

    return handle


def build_handlers(engine: StageEngine, workflows: dict[str, Workflow[Any]]) -> dict[str, Handler]:
    return {command: run_workflow(engine, wf) for command, wf in workflows.items()}
