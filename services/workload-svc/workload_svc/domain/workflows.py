"""The job operations: submit (and model download), cancel, delete.

Each mutation first reads actual state and decides with the same pure function the dry run
uses; where requested already equals actual, the stage ends `noop` with no call made.

A submit runs check -> secrets -> apply: `secrets` copies each Secrets Manager secret the job's
`secret_env` names into its Kubernetes Secret (`secret_refs`) before the custom resource that
reads it is applied. The value goes from Secrets Manager to the Kubernetes API and nowhere else:
the stage's outputs name the Secret and the ARN only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from shared.contracts.plan import Plan
from shared.contracts.workloads import (
    NAMESPACE,
    TERMINAL_STATUSES,
    CancelJob,
    DeleteJob,
    DownloadModel,
    JobSpec,
    ModelDownloadSpec,
    SubmitJob,
)
from shared.errors import PermanentError, StageError
from shared.stages import Done, Stage, StageContext, Workflow
from workload_svc.domain.mlflow_access import (
    access_policy,
    role_name,
    service_account,
    service_account_name,
    tracking_server,
    trust_policy,
)
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
        elastic: bool = False,
        namespace: str = NAMESPACE,
        team: str | None = None,
        priority: str | None = None,
    ) -> ClusterFacts: ...

    async def apply(self, cluster: str, obj: KubeObject) -> None: ...

    async def put_secret(
        self,
        cluster: str,
        name: str,
        data: dict[str, str],
        annotations: dict[str, str],
        namespace: str = NAMESPACE,
    ) -> None: ...

    async def delete(
        self, cluster: str, api_version: str, kind: str, name: str, namespace: str = NAMESPACE
    ) -> bool: ...

    async def recorded(self, cluster: str, name: str) -> dict[str, Any] | None: ...


class MlflowIdentity(Protocol):
    """IAM and EKS for a job's tracking-server role (adapters.mlflow.MlflowIdentity)."""

    async def issuer(self, eks_cluster: str) -> str | None: ...

    async def ensure_role(
        self, name: str, trust: dict[str, Any], policy: dict[str, Any], cluster: str
    ) -> str: ...


class SecretValues(Protocol):
    """Secrets Manager (adapters.secretsmanager): a secret's current string by its ARN."""

    async def value(self, arn: str) -> str: ...


Job = SubmitJob | DownloadModel  # the commands the submit workflow runs


def rendered_of(command: Job) -> tuple[str, Rendered, JobSpec | ModelDownloadSpec]:
    """(recipe, rendered object, typed spec) of a submit or download command."""
    if isinstance(command, DownloadModel):
        return "model-download", download_job(command.spec), command.spec
    return command.spec.recipe, render(command.spec), command.spec


async def plan_of(workloads: Workloads, command: Job) -> Plan:
    cluster = command.cluster
    if isinstance(command, DownloadModel):
        download = download_job(command.spec)
        facts = await workloads.facts(
            cluster,
            download.api_version,
            download.kind,
            command.spec.name,
            command.spec.instance_group,
        )
        return plan_download(cluster, command.spec, facts)
    rendered = render(command.spec)
    facts = await workloads.facts(
        cluster,
        rendered.api_version,
        rendered.kind,
        command.spec.name,
        command.spec.instance_group,
        secrets=sorted(kube_secrets(command.spec)),
        elastic=command.spec.elastic is not None,
        namespace=command.spec.namespace(),
        team=command.spec.team,
        priority=command.spec.priority,
    )
    return plan_submit(cluster, command.spec, facts)


