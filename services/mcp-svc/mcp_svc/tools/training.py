"""Training jobs from recipes (PyTorch, LLaMA-Factory, MS-Swift, VERL), their events and logs,
and model downloads into the shared bucket."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import (
    LOG_BYTES,
    PAGE,
    MaxBytes,
    OperationStarted,
    Paged,
    PageLimit,
    PageToken,
    Passthrough,
    ToolResult,
    fitted,
    page_note,
    rest_page,
    tail_fitted,
)
from mcp_svc.tools.common import (
    ClusterRef,
    DryRun,
    JobName,
    Region,
    RequestId,
    count,
    named,
    submit,
)
from mcp_svc.tools.events import After
from shared.boundary import api_path
from shared.contracts.workloads import (
    JobSpec,
    ModelDownloadSpec,
    TrackingServerSpec,
)


class Job(Passthrough):
    name: str = Field(description="Job name")
    cluster: str | None = Field(None, description="Its cluster")
    recipe: str | None = Field(None, description="pytorch, llama-factory, ms-swift or verl")
    kind: str | None = Field(None, description="HyperPodPyTorchJob or RayJob")
    status: str | None = Field(None, description="e.g. Running, Succeeded, Failed")
    restart_budget: dict[str, Any] | None = Field(None, description="restarts used / allowed")
    faulty_pods: Any = Field(None, description="Pods the operator found faulty")
    pods: Any = Field(None, description="The job's pods")
    reason: str | None = Field(None, description="Why it is in this status")
    message: str | None = Field(None, description="The operator's message")
    operation_id: str | None = Field(None, description="The operation that submitted it")


class TrackingServer(ToolResult):
    server: dict[str, Any] = Field(description="SageMaker's description of the server")


class JobRuns(ToolResult):
    runs: list[dict[str, Any]] = Field(description="MLflow runs, newest first, latest metrics")
    history: dict[str, Any] | None = Field(None, description="run_id, key and points by step")


class JobList(Paged):
    cluster: str = Field(description="The cluster read")
    jobs: list[Job] = Field(description="This page, oldest first")


class JobDescription(ToolResult):
    job: Job = Field(description="The job")


class JobEvent(Passthrough):
    seq: int = Field(description="Position in the event log")
    type: str = Field(description="e.g. JobSubmitted, JobFailed")
    occurred_at: str | None = Field(None, description="ISO 8601")
    payload: dict[str, Any] = Field({}, description="The event's data")


class JobEvents(ToolResult):
    events: list[JobEvent] = Field(description="In commit order")
    next_after: int = Field(description="Pass as `after` to read the next page")
    more: bool = Field(description="True: more follow (the page ends at limit or 16 KB)")


class JobLog(ToolResult):
    pod: str = Field(description="The pod read")
    lines: list[str] = Field(description="The last lines read (at most tail_lines)")
    total_lines: int = Field(description="Lines read from `from_line` on")
    next_line: int | None = Field(None, description="Pass as from_line to read only newer lines")
    truncated: bool = Field(
        description="True: earlier lines left out (tail_lines, max_bytes) or a line cut"
    )


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="training", rest="GET /api/v1/clusters/{name}/jobs")
    async def list_training_jobs(
        cluster: ClusterRef, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> JobList:
        """List a cluster's training jobs with their last observed status and restarts."""
        jobs, next_token, total = await rest_page(
            gateway,
            api_path("clusters", cluster, "jobs"),
            {},
            Job,
            ("jobs", lambda r: (r["created_at"], r["name"])),
            limit,
            page_token,
        )
        note = page_note(len(jobs), total, page_token, next_token)
        summary = f"{cluster}: {count(total, 'job')}{note}" + (
            ": " + named([f"{j.name} ({j.status})" for j in jobs]) if jobs else "."
        )
        return JobList(
            summary=summary, cluster=cluster, jobs=jobs, total=total, next_page_token=next_token
        )

    @server.read_tool(area="training", rest="GET /api/v1/clusters/{name}/jobs/{job}")
    async def get_training_job(
        cluster: ClusterRef,
        job: JobName,
        live: Annotated[bool, Field(description="Also read the resource from the cluster")] = True,
    ) -> JobDescription:
        """A training job: its record, restarts against its budget, faulty pods and pods, and
        (live) the job resource read from the cluster."""
        raw = await gateway.get(api_path("clusters", cluster, "jobs", job), {"live": live})
        found = Job.model_validate(raw)
        reason = f": {found.reason}" if found.reason else ""
        return JobDescription(summary=f"Job {found.name} is {found.status}{reason}.", job=found)

    @server.read_tool(area="training", rest="GET /api/v1/clusters/{name}/jobs/{job}/events")
    async def get_training_job_events(
        cluster: ClusterRef, job: JobName, after: After = 0
    ) -> JobEvents:
        """A training job's events, oldest first (status changes, restarts, faulty pods)."""
        rows = await gateway.get(
            api_path("clusters", cluster, "jobs", job, "events"), {"after": after}
        )
        read = [JobEvent.model_validate(r) for r in rows]
        events = fitted(read)
        last = events[-1].seq if events else after
        more = len(events) < len(read)
        types = ", ".join(e.type for e in events[-5:])
        summary = f"{count(len(events), 'event')} of job {job}" + (
            f"; the latest: {types}" if events else ""
        )
        summary += f"; more: after={last}." if more else "."
        return JobEvents(summary=summary, events=events, next_after=last, more=more)

    @server.read_tool(area="training", rest="GET /api/v1/clusters/{name}/jobs/{job}/logs")
    async def get_training_job_logs(
        cluster: ClusterRef,
        job: JobName,
        pod: Annotated[
            str,
            Field(
                min_length=1,
                max_length=253,
                pattern=r"^[a-z0-9][-a-z0-9.]*$",
                description="One of the job's pods (get_training_job lists them)",
            ),
        ],
        from_line: Annotated[
            int, Field(ge=0, description="Skip the lines already read (a previous next_line)")
        ] = 0,
        tail_lines: Annotated[
            int, Field(ge=1, le=2000, description="Return at most this many of the last lines")
        ] = 200,
        previous: Annotated[
            bool,
            Field(
                description=(
                    "The log before the container's last restart in place (a recreated pod has"
                    " none: read its events)"
                )
            ),
        ] = False,
        max_bytes: MaxBytes = LOG_BYTES,
    ) -> JobLog:
        """One pod's log: the last lines from `from_line` on, and where to continue. Read it for
        the error a job failed with (NCCL, out of memory, a traceback)."""
        text, headers = await gateway.get_text(
            api_path("clusters", cluster, "jobs", job, "logs"),
            {"pod": pod, "from": from_line, "previous": previous},
        )
        lines = text.splitlines()
        next_line = headers.get("x-next-line")
        shown, truncated = tail_fitted(lines[-tail_lines:], max_bytes)
        truncated = truncated or len(shown) < len(lines)
        return JobLog(
            summary=f"{pod}: {count(len(lines), 'line')} from line {from_line}"
            + (
                f", showing the last {len(shown)} (tail_lines={tail_lines}, max_bytes={max_bytes})."
                if truncated
                else "."
            ),
            pod=pod,
            lines=shown,
            truncated=truncated,
            total_lines=len(lines),
            next_line=int(next_line) if next_line and next_line.isdigit() else None,
        )

    @server.write_tool(area="training", rest="POST /api/v1/clusters/{name}/jobs", body_param="job")
    async def submit_training_job(
        cluster: ClusterRef,
        job: Annotated[
            JobSpec,
            Field(
                description=(
                    "The job, by recipe: pytorch (script), llama-factory, ms-swift (SFT/LoRA"
                    " of a model in the shared bucket) or verl (RL as a RayJob). Paths are in the"
                    " shared bucket,"
                    " mounted at /s3. Credentials go in secret_env by reference (a Kubernetes"
                    " Secret and key the user wrote, or a Secrets Manager ARN), never in env."
                )
            ),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Submit a training job from a recipe: PyTorch, LLaMA-Factory and MS-Swift as a
        HyperPodPyTorchJob, VERL as a RayJob. Ask the user for recipe, paths, instance group,
        replicas and GPUs; never infer the GPU count."""
        body = job.model_dump(mode="json", exclude_none=True)
        return await submit(
            gateway,
            tool="submit_training_job",
            arguments={"cluster": cluster, "job": job, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "jobs"),
            body=body,
            what=f"{job.recipe} job {job.name} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(area="training", rest="POST /api/v1/clusters/{name}/jobs/{job}/cancel")
    async def cancel_training_job(
        cluster: ClusterRef, job: JobName, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Stop a training job's pods; the job stays listed as cancelled."""
        return await submit(
            gateway,
            tool="cancel_training_job",
            arguments={"cluster": cluster, "job": job, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "jobs", job, "cancel"),
            body=None,
            what=f"cancel of job {job}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="training", rest="DELETE /api/v1/clusters/{name}/jobs/{job}", destructive=True
    )
    async def delete_training_job(
        cluster: ClusterRef, job: JobName, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Delete a training job: its custom resource and its record. Confirm with the user."""
        return await submit(
            gateway,
            tool="delete_training_job",
            arguments={"cluster": cluster, "job": job, "request_id": request_id},
            method="DELETE",
            path=api_path("clusters", cluster, "jobs", job),
            body=None,
            what=f"deletion of job {job}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="training",
        rest="POST /api/v1/clusters/{name}/model-downloads",
        body_param="download",
    )
    async def download_model(
        cluster: ClusterRef,
        download: Annotated[
            ModelDownloadSpec,
            Field(
                description=(
                    "repo_id: Hugging Face, e.g. Qwen/Qwen2.5-7B; target: models/<repo name> if"
                    " omitted; token_secret: for a gated model, a Secret the user stored (UI or"
                    " CLI)"
                )
            ),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Pull a Hugging Face model into the cluster's shared bucket with a Kubernetes Job. A
        gated model needs a token Secret the user stores through the UI or CLI (never through
        the agent)."""
        return await submit(
            gateway,
            tool="download_model",
            arguments={"cluster": cluster, "download": download, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "model-downloads"),
            body=download.model_dump(mode="json", exclude_none=True),
            what=f"download of {download.repo_id}",
            dry_run=dry_run,
        )

    @server.read_tool(area="training", rest="GET /api/v1/clusters/{name}/jobs/{job}/runs")
    async def get_training_job_runs(
        cluster: ClusterRef,
        job: JobName,
        metric: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=250,
                pattern=r"^[\w./ -]+$",
                description="e.g. loss, tokens_per_sec",
            ),
        ] = None,
        run_id: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=64,
                pattern=r"^[0-9a-zA-Z]+$",
                description="default: newest",
            ),
        ] = None,
    ) -> JobRuns:
        """A job's MLflow runs on its SageMaker tracking server; with metric, its history."""
        params = {k: v for k, v in (("metric", metric), ("run_id", run_id)) if v is not None}
        raw = await gateway.get(api_path("clusters", cluster, "jobs", job, "runs"), params)
        runs = list(raw.get("runs") or [])
        history = raw.get("history")
        if history is not None:
            points = list(history.get("points") or [])
            last = (
                f", last {points[-1]['value']:.4g} at step {points[-1]['step']}" if points else ""
            )
            summary = f"{metric} of run {history['run_id']}: {count(len(points), 'step')}{last}."
        else:
            summary = f"Job {job}: {count(len(runs), 'run')}" + (
                f" ({raw['reason']})." if raw.get("reason") else "."
            )
        return JobRuns(summary=summary, runs=runs, history=history)

    @server.read_tool(area="training", rest="GET /api/v1/mlflow/tracking-servers/{server}")
    async def get_tracking_server(
        name: Annotated[
            str,
            Field(
                pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$",
                description="Name of a SageMaker managed MLflow tracking server",
            ),
        ],
        region: Region = None,
    ) -> TrackingServer:
        """A SageMaker managed MLflow tracking server, described live: status, ARN (a job's
        mlflow_tracking_uri) and URL."""
        raw = await gateway.get(
            api_path("mlflow", "tracking-servers", name), {"region": region} if region else None
        )
        status = raw.get("status") or raw.get("TrackingServerStatus") or "unknown"
        return TrackingServer(summary=f"Tracking server {name} is {status}.", server=raw)

    @server.write_tool(
        area="training", rest="POST /api/v1/mlflow/tracking-servers", body_param="tracking_server"
    )
    async def create_tracking_server(
        tracking_server: Annotated[
            TrackingServerSpec,
            Field(
                description=(
                    "artifact_store_uri: s3://bucket/prefix; role_arn: the role the server"
                    " reaches it with"
                )
            ),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Create a SageMaker managed MLflow tracking server that recipes report metrics to (a
        no-op when it exists). Its ARN is a job's mlflow_tracking_uri."""
        return await submit(
            gateway,
            tool="create_tracking_server",
            arguments={"tracking_server": tracking_server, "request_id": request_id},
            method="POST",
            path="/api/v1/mlflow/tracking-servers",
            body=tracking_server.model_dump(mode="json", exclude_none=True),
            what=f"MLflow tracking server {tracking_server.name}",
            dry_run=dry_run,
        )
