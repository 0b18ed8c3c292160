"""The job operations: submit (and model download), cancel, delete.

Each mutation first reads actual state and decides with the same pure function the dry run
uses; where requested already equals actual, the stage ends `noop` with no call made.

A submit runs check -> secrets -> apply: `secrets` copies each Secrets Manager secret the job's
`secret_env` names into its Kubernetes Secret (`secret_refs`) before the custom resource that
reads it is applied. The value goes from Secrets Manager to the Kubernetes API and nowhere else:
the stage's outputs name the Secret and the ARN only.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import asyncpg

from shared.contracts.events import Event
from shared.contracts.plan import Plan
from shared.contracts.workloads import (
    NAMESPACE,
    TERMINAL_STATUSES,
    CancelJob,
    DeleteJob,
    DownloadModel,
    JobCancelled,
    JobDeleted,
    JobSubmitted,
    SubmitJob,
)
from shared.errors import PermanentError, StageError
from shared.stages import Done, Outcome, Stage, StageContext, Workflow
from workload_svc.domain.plan import ClusterFacts, plan_download, plan_submit
from workload_svc.domain.render import Rendered, download_job, render
from workload_svc.domain.secret_refs import (
    ARN_ANNOTATION,
    JSON_KEY_ANNOTATION,
    SYNCED_KEY,
    kube_secrets,
    pick,
    synced,
)

KubeObject = dict[str, Any]
CANCEL_KINDS = ("HyperPodPyTorchJob", "RayJob", "Job")


class Workloads(Protocol):
    """What the workflows ask of a cluster (access.Clusters + its Kubernetes clients)."""

    async def facts(
        self,
        cluster: str,
        api_version: str,
        kind: str,
        name: str,
        group: str | None,
        secrets: Sequence[str] = (),
    ) -> ClusterFacts: ...

    async def apply(self, cluster: str, obj: KubeObject) -> None: ...

    async def put_secret(
        self, cluster: str, name: str, data: dict[str, str], annotations: dict[str, str]
    ) -> None: ...

    async def delete(self, cluster: str, api_version: str, kind: str, name: str) -> bool: ...

    async def recorded(self, cluster: str, name: str) -> dict[str, Any] | None: ...


class SecretValues(Protocol):
    """Secrets Manager (adapters.secretsmanager): a secret's current string by its ARN."""

    async def value(self, arn: str) -> str: ...


def rendered_of(command: dict[str, Any]) -> tuple[str, Rendered, Any]:
    """(recipe, rendered object, typed spec) of a submit or download command."""
    if "repo_id" in (command.get("spec") or {}):
        download = DownloadModel.from_payload(command)
        return "model-download", download_job(download.spec), download.spec
    submit = SubmitJob.from_payload(command)
    return submit.spec.recipe, render(submit.spec), submit.spec


async def plan_of(workloads: Workloads, command: dict[str, Any]) -> Plan:
    recipe, rendered, spec = rendered_of(command)
    cluster = command["cluster"]
    if recipe == "model-download":
        facts = await workloads.facts(
            cluster, rendered.api_version, rendered.kind, spec.name, spec.instance_group
        )
        return plan_download(cluster, spec, facts)
    facts = await workloads.facts(
        cluster,
        rendered.api_version,
        rendered.kind,
        spec.name,
        spec.instance_group,
        secrets=sorted(kube_secrets(spec)),
    )
    return plan_submit(cluster, spec, facts)


