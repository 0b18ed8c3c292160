"""What a training container with the `sagemaker-mlflow` plugin does with its tracking server:
on the first step it takes the pod's IRSA credentials (STS AssumeRoleWithWebIdentity with the
projected service account token), then creates (or finds) the experiment and a run named by
`MLFLOW_EXPERIMENT_NAME` / `MLFLOW_RUN_NAME`, logs each step's `loss` and `tokens_per_sec`
(the numbers of the step's log line) with runs/log-batch, and marks the run FINISHED after the
last step.

Requests are signed with SigV4 for the service `sagemaker-mlflow` and carry the header
`x-mlflow-sm-tracking-server-arn`, as the plugin's `AuthBoto` and request header provider do
(aws/sagemaker-mlflow). The plugin's endpoint, `https://{region}.experiments.sagemaker.aws`,
is the simulated AWS here, as every AWS endpoint is in the simulated world.

Only rank 0 reports (`RANK` absent or 0), as training scripts log from one process.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

TRACKING_ARN = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]+):\d{12}:mlflow-tracking-server/"
)
LOSS = re.compile(r"\bloss=([0-9.eE+-]+)")
THROUGHPUT = re.compile(r"\btokens_per_sec=([0-9.eE+-]+)")
STS_AUDIENCE = "sts.amazonaws.com"
IDLE_SECONDS = 120.0  # a reporter whose program stopped stepping gives up after this long
# The MLflow client retries a request that could not be sent or that answered 429 or 5xx
# (mlflow/environment_variables.py: MLFLOW_HTTP_REQUEST_MAX_RETRIES = 7,
# MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR = 2, MLFLOW_HTTP_REQUEST_TIMEOUT = 120 s); the same here,
# with the backoff scaled down to the simulated world's pace.
MAX_RETRIES = 7
BACKOFF_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 4.0
REQUEST_TIMEOUT_SECONDS = 30.0
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


def _env(container: Obj) -> dict[str, str]:
    return {
        str(e["name"]): str(e["value"])
        for e in container.get("env") or []
        if "name" in e and "value" in e
    }


@dataclass
class Reporter:
    endpoint: str  # where the plugin's endpoint is served
    region: str
    arn: str
    role_arn: str | None
    token: Callable[[], str]
    experiment: str
    run_name: str
    write: Callable[[str], None]  # the container's log
    queue: asyncio.Queue[tuple[int, str, bool]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    credentials: Any = None
    run_id: str | None = None

    def wrap(
        self, line: Callable[[int], str], total: Callable[[], int | None]
    ) -> Callable[[int], str]:
        """The step line, with the step's metrics queued for the tracking server."""

        def stepped(step: int) -> str:
            text = line(step)
            last = total()
            self.queue.put_nowait((step, text, last is not None and step >= last))
            if self.task is None:
                self.task = asyncio.get_running_loop().create_task(self._report())
            return text

        return stepped

    async def _report(self) -> None:
        try:
            await asyncio.to_thread(self._start)
        except Exception as exc:  # the plugin's failure is the program's log line, not a crash
            self.write(f"[sim] mlflow: could not start a run on {self.arn}: {exc}")
            return
        while True:
            try:
                step, text, last = await asyncio.wait_for(self.queue.get(), IDLE_SECONDS)
            except TimeoutError:
                return
            metrics = []
            stamp = int(time.time() * 1000)
            for key, pattern in (("loss", LOSS), ("tokens_per_sec", THROUGHPUT)):
                found = pattern.search(text)
                if found:
                    metrics.append(
                        {
                            "key": key,
                            "value": float(found.group(1)),
                            "timestamp": stamp,
                            "step": step,
                        }
                    )
            try:
                if metrics:
                    await asyncio.to_thread(
                        self._call,
                        "POST",
                        "runs/log-batch",
                        {"run_id": self.run_id, "metrics": metrics},
                    )
                if last:
                    await asyncio.to_thread(
                        self._call,
                        "POST",
                        "runs/update",
                        {"run_id": self.run_id, "status": "FINISHED", "end_time": stamp},
                    )
                    return
            except Exception as exc:
                self.write(f"[sim] mlflow: logging step {step} failed: {exc}")

    # ---- the plugin's calls (in a thread) -----------------------------------------------

    def _start(self) -> None:
        from botocore.credentials import Credentials
        from botocore.session import get_session

        if self.role_arn is None:
            raise RuntimeError("Unable to locate credentials (no IRSA role on the pod)")
        sts = get_session().create_client(
            "sts",
            region_name=self.region,
            endpoint_url=self.endpoint,
            aws_access_key_id="unused",
            aws_secret_access_key="unused",
        )
        found = sts.assume_role_with_web_identity(
            RoleArn=self.role_arn,
            RoleSessionName="sagemaker-mlflow",
            WebIdentityToken=self.token(),
        )["Credentials"]
        self.credentials = Credentials(
            found["AccessKeyId"], found["SecretAccessKey"], found["SessionToken"]
        )
        try:
            experiment = self._call(
                "GET", "experiments/get-by-name", {"experiment_name": self.experiment}
            )["experiment"]["experiment_id"]
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            experiment = self._call("POST", "experiments/create", {"name": self.experiment})[
                "experiment_id"
            ]
        run = self._call(
            "POST",
            "runs/create",
            {
                "experiment_id": experiment,
                "run_name": self.run_name,
                "start_time": int(time.time() * 1000),
                "tags": [{"key": "mlflow.runName", "value": self.run_name}],
            },
        )
        self.run_id = str(run["run"]["info"]["run_id"])

    def _call(self, method: str, operation: str, params: dict[str, Any]) -> Any:
        """One REST call, retried as the MLflow client retries it."""
        for attempt in range(MAX_RETRIES + 1):
            try:
                return self._send(method, operation, params)
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRIED_STATUSES or attempt == MAX_RETRIES:
                    raise
            except (urllib.error.URLError, TimeoutError, ConnectionError):
                if attempt == MAX_RETRIES:
                    raise
            time.sleep(min(BACKOFF_SECONDS * 2**attempt, BACKOFF_MAX_SECONDS))
        raise AssertionError("unreachable")

    def _send(self, method: str, operation: str, params: dict[str, Any]) -> Any:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        url = f"{self.endpoint}/api/2.0/mlflow/{operation}"
        body = b""
        if method == "GET":
            url += "?" + urlencode(params).replace("+", "%20")
        else:
            body = json.dumps(params).encode()
        headers = {
            "Content-Type": "application/json",
            "x-mlflow-sm-tracking-server-arn": self.arn,
            "X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest(),
        }
        request = AWSRequest(method=method, url=url, data=body or None, headers=headers)
        SigV4Auth(self.credentials, "sagemaker-mlflow", self.region).add_auth(request)
        prepared = urllib.request.Request(
            url, data=body or None, method=method, headers=dict(request.headers.items())
        )
        with urllib.request.urlopen(prepared, timeout=REQUEST_TIMEOUT_SECONDS) as answer:
            return json.loads(answer.read() or b"{}")