def submit_workflow(
    workloads: Workloads,
    kind: str,
    secret_values: SecretValues | None = None,
    mlflow: MlflowIdentity | None = None,
    eks_name: Callable[[str], Awaitable[str]] | None = None,
) -> Workflow[Job]:
    async def check(ctx: StageContext[Job]) -> Done:
        plan = await plan_of(workloads, ctx.cmd)
        return Done({"plan": plan.model_dump(mode="json")}, noop=plan.noop)

    async def sync_secrets(ctx: StageContext[Job]) -> Done:
        """Secrets Manager -> Kubernetes Secret, for every ARN in secret_env. Runs again on a
        retry (the value may have been fixed or rotated since): a write replaces the Secret."""
        plan = Plan.model_validate(ctx.output("check", "plan"))
        wanted = [] if plan.noop or isinstance(ctx.cmd, DownloadModel) else synced(ctx.cmd.spec)
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
                ctx.cmd.cluster,
                item.secret,
                {SYNCED_KEY: value},
                annotations,
                ctx.cmd.spec.namespace() if isinstance(ctx.cmd, SubmitJob) else NAMESPACE,
            )
            written.append({"env": item.env, "secret": item.secret, "arn": item.arn})
        return Done({"secrets": written})

    async def mlflow_access(ctx: StageContext[Job]) -> Done:
        """The IRSA role (trusted for the job's service account, sagemaker-mlflow:* on the
        server) and the annotated service account its pods run as; read first, so a retry or a
        second job of the same server changes nothing that is already right."""
        plan = Plan.model_validate(ctx.output("check", "plan"))
        spec = ctx.cmd.spec
        server = (
            None
            if isinstance(spec, ModelDownloadSpec)
            else tracking_server(spec.mlflow_tracking_uri)
        )
        if plan.noop or server is None or isinstance(spec, ModelDownloadSpec):
            return Done({"mlflow": None}, noop=True)
        if mlflow is None or eks_name is None:
            raise PermanentError(
                "MlflowAccessUnavailable",
                "mlflow_tracking_uri: this workload-svc has no IAM access to grant the job's"
                " pods a role on the tracking server",
                "run workload-svc with AWS credentials allowed iam:CreateRole and iam:PutRolePolicy",
            )
        cluster = ctx.cmd.cluster
        issuer = await mlflow.issuer(await eks_name(cluster))
        if issuer is None:
            raise PermanentError(
                "NoOidcIssuer",
                f"mlflow_tracking_uri: the EKS cluster of {cluster} reports no OIDC issuer, so its"
                " pods cannot assume a role (IRSA)",
                "enable the cluster's OIDC issuer and register it with IAM, then retry",
            )
        namespace = spec.namespace()
        account = service_account_name(server)
        role = role_name(cluster, server)
        role_arn = await mlflow.ensure_role(
            role, trust_policy(server, issuer, namespace, account), access_policy(server), cluster
        )
        await workloads.apply(cluster, service_account(namespace, account, role_arn))
        return Done({"mlflow": {"role_arn": role_arn, "service_account": f"{namespace}/{account}"}})

    async def apply(ctx: StageContext[Job]) -> Done:
        plan = Plan.model_validate(ctx.output("check", "plan"))
        if plan.noop:
            return Done({"applied": False}, noop=True)
        _, rendered, _ = rendered_of(ctx.cmd)
        await workloads.apply(ctx.cmd.cluster, rendered.body)
        return Done(
            {"applied": True, "kind": rendered.kind, "name": rendered.body["metadata"]["name"]}
        )

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
        stages.append(
            Stage(
                "mlflow_access",
                "Grant the job's pods a role on its MLflow tracking server (IRSA)",
                mlflow_access,
                needs=("check",),
            )
        )
    needs = tuple(stage.name for stage in stages)
    stages.append(Stage("apply", "Create the job's custom resource", apply, needs=needs))
    return Workflow(
        kind=kind,
        domain="workload",
        stages=tuple(stages),
        command=DownloadModel if kind == DownloadModel.kind() else SubmitJob,
    )


def _job_missing(cluster: str, name: str) -> PermanentError:
    return PermanentError(
        "JobNotFound",
        f"job {name} is not known on cluster {cluster}",
        "GET /api/v1/clusters/{name}/jobs lists the jobs",
    )


def cancel_workflow(workloads: Workloads) -> Workflow[CancelJob]:
    """Stop a job: its custom resource (and so its pods) goes; the record stays, cancelled."""

    async def stop(ctx: StageContext[CancelJob]) -> Done:
        command = ctx.cmd
        job = await workloads.recorded(command.cluster, command.name)
        if job is None:
            raise _job_missing(command.cluster, command.name)
        if job["status"] in TERMINAL_STATUSES:
            return Done({"status": job["status"]}, noop=True)
        deleted = await workloads.delete(
            command.cluster,
            job["api_version"],
            job["kind"],
            command.name,
            job.get("namespace") or NAMESPACE,
        )
        return Done({"deleted": deleted})

    return Workflow(
        kind=CancelJob.kind(),
        domain="workload",
        stages=(Stage("stop", "Stop the job's pods", stop),),
        command=CancelJob,
    )


def delete_workflow(workloads: Workloads) -> Workflow[DeleteJob]:
    """Remove a job: its custom resource if still there, then its record."""

    async def remove(ctx: StageContext[DeleteJob]) -> Done:
        command = ctx.cmd
        job = await workloads.recorded(command.cluster, command.name)
        if job is None:
            return Done({"deleted": False}, noop=True)
        deleted = await workloads.delete(
            command.cluster,
            job["api_version"],
            job["kind"],
            command.name,
            job.get("namespace") or NAMESPACE,
        )
        return Done({"deleted": deleted})

    return Workflow(
        kind=DeleteJob.kind(),
        domain="workload",
        stages=(Stage("remove", "Delete the job's custom resource", remove),),
        command=DeleteJob,
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