def submit_workflow(
    workloads: Workloads, kind: str, secret_values: SecretValues | None = None
) -> Workflow[Any]:
    async def check(ctx: StageContext[Any]) -> Done:
        plan = await plan_of(workloads, ctx.command)
        return Done({"plan": plan.model_dump(mode="json")}, noop=plan.noop)

    async def sync_secrets(ctx: StageContext[Any]) -> Done:
        """Secrets Manager -> Kubernetes Secret, for every ARN in secret_env. Runs again on a
        retry (the value may have been fixed or rotated since): a write replaces the Secret."""
        plan = Plan.model_validate(ctx.output("check", "plan"))
        _, _, spec = rendered_of(ctx.command)
        wanted = [] if plan.noop else synced(spec)
        if not wanted:
            return Done({"secrets": []}, noop=True)
        if secret_values is None:
            raise PermanentError(
                "SecretsManagerUnavailable",
                f"secret_env.{wanted[0].env}: this workload-svc reads no Secrets Manager",
                "reference a Kubernetes Secret instead (secret and key)",
            )
        written = []
        for item in wanted:
            try:
                value = pick(await secret_values.value(item.arn), item)
            except StageError as exc:
                # The same kind of error (a temporary one is retried), naming the variable.
                raise type(exc)(
                    exc.code, f"secret_env.{item.env}: {exc.message}", exc.hint
                ) from None
            annotations = {ARN_ANNOTATION: item.arn}
            if item.json_key is not None:
                annotations[JSON_KEY_ANNOTATION] = item.json_key
            await workloads.put_secret(
                ctx.command["cluster"], item.secret, {SYNCED_KEY: value}, annotations
            )
            written.append({"env": item.env, "secret": item.secret, "arn": item.arn})
        return Done({"secrets": written})

    async def apply(ctx: StageContext[Any]) -> Done:
        plan = Plan.model_validate(ctx.output("check", "plan"))
        if plan.noop:
            return Done({"applied": False}, noop=True)
        _, rendered, _ = rendered_of(ctx.command)
        await workloads.apply(ctx.command["cluster"], rendered.body)
        return Done(
            {"applied": True, "kind": rendered.kind, "name": rendered.body["metadata"]["name"]}
        )

    async def on_start(
        conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
    ) -> None:
        recipe, rendered, spec = rendered_of(command)
        budget = (spec.run_policy.job_max_retry_count) if hasattr(spec, "run_policy") else 6
        await conn.execute(
            "INSERT INTO jobs (cluster, name, recipe, api_version, kind, namespace, spec, status,"
            " budget, operation_id) VALUES ($1, $2, $3, $4, $5, $6, $7, 'submitting', $8, $9)"
            " ON CONFLICT (cluster, name) DO NOTHING",
            command["cluster"],
            spec.name,
            recipe,
            rendered.api_version,
            rendered.kind,
            NAMESPACE,
            spec.model_dump(mode="json"),
            budget,
            operation_id,
        )

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        recipe, rendered, spec = rendered_of(outcome.command)
        cluster = outcome.command["cluster"]
        if outcome.status in ("succeeded", "noop"):
            await conn.execute(
                "UPDATE jobs SET status = 'pending', updated_at = now()"
                " WHERE cluster = $1 AND name = $2 AND operation_id = $3"
                " AND status = 'submitting'",
                cluster,
                spec.name,
                operation_id,
            )
            if outcome.status == "noop":
                return []
            return [
                JobSubmitted(cluster=cluster, name=spec.name, kind=rendered.kind, recipe=recipe)
            ]
        # Refused or failed before anything ran: the row of this submit goes (a fixed resubmit
        # of the same name starts clean); a row another submit made is left alone.
        await conn.execute(
            "DELETE FROM jobs WHERE cluster = $1 AND name = $2 AND operation_id = $3"
            " AND status = 'submitting'",
            cluster,
            spec.name,
            operation_id,
        )
        return []

    stages = [Stage("check", "Check the job against the cluster's actual state", check)]
    if kind != DownloadModel.kind():  # a model download's token is a Secret it names
        stages.append(
            Stage(
                "secrets",
                "Copy the job's Secrets Manager secrets into Kubernetes Secrets",
                sync_secrets,
                needs=("check",),
            )
        )
    needs = tuple(stage.name for stage in stages)
    stages.append(Stage("apply", "Create the job's custom resource", apply, needs=needs))
    return Workflow(
        kind=kind,
        domain="workload",
        stages=tuple(stages),
        on_start=on_start,
        on_finish=on_finish,
    )


def _job_missing(cluster: str, name: str) -> PermanentError:
    return PermanentError(
        "JobNotFound",
        f"job {name} is not known on cluster {cluster}",
        "GET /api/v1/clusters/{name}/jobs lists the jobs",
    )


def cancel_workflow(workloads: Workloads) -> Workflow[Any]:
    """Stop a job: its custom resource (and so its pods) goes; the record stays, cancelled."""

    async def stop(ctx: StageContext[Any]) -> Done:
        command = CancelJob.from_payload(ctx.command)
        job = await workloads.recorded(command.cluster, command.name)
        if job is None:
            raise _job_missing(command.cluster, command.name)
        if job["status"] in TERMINAL_STATUSES:
            return Done({"status": job["status"]}, noop=True)
        deleted = await workloads.delete(
            command.cluster, job["api_version"], job["kind"], command.name
        )
        return Done({"deleted": deleted})

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        command = CancelJob.from_payload(outcome.command)
        if outcome.status != "succeeded":
            return []
        await conn.execute(
            "UPDATE jobs SET status = 'cancelled', reason = 'Cancelled', updated_at = now()"
            " WHERE cluster = $1 AND name = $2",
            command.cluster,
            command.name,
        )
        return [JobCancelled(cluster=command.cluster, name=command.name)]

    return Workflow(
        kind=CancelJob.kind(),
        domain="workload",
        stages=(Stage("stop", "Stop the job's pods", stop),),
        on_finish=on_finish,
    )


def delete_workflow(workloads: Workloads) -> Workflow[Any]:
    """Remove a job: its custom resource if still there, then its record."""

    async def remove(ctx: StageContext[Any]) -> Done:
        command = DeleteJob.from_payload(ctx.command)
        job = await workloads.recorded(command.cluster, command.name)
        if job is None:
            return Done({"deleted": False}, noop=True)
        deleted = await workloads.delete(
            command.cluster, job["api_version"], job["kind"], command.name
        )
        return Done({"deleted": deleted})

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        command = DeleteJob.from_payload(outcome.command)
        if outcome.status not in ("succeeded", "noop"):
            return []
        removed = await conn.execute(
            "DELETE FROM jobs WHERE cluster = $1 AND name = $2", command.cluster, command.name
        )
        if removed.endswith(" 0"):
            return []
        return [JobDeleted(cluster=command.cluster, name=command.name)]

    return Workflow(
        kind=DeleteJob.kind(),
        domain="workload",
        stages=(Stage("remove", "Delete the job's custom resource", remove),),
        on_finish=on_finish,
    )


__all__ = [
    "CANCEL_KINDS",
    "SecretValues",
    "Workloads",
    "cancel_workflow",
    "delete_workflow",
    "plan_of",
    "rendered_of",
    "submit_workflow",
]
