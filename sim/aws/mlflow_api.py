"""The REST API of SageMaker managed MLflow tracking servers: the subset training programs and
Hyperpilot use, behind SigV4.

Sources: the `sagemaker-mlflow` plugin (aws/sagemaker-mlflow: `mlflow_sagemaker_helpers.py`,
`auth.py`, `mlflow_sagemaker_request_header_provider.py`) sends every request to
`https://{region}.experiments.sagemaker.aws` (or `SAGEMAKER_MLFLOW_CUSTOM_ENDPOINT`), names the
server in the header `x-mlflow-sm-tracking-server-arn`, and signs it with SigV4 for the service
`sagemaker-mlflow` (with `X-Amz-Content-SHA256`). The operations and their shapes are MLflow's
REST API ("REST API" page of the MLflow docs, `/api/2.0/mlflow/...`): experiments/create,
experiments/get-by-name, runs/create, runs/update, runs/log-batch, runs/get, runs/search and
metrics/get-history; errors are `{"error_code", "message"}` (RESOURCE_DOES_NOT_EXIST 404,
INVALID_PARAMETER_VALUE 400).

A request without a SigV4 `Authorization` for `sagemaker-mlflow` in the server's region, or with
an `X-Amz-Date` more than 15 minutes off (SigV4's allowed skew), is refused with 403 before any
operation runs (the SigV4 signing guide: "Authenticating Requests (AWS Signature Version 4)").
When the simulator knows the access key's secret (its conventional static key, or credentials
its STS issued), the signature is recomputed and a mismatch is 403; other keys are taken on
their word.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

StartResponse = Callable[..., Any]
PREFIXES = ("/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/")
ARN_HEADER = "HTTP_X_MLFLOW_SM_TRACKING_SERVER_ARN"
SERVICE = "sagemaker-mlflow"
SKEW_SECONDS = 15 * 60
AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>\w{1,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)"
    r"/(?P<service>[a-z0-9-]+)/aws4_request, ?SignedHeaders=(?P<headers>[a-z0-9;-]+),"
    r" ?Signature=(?P<signature>[0-9a-f]{64})$"
)
PAGE = 1000


class MlflowError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass
class Run:
    run_id: str
    experiment_id: str
    run_name: str
    start_time: int
    status: str = "RUNNING"
    end_time: int | None = None
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    # metric key -> [(step, timestamp, value)] in logging order
    metrics: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "run_id": self.run_id,
            "run_uuid": self.run_id,
            "run_name": self.run_name,
            "experiment_id": self.experiment_id,
            "status": self.status,
            "start_time": self.start_time,
            "lifecycle_stage": "active",
            "artifact_uri": f"mlflow-artifacts:/{self.experiment_id}/{self.run_id}/artifacts",
        }
        if self.end_time is not None:
            found["end_time"] = self.end_time
        return found

    def view(self) -> dict[str, Any]:
        latest = []
        for key, points in sorted(self.metrics.items()):
            step, stamp, value = max(points, key=lambda p: (p[0], p[1]))
            latest.append({"key": key, "value": value, "timestamp": stamp, "step": step})
        return {
            "info": self.info(),
            "data": {
                "metrics": latest,
                "params": [{"key": k, "value": v} for k, v in sorted(self.params.items())],
                "tags": [{"key": k, "value": v} for k, v in sorted(self.tags.items())],
            },
        }


@dataclass
class Store:
    """One tracking server's experiments and runs."""

    experiments: dict[str, str] = field(default_factory=dict)  # name -> id
    runs: dict[str, Run] = field(default_factory=dict)


def _now_ms() -> int:
    return int(time.time() * 1000)


