"""A job's MLflow runs and metric history, read from its SageMaker tracking server
(`qry.workload.job_runs`).

The link is the one the job's pods are rendered with: experiment and run are both named after
the job (`MLFLOW_EXPERIMENT_NAME`, `MLFLOW_RUN_NAME`). A job that reports to no SageMaker
tracking server, or whose run has not started yet, answers an empty list of runs with the
reason."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from shared.contracts.subjects import query_subject
from shared.errors import StageError
from shared.queries import BadRequest, Route
from workload_svc.domain.mlflow_access import TrackingServer, tracking_server

JOB_RUNS = query_subject("workload", "job_runs")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
RUN_ID = re.compile(r"^[0-9a-zA-Z]{1,64}$")
METRIC_KEY = re.compile(r"^[\w./ -]{1,250}$")
MAX_RUNS = 20
MAX_POINTS = 25000  # MLflow's own page size of get-history


class RunsApi(Protocol):
    async def call(
        self, server: TrackingServer, method: str, operation: str, params: dict[str, Any]
    ) -> dict[str, Any]: ...


class JobRecords(Protocol):
    async def recorded(self, cluster: str, name: str) -> dict[str, Any] | None: ...


def _text(request: dict[str, Any], key: str, rule: re.Pattern[str], hint: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not rule.match(value):
        raise BadRequest(f"{key} is missing or not valid", hint)
    return value


def run_view(run: dict[str, Any]) -> dict[str, Any]:
    info = run.get("info") or {}
    data = run.get("data") or {}
    return {
        "run_id": info.get("run_id"),
        "run_name": info.get("run_name"),
        "status": info.get("status"),
        "start_time": info.get("start_time"),
        "end_time": info.get("end_time"),
        "metrics": {
            str(m["key"]): {"value": m.get("value"), "step": m.get("step")}
            for m in data.get("metrics") or []
        },
    }


class RunReads:
    def __init__(self, jobs: JobRecords, runs: RunsApi) -> None:
        self.jobs = jobs
        self.runs = runs

    def routes(self) -> dict[str, Route]:
        return {JOB_RUNS: self.job_runs}

    async def _server(
        self, cluster: str, name: str
    ) -> tuple[dict[str, Any], TrackingServer | None]:
        job = await self.jobs.recorded(cluster, name)
        if job is None:
            raise StageError(
                "JobNotFound",
                f"job {name} is not known on cluster {cluster}",
                "GET /api/v1/clusters/{name}/jobs lists the jobs",
            )
        spec = job.get("spec") or {}
        if isinstance(spec, str):
            spec = json.loads(spec)
        return spec, tracking_server(spec.get("mlflow_tracking_uri"))

    async def job_runs(self, request: dict[str, Any]) -> Any:
        """The job's runs, newest first; with `metric`, that metric's history (by step) of
        `run_id` or of the newest run."""
        cluster = _text(request, "cluster", NAME, "pass the cluster's name")
        name = _text(request, "name", NAME, "pass the job's name")
        metric = request.get("metric")
        if metric is not None:
            metric = _text(request, "metric", METRIC_KEY, "pass a metric key, e.g. loss")
        run_id = request.get("run_id")
        if run_id is not None:
            run_id = _text(request, "run_id", RUN_ID, "pass a run_id from the job's runs")
        spec, server = await self._server(cluster, name)
        answer: dict[str, Any] = {
            "job": name,
            "tracking_uri": spec.get("mlflow_tracking_uri"),
            "experiment": name,
            "runs": [],
        }
        if server is None:
            if metric is not None:
                raise StageError(
                    "NoTrackingServer",
                    f"job {name} reports to no SageMaker MLflow tracking server",
                    "submit the job with mlflow_tracking_uri set to a tracking server's ARN",
                )
            answer["reason"] = (
                "the job reports to no SageMaker MLflow tracking server (mlflow_tracking_uri"
                " is not a tracking server's ARN)"
            )
            return answer
        found = await self.runs.call(
            server, "GET", "experiments/get-by-name", {"experiment_name": name}
        )
        experiment = (found.get("experiment") or {}).get("experiment_id")
        runs: list[dict[str, Any]] = []
        if experiment is not None:
            searched = await self.runs.call(
                server,
                "POST",
                "runs/search",
                {
                    "experiment_ids": [experiment],
                    "filter": f"attributes.run_name = '{name}'",
                    "max_results": MAX_RUNS,
                },
            )
            runs = [run_view(r) for r in searched.get("runs") or []]
            answer["experiment_id"] = experiment
        else:
            answer["reason"] = f"experiment {name} does not exist yet: the job has logged nothing"
        answer["runs"] = runs
        if metric is None:
            return answer
        chosen = next((r for r in runs if run_id in (None, r["run_id"])), None)
        if chosen is None:
            raise StageError(
                "RunNotFound",
                f"run {run_id} is not a run of job {name}"
                if run_id
                else f"job {name} has no MLflow run yet",
                f"GET .../jobs/{name}/runs lists the job's runs",
            )
        history = await self.runs.call(
            server,
            "GET",
            "metrics/get-history",
            {"run_id": chosen["run_id"], "metric_key": metric, "max_results": MAX_POINTS},
        )
        points = sorted(
            (
                {"step": m.get("step", 0), "value": m.get("value"), "timestamp": m.get("timestamp")}
                for m in history.get("metrics") or []
            ),
            key=lambda p: (int(p["step"] or 0), int(p["timestamp"] or 0)),
        )
        answer["history"] = {"run_id": chosen["run_id"], "key": metric, "points": points}
        return answer
