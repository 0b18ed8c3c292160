"""The workflows of task governance and teams: one stage each, running its steps up to the first
wait, then reading and deciding again (a redelivered command repeats nothing done)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from cluster_svc.domain.features.steps import Apply, Call, Remove, Step, Wait, until_wait
from cluster_svc.domain.governance.actual import GovernanceActual
from cluster_svc.domain.governance.steps import (
    create_team_steps,
    delete_team_steps,
    governance_diff,
    governance_steps,
    team_diff,
    update_team_steps,
)
from shared.contracts.events import Event
from shared.contracts.governance import (
    CreateTeam,
    DeleteTeam,
    GovernanceTarget,
    TaskGovernanceUpdated,
    TeamCreated,
    TeamDeleted,
    TeamUpdated,
    UpdateTaskGovernance,
    UpdateTeam,
)
from shared.stages import Done, Outcome, Pending, Stage, StageContext, Submitted, Workflow


class GovernancePort(Protocol):
    async def observe(self, target: GovernanceTarget) -> GovernanceActual: ...

    async def execute(self, target: GovernanceTarget, step: Call | Apply | Remove) -> Any: ...


Decide = Callable[[Any, GovernanceActual], list[Step]]


def _label(step: Step) -> str:
    if isinstance(step, Call):
        return f"{step.service}:{step.operation}"
    if isinstance(step, Wait):
        return f"wait: {step.reason}"
    if isinstance(step, Apply):
        return f"apply {step.obj['kind']} {step.obj['metadata']['name']}"
    return f"delete {step.ref[1]} {step.ref[2]}"


async def advance(
    port: GovernancePort, command: Any, decide: Decide
) -> tuple[GovernanceActual, list[Step], list[Step], Wait | None, dict[str, Any]]:
    actual = await port.observe(command.target)
    steps = decide(command, actual)
    now, wait = until_wait(steps)
    answers: dict[str, Any] = {}
    for step in now:
        assert not isinstance(step, Wait)
        answer = await port.execute(command.target, step)
        if isinstance(answer, dict):
            answers.update({k: v for k, v in answer.items() if k.endswith("Id")})
    return actual, steps, now, wait, answers


def stage(
    port: GovernancePort,
    name: str,
    title: str,
    decide: Decide,
    diff: Callable[[Any, GovernanceActual], dict[str, Any]],
) -> Stage:
    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        actual, steps, now, wait, answers = await advance(port, ctx.cmd, decide)
        changed = {k: v.model_dump(mode="json") for k, v in diff(ctx.cmd, actual).items()}
        if not steps:
            return Done({"diff": changed}, noop=True)
        return Submitted(
            f"{ctx.cmd.target.cluster}/{name}",
            {
                "diff": changed,
                "steps": [_label(s) for s in now],
                "waiting": wait.reason if wait else None,
                **answers,
            },
        )

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        _, steps, now, wait, _ = await advance(port, ctx.cmd, decide)
        if not steps:
            return Done()
        done = ", ".join(_label(s) for s in now)
        return Pending(
            "; ".join(p for p in (done, f"waiting until {wait.reason}" if wait else "") if p)
            or "applying"
        )

    return Stage(name, title, run, poll)


def _outputs(outcome: Outcome, name: str) -> dict[str, Any]:
    return dict(outcome.outputs.get(name) or {})


def workflows(port: GovernancePort) -> dict[str, Workflow[Any]]:
    async def governance_done(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
        if outcome.status != "succeeded":
            return []
        command = UpdateTaskGovernance.from_payload(outcome.command)
        changed = _outputs(outcome, "task_governance").get("diff") or {}
        return [TaskGovernanceUpdated(cluster=command.target.cluster, changed=changed)]

    async def created(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
        if outcome.status != "succeeded":
            return []
        command = CreateTeam.from_payload(outcome.command)
        quota = _outputs(outcome, "compute_quota").get("ComputeQuotaId")
        return [
            TeamCreated(
                cluster=command.target.cluster, team=command.team.name, compute_quota_id=quota
            )
        ]

    async def updated(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
        if outcome.status != "succeeded":
            return []
        command = UpdateTeam.from_payload(outcome.command)
        changed = _outputs(outcome, "compute_quota").get("diff") or {}
        return [TeamUpdated(cluster=command.target.cluster, team=command.team, changed=changed)]

    async def deleted(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
        if outcome.status != "succeeded":
            return []
        command = DeleteTeam.from_payload(outcome.command)
        return [TeamDeleted(cluster=command.target.cluster, team=command.team)]

    def one(
        command: type[Any], name: str, title: str, decide: Decide, diff: Any, finish: Any
    ) -> Workflow[Any]:
        return Workflow(
            kind=command.kind(),
            domain=command.domain,
            command=command,
            stages=(stage(port, name, title, decide, diff),),
            on_finish=finish,
        )

    return {
        UpdateTaskGovernance.__name__: one(
            UpdateTaskGovernance,
            "task_governance",
            "Task governance: the EKS add-on, then the cluster's scheduler config",
            lambda c, a: governance_steps(a, c.change),
            lambda c, a: governance_diff(a, c.change),
            governance_done,
        ),
        CreateTeam.__name__: one(
            CreateTeam,
            "compute_quota",
            "The team's compute quota (CreateComputeQuota)",
            lambda c, a: create_team_steps(a, c.team),
            lambda c, a: team_diff(a, c.team.name, c.team),
            created,
        ),
        UpdateTeam.__name__: one(
            UpdateTeam,
            "compute_quota",
            "The team's compute quota (UpdateComputeQuota at its current version)",
            lambda c, a: update_team_steps(a, c.team, c.change),
            lambda c, a: team_diff(a, c.team, c.change),
            updated,
        ),
        DeleteTeam.__name__: one(
            DeleteTeam,
            "compute_quota",
            "Delete the team's compute quota",
            lambda c, a: delete_team_steps(a, c.team),
            lambda c, a: team_diff(a, c.team, None),
            deleted,
        ),
    }