class MlflowApi:
    """WSGI handler of `/api/2.0/mlflow/...`; `servers()` names the tracking servers by ARN."""

    def __init__(
        self,
        region: str,
        servers: Callable[[], dict[str, dict[str, Any]]],
        secret_of: Callable[[str], str | None] = lambda _key: None,
    ) -> None:
        self.region = region
        self.servers = servers
        self.secret_of = secret_of  # an access key's secret, when the simulator knows it
        self.stores: dict[str, Store] = {}
        self.lock = threading.Lock()

    def handles(self, path: str) -> bool:
        return path.startswith(PREFIXES)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            length = str(environ.get("CONTENT_LENGTH") or "0")
            raw = environ["wsgi.input"].read(int(length)) if length.isdigit() else b""
            store = self._authorized(environ, raw)
            path = str(environ.get("PATH_INFO", ""))
            operation = path.split("/mlflow/", 1)[1].strip("/")
            method = str(environ.get("REQUEST_METHOD", "GET"))
            if method == "GET":
                params: dict[str, Any] = {
                    k: v if len(v) > 1 else v[0]
                    for k, v in parse_qs(str(environ.get("QUERY_STRING", ""))).items()
                }
            else:
                try:
                    params = json.loads(raw or b"{}")
                except ValueError:
                    raise MlflowError(
                        400, "MALFORMED_REQUEST", "the request body is not JSON"
                    ) from None
                if not isinstance(params, dict):
                    raise MlflowError(400, "MALFORMED_REQUEST", "the body is not a JSON object")
            handler = self._operations().get((method, operation))
            if handler is None:
                raise MlflowError(
                    404, "ENDPOINT_NOT_FOUND", f"no {method} endpoint {path} on this server"
                )
            with self.lock:
                answer = handler(store, params)
            return self._send(start_response, 200, answer)
        except MlflowError as err:
            body: dict[str, Any] = {"error_code": err.code, "message": err.message}
            if err.status == 403:
                body = {"message": err.message}
            return self._send(start_response, err.status, body)

    @staticmethod
    def _send(start_response: StartResponse, status: int, body: dict[str, Any]) -> list[bytes]:
        payload = json.dumps(body).encode()
        reasons = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found"}
        start_response(
            f"{status} {reasons.get(status, 'Error')}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
        )
        return [payload]

    def _authorized(self, environ: dict[str, Any], body: bytes) -> Store:
        """The server's store once the request is signed for it; else 403 (or 404: no server)."""
        header = str(environ.get("HTTP_AUTHORIZATION") or "")
        if not header:
            raise MlflowError(
                403,
                "Forbidden",
                "Missing Authentication Token: sign the request"
                " with SigV4 for service sagemaker-mlflow",
            )
        found = AUTH.match(header)
        if found is None:
            raise MlflowError(
                403, "Forbidden", "Authorization is not an AWS4-HMAC-SHA256 signature"
            )
        if found["service"] != SERVICE:
            raise MlflowError(
                403,
                "Forbidden",
                f"Credential should be scoped to correct service: '{SERVICE}', not"
                f" '{found['service']}'",
            )
        if found["region"] != self.region:
            raise MlflowError(
                403,
                "Forbidden",
                f"Credential should be scoped to a valid region: '{self.region}', not"
                f" '{found['region']}'",
            )
        signed = found["headers"].split(";")
        if "host" not in signed or "x-amz-date" not in signed:
            raise MlflowError(403, "Forbidden", "SignedHeaders must include host and x-amz-date")
        stamp = str(environ.get("HTTP_X_AMZ_DATE") or "")
        try:
            when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise MlflowError(403, "Forbidden", "X-Amz-Date is missing or malformed") from None
        if abs(time.time() - when.timestamp()) > SKEW_SECONDS:
            raise MlflowError(403, "Forbidden", "Signature expired: X-Amz-Date is over 15 min off")
        if not stamp.startswith(found["date"]):
            raise MlflowError(403, "Forbidden", "the credential's date is not X-Amz-Date's")
        secret = self.secret_of(found["key"])
        if secret is not None and not _signature_matches(environ, body, found, stamp, secret):
            raise MlflowError(
                403,
                "Forbidden",
                "The request signature we calculated does not match the signature you provided",
            )
        arn = str(environ.get(ARN_HEADER) or "")
        if not arn:
            raise MlflowError(
                400,
                "INVALID_PARAMETER_VALUE",
                "header x-mlflow-sm-tracking-server-arn is missing: name the tracking server",
            )
        server = next((s for s in self.servers().values() if s["TrackingServerArn"] == arn), None)
        if server is None or server.get("TrackingServerStatus") not in ("Created", "Updated"):
            raise MlflowError(
                404,
                "RESOURCE_DOES_NOT_EXIST",
                f"tracking server {arn} does not exist or is not running",
            )
        return self.stores.setdefault(arn, Store())

    def _operations(self) -> dict[tuple[str, str], Callable[[Store, dict[str, Any]], Any]]:
        return {
            ("POST", "experiments/create"): self.create_experiment,
            ("GET", "experiments/get-by-name"): self.experiment_by_name,
            ("POST", "runs/create"): self.create_run,
            ("POST", "runs/update"): self.update_run,
            ("POST", "runs/log-batch"): self.log_batch,
            ("GET", "runs/get"): self.get_run,
            ("POST", "runs/search"): self.search_runs,
            ("GET", "metrics/get-history"): self.metric_history,
        }

    # ---- operations -----------------------------------------------------------------------

    @staticmethod
    def _text(params: dict[str, Any], name: str) -> str:
        value = params.get(name)
        if not isinstance(value, str) or not value:
            raise MlflowError(
                400, "INVALID_PARAMETER_VALUE", f"Missing value for required parameter '{name}'"
            )
        return value

    @staticmethod
    def _run(store: Store, params: dict[str, Any]) -> Run:
        run_id = params.get("run_id") or params.get("run_uuid")
        run = store.runs.get(str(run_id)) if run_id else None
        if run is None:
            raise MlflowError(404, "RESOURCE_DOES_NOT_EXIST", f"Run '{run_id}' not found")
        return run

    def create_experiment(self, store: Store, params: dict[str, Any]) -> Any:
        name = self._text(params, "name")
        if name in store.experiments:
            raise MlflowError(
                400, "RESOURCE_ALREADY_EXISTS", f"Experiment '{name}' already exists."
            )
        store.experiments[name] = str(len(store.experiments) + 1)
        return {"experiment_id": store.experiments[name]}

    def experiment_by_name(self, store: Store, params: dict[str, Any]) -> Any:
        name = self._text(params, "experiment_name")
        found = store.experiments.get(name)
        if found is None:
            raise MlflowError(
                404, "RESOURCE_DOES_NOT_EXIST", f"Could not find experiment with name '{name}'"
            )
        return {"experiment": {"experiment_id": found, "name": name, "lifecycle_stage": "active"}}

    def create_run(self, store: Store, params: dict[str, Any]) -> Any:
        experiment = str(params.get("experiment_id") or "")
        if experiment not in store.experiments.values():
            raise MlflowError(
                404, "RESOURCE_DOES_NOT_EXIST", f"No Experiment with id={experiment} exists"
            )
        tags = {str(t["key"]): str(t["value"]) for t in params.get("tags") or [] if "key" in t}
        run_id = uuid.uuid4().hex
        name = str(params.get("run_name") or tags.get("mlflow.runName") or run_id[:8])
        tags.setdefault("mlflow.runName", name)
        run = Run(run_id, experiment, name, int(params.get("start_time") or _now_ms()), tags=tags)
        store.runs[run_id] = run
        return {"run": run.view()}

    def update_run(self, store: Store, params: dict[str, Any]) -> Any:
        run = self._run(store, params)
        status = params.get("status")
        if status is not None:
            if status not in ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED"):
                raise MlflowError(
                    400, "INVALID_PARAMETER_VALUE", f"Invalid value {status} for status"
                )
            run.status = str(status)
        if params.get("end_time") is not None:
            run.end_time = int(params["end_time"])
        return {"run_info": run.info()}

    def log_batch(self, store: Store, params: dict[str, Any]) -> Any:
        run = self._run(store, params)
        metrics = params.get("metrics") or []
        if len(metrics) > 1000:
            raise MlflowError(
                400,
                "INVALID_PARAMETER_VALUE",
                "A batch logging request can contain at most 1000 metrics",
            )
        for metric in metrics:
            try:
                key = str(metric["key"])
                value = float(metric["value"])
                stamp = int(metric["timestamp"])
                step = int(metric.get("step", 0))
            except (KeyError, TypeError, ValueError):
                raise MlflowError(
                    400,
                    "INVALID_PARAMETER_VALUE",
                    f"metric {metric!r} needs key, value and timestamp",
                ) from None
            run.metrics.setdefault(key, []).append((step, stamp, value))
        for param in params.get("params") or []:
            run.params[str(param["key"])] = str(param["value"])
        for tag in params.get("tags") or []:
            run.tags[str(tag["key"])] = str(tag["value"])
        return {}

    def get_run(self, store: Store, params: dict[str, Any]) -> Any:
        return {"run": self._run(store, params).view()}

    def search_runs(self, store: Store, params: dict[str, Any]) -> Any:
        experiments = [str(e) for e in params.get("experiment_ids") or []]
        if not experiments:
            raise MlflowError(
                400,
                "INVALID_PARAMETER_VALUE",
                "Missing value for required parameter 'experiment_ids'",
            )
        wanted = _run_name_filter(str(params.get("filter") or ""))
        runs = [
            r
            for r in store.runs.values()
            if r.experiment_id in experiments and (wanted is None or r.run_name == wanted)
        ]
        runs.sort(key=lambda r: (-r.start_time, r.run_id))  # newest first, as MLflow orders
        limit = int(params.get("max_results") or PAGE)
        start = int(params.get("page_token") or 0)
        page = runs[start : start + limit]
        answer: dict[str, Any] = {"runs": [r.view() for r in page]}
        if start + limit < len(runs):
            answer["next_page_token"] = str(start + limit)
        return answer

    def metric_history(self, store: Store, params: dict[str, Any]) -> Any:
        run = self._run(store, params)
        key = self._text(params, "metric_key")
        points = run.metrics.get(key, [])
        limit = int(params.get("max_results") or 25000)
        start = int(params.get("page_token") or 0)
        page = points[start : start + limit]
        answer: dict[str, Any] = {
            "metrics": [
                {"key": key, "value": value, "timestamp": stamp, "step": step}
                for step, stamp, value in page
            ]
        }
        if start + limit < len(points):
            answer["next_page_token"] = str(start + limit)
        return answer