def reporter_for(
    server: ApiServer, pod: Obj, container: Obj, write: Callable[[str], None]
) -> Reporter | None:
    """The container's MLflow reporter, when it is rank 0 of a program whose tracking URI is a
    SageMaker tracking server's ARN and the simulated AWS is known."""
    env = _env(container)
    found = TRACKING_ARN.match(env.get("MLFLOW_TRACKING_URI", ""))
    endpoint = server.aws_endpoint()
    if found is None or endpoint is None or env.get("RANK", "0") != "0":
        return None
    ns = str(pod["metadata"].get("namespace") or "default")
    account = str(pod["spec"].get("serviceAccountName") or "default")

    def token() -> str:
        issued = server.tokens.issue(
            ns,
            account,
            {
                "spec": {
                    "audiences": [STS_AUDIENCE],
                    "expirationSeconds": 86400,
                    "boundObjectRef": {
                        "kind": "Pod",
                        "apiVersion": "v1",
                        "name": pod["metadata"]["name"],
                    },
                }
            },
        )
        return str(issued["status"]["token"])

    return Reporter(
        endpoint=endpoint,
        region=found["region"],
        arn=env["MLFLOW_TRACKING_URI"].split("#", 1)[0],
        role_arn=env.get("AWS_ROLE_ARN"),
        token=token,
        experiment=env.get("MLFLOW_EXPERIMENT_NAME") or "Default",
        run_name=env.get("MLFLOW_RUN_NAME") or pod["metadata"]["name"],
        write=write,
    )
