"""The UpdateFeatures workflow: one stage per feature, each running its steps up to the first
wait, then reading and deciding again."""

from __future__ import annotations

from typing import Any, Protocol

from cluster_svc.domain.features.actual import Actual
from cluster_svc.domain.features.objects import FEATURES, Names
from cluster_svc.domain.features.plan import diff
from cluster_svc.domain.features.steps import (
    Apply,
    Call,
    Remove,
    Step,
    Wait,
    feature_steps,
    until_wait,
)
from shared.contracts.events import Event
from shared.contracts.features import FeaturesUpdated, UpdateFeatures
from shared.stages import Done, Outcome, Pending, Stage, StageContext, Submitted, Workflow


class FeaturePort(Protocol):
    """Reads of actual state and the execution of single steps (adapters/features.py)."""

    async def names(self, command: UpdateFeatures) -> Names: ...

    async def observe(self, names: Names) -> Actual: ...

    async def execute(self, names: Names, step: Call | Apply | Remove) -> None: ...


async def advance(
    port: FeaturePort, command: UpdateFeatures, feature: str
) -> tuple[Actual, list[Step], list[Step], Wait | None]:
    """Read, decide, and run the steps before the first wait: one level-triggered pass."""
    names = await port.names(command)
    actual = await port.observe(names)
    steps = feature_steps(names, actual, command.changes, feature)
    now, wait = until_wait(steps)
    for step in now:
        assert not isinstance(step, Wait)
        await port.execute(names, step)
    return actual, steps, now, wait


def feature_stage(port: FeaturePort, feature: str, needs: tuple[str, ...] = ()) -> Stage:
    async def run(ctx: StageContext[UpdateFeatures]) -> Done | Submitted:
        command = ctx.cmd
        actual, steps, now, wait = await advance(port, command, feature)
        found = {k: v.model_dump(mode="json") for k, v in diff(actual, command.changes).items()}
        changed = {k: v for k, v in found.items() if k.split(".")[0] == feature}
        if not steps:
            return Done({"diff": changed}, noop=True)
        return Submitted(
            f"{command.cluster}/features/{feature}",
            {"diff": changed, "steps": [_label(s) for s in now], "waiting": _reason(wait)},
        )

    async def poll(ctx: StageContext[UpdateFeatures]) -> Done | Pending:
        _, steps, now, wait = await advance(port, ctx.cmd, feature)
        if not steps:
            return Done()
        done = ", ".join(_label(s) for s in now)
        return Pending("; ".join(p for p in (done, _reason(wait)) if p) or "applying")

    return Stage(feature, TITLES[feature], run, poll, needs=needs)


TITLES = {
    "training_operator": "Training operator (cert-manager first)",
    "inference_operator": "Inference operator (cert-manager first)",
    "tiered_checkpointing": "Managed tiered checkpointing and its identity chain",
    "autoscaling": "Managed autoscaling (Karpenter) over the instance groups",
    "observability": "HyperPod observability: Prometheus and Grafana workspaces, then the add-on",
    "container_insights": "Container Insights (CloudWatch observability add-on)",
    "spaces": "SageMaker Spaces add-on (cert-manager first)",
    "hami": "HAMi GPU sharing: scheduler and device plugin, then its webhook",
}


def _label(step: Step) -> str:
    if isinstance(step, Call):
        return f"{step.service}:{step.operation}"
    if isinstance(step, Apply):
        return f"apply {step.obj['kind']} {step.obj['metadata']['name']}"
    if isinstance(step, Remove):
        return f"delete {step.ref[1]} {step.ref[2]}"
    return f"wait: {step.reason}"


def _reason(wait: Wait | None) -> str | None:
    return f"waiting until {wait.reason}" if wait is not None else None


def update_features_workflow(port: FeaturePort) -> Workflow[Any]:
    """One stage per feature; the two that update the HyperPod cluster run one after the other
    (HyperPod takes one update at a time)."""
    return Workflow(
        kind=UpdateFeatures.kind(),
        domain=UpdateFeatures.domain,
        command=UpdateFeatures,
        stages=(
            feature_stage(port, "training_operator"),
            feature_stage(port, "inference_operator"),
            feature_stage(port, "tiered_checkpointing"),
            feature_stage(port, "autoscaling", needs=("tiered_checkpointing",)),
            feature_stage(port, "spaces", needs=("training_operator",)),
            feature_stage(port, "observability"),
            feature_stage(port, "container_insights"),
            feature_stage(port, "hami"),
        ),
        on_finish=features_updated,
    )


async def features_updated(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    command = UpdateFeatures.from_payload(outcome.command)
    changed: dict[str, Any] = {}
    for feature in FEATURES:
        changed.update((outcome.outputs.get(feature) or {}).get("diff") or {})
    return [FeaturesUpdated(cluster=command.cluster, changed=changed)]