def _signature_matches(
    environ: dict[str, Any], body: bytes, found: re.Match[str], stamp: str, secret: str
) -> bool:
    """SigV4 recomputed over the headers the request signed (botocore's canonical request and
    string to sign), compared with the signature it carries."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    headers: dict[str, str] = {}
    for name in found["headers"].split(";"):
        key = "CONTENT_TYPE" if name == "content-type" else "HTTP_" + name.upper().replace("-", "_")
        if key == "CONTENT_TYPE" and key not in environ:
            key = "HTTP_CONTENT_TYPE"
        headers[name] = str(environ.get(key, ""))
    query = str(environ.get("QUERY_STRING", ""))
    url = f"http://{headers.get('host', 'localhost')}{environ.get('PATH_INFO', '')}"
    request = AWSRequest(
        method=str(environ.get("REQUEST_METHOD", "GET")),
        url=url + (f"?{query}" if query else ""),
        data=body or None,
        headers=headers,
    )
    request.context["timestamp"] = stamp
    token = headers.get("x-amz-security-token")
    auth = SigV4Auth(Credentials(found["key"], secret, token), SERVICE, found["region"])
    expected = auth.signature(
        auth.string_to_sign(request, auth.canonical_request(request)), request
    )
    return hmac.compare_digest(expected, found["signature"])


def _run_name_filter(text: str) -> str | None:
    """The run name of a `attributes.run_name = '...'` or `tags.mlflow.runName = '...'` filter
    (the only filter this server reads); None for no filter."""
    if not text.strip():
        return None
    found = re.fullmatch(
        r"\s*(?:attributes\.)?(?:run_name|`?tags\.`?mlflow\.runName`?|tags\.\"mlflow\.runName\")"
        r"\s*=\s*['\"](?P<name>[^'\"]*)['\"]\s*",
        text,
    )
    if found is None:
        raise MlflowError(
            400,
            "INVALID_PARAMETER_VALUE",
            f"filter {text!r} is not supported here: filter on attributes.run_name = '<name>'",
        )
    return found["name"]
