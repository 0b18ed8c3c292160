"""SimulatedAws: moto plus the project's own simulation, on one HTTP endpoint.

Domain services get the endpoint URL and any credentials; nothing else tells them the cloud is
simulated. Tests also reach the simulation in-process: the call log, the inventory, faults and
the account.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

from sim.aws.account import Account
from sim.aws.admin import AdminApi
from sim.aws.context import SimContext
from sim.aws.eks import Eks
from sim.aws.faults import Faults
from sim.aws.front import FrontApp, Handler, StartResponse, WsgiApp
from sim.aws.grafana import Grafana
from sim.aws.hyperpod import HyperPod
from sim.aws.inventory import moto_inventory
from sim.aws.mlflow_api import MlflowApi
from sim.aws.pricing import Pricing
from sim.aws.sagemaker_extras import SageMakerExtras
from sim.aws.service_quotas import ServiceQuotas
from sim.aws.task_governance import TaskGovernance
from sim.aws.throttle import Throttle
from sim.aws.training_plans import TrainingPlanOfferings
from sim.interfaces import KubeHooks
from sim.profile import TimeProfile

DEFAULT_ACCOUNT_ID = "123456789012"
# The region of a SigV4 request: its credential scope, in the Authorization header or, for a
# presigned URL, in X-Amz-Credential (AWS General Reference, "Elements of an AWS API request
# signature": <key>/<date>/<region>/<service>/aws4_request).
_SCOPE_REGION = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/")


class _QuietRequestHandler(MotoRequestHandler):
    """Moto's handler without a stderr line per request."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


def known_secret(access_key: str) -> str | None:
    """The secret of an access key the simulator knows: moto's conventional static key, or
    credentials its STS issued (AssumeRole, AssumeRoleWithWebIdentity)."""
    from moto.sts.models import sts_backends

    if access_key == "testing":
        return "testing"
    for regions in list(sts_backends.values()):
        for backend in list(regions.values()):
            role = backend.get_assumed_role_from_access_key(access_key)
            if role is not None:
                return str(role.secret_access_key)
    return None


def signed_region(environ: dict[str, Any]) -> str | None:
    """The region a request is signed for, if it is signed."""
    match = _SCOPE_REGION.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    if match:
        return match.group(1)
    credential = parse_qs(str(environ.get("QUERY_STRING", ""))).get("X-Amz-Credential")
    if credential:
        parts = credential[0].split("/")
        return parts[2] if len(parts) > 2 else None
    return None


class _ByRegion:
    """One endpoint for several regions: a request goes to the simulation of the region it is
    signed for, as each regional AWS endpoint answers for its own region only; unsigned
    requests to the home region's, and the admin API to the region its `?region=` names (the
    home region's without one), so a fault is armed or a call log read in any region."""

    def __init__(self, home: WsgiApp, regions: dict[str, WsgiApp]) -> None:
        self.home = home
        self.regions = regions

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        app = self.home
        if not self.regions:
            return app(environ, start_response)
        if str(environ.get("PATH_INFO", "")).startswith("/_sim/"):
            named = parse_qs(str(environ.get("QUERY_STRING", ""))).get("region", [""])[0]
            app = self.regions.get(named, self.home)
        else:
            app = self.regions.get(signed_region(environ) or "", self.home)
        return app(environ, start_response)


def _kube_in(kube: KubeHooks | None, region: str) -> KubeHooks | None:
    """The Kubernetes emulator of `region`'s EKS clusters (an EKS cluster name is unique per
    region, so two regions' clusters of one name are two API servers)."""
    in_region = getattr(kube, "in_region", None)
    if callable(in_region):
        regional: KubeHooks = in_region(region)
        return regional
    return kube


class SimulatedAws:
    """The simulated AWS of one account, served over HTTP: its home region, and any other
    `regions`, each with its own EKS, HyperPod and SageMaker state (as moto keeps a backend
    per account and region)."""

    def __init__(
        self,
        profile: TimeProfile,
        host: str = "127.0.0.1",
        port: int = 0,
        kube: KubeHooks | None = None,
        region: str = "us-east-1",
        *,
        account_id: str = DEFAULT_ACCOUNT_ID,
        regions: tuple[str, ...] = (),
        throttle_scale: float | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.region = region
        # throttle_scale multiplies AWS's published request rates (sim.aws.throttle); None reads
        # SIM_AWS_THROTTLE_SCALE (1 when unset), 0 turns throttling off.
        self.ctx = SimContext(
            profile, _kube_in(kube, region), region, account_id, throttle_scale=throttle_scale
        )
        self.eks = Eks(self.ctx)
        self.hyperpod = HyperPod(self.ctx, self.eks)
        self.sagemaker_extras = SageMakerExtras(self.ctx, self.hyperpod)
        self.service_quotas = ServiceQuotas(self.ctx)
        self.task_governance = TaskGovernance(self.ctx, self.hyperpod, self.eks)
        self.grafana = Grafana(self.ctx)
        self.pricing = Pricing(self.ctx)
        self.training_plan_offerings = TrainingPlanOfferings(self.ctx)
        handlers: dict[tuple[str, str], Handler] = {}
        for service, ops in (
            ("eks", self.eks.operations()),
            ("sagemaker", self.hyperpod.operations()),
            ("sagemaker", self.sagemaker_extras.operations()),
            ("sagemaker", self.task_governance.operations()),
            ("service-quotas", self.service_quotas.operations()),
            ("grafana", self.grafana.operations()),
            ("sagemaker", self.training_plan_offerings.operations()),
            ("pricing", self.pricing.operations()),
        ):
            handlers.update({(service, name): handler for name, handler in ops.items()})
        self.simulated_operations = sorted(f"{s}:{o}" for s, o in handlers)
        admin = AdminApi(self.ctx, self.inventory, lambda: self.endpoint_url)
        moto_app = DomainDispatcherApplication(create_backend_app)
        self.mlflow = MlflowApi(
            region, lambda: self.sagemaker_extras.tracking_servers, known_secret
        )
        self.app = FrontApp(self.ctx, handlers, moto_app, admin, self.mlflow)
        # the other regions: their own simulation each, behind this one's endpoint
        self.regions = {
            other: SimulatedAws(
                profile,
                host,
                kube=kube,
                region=other,
                account_id=account_id,
                throttle_scale=throttle_scale,
            )
            for other in dict.fromkeys(regions)
            if other != region
        }
        self.wsgi = _ByRegion(self.app, {r: s.app for r, s in self.regions.items()})
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def in_region(self, region: str) -> SimulatedAws:
        """The simulation of `region` (this one's, or another served region's)."""
        if region == self.region:
            return self
        try:
            return self.regions[region]
        except KeyError:
            raise KeyError(
                f"region {region} is not simulated here: pass it in SimulatedAws(regions=...)"
            ) from None

    @property
    def profile(self) -> TimeProfile:
        return self.ctx.profile

    @property
    def account_id(self) -> str:
        return self.ctx.account_id

    @property
    def faults(self) -> Faults:
        return self.ctx.faults

    @property
    def throttle(self) -> Throttle:
        return self.ctx.throttle

    @property
    def account(self) -> Account:
        return self.ctx.account

    @property
    def endpoint_url(self) -> str:
        if self._server is None:
            raise RuntimeError("SimulatedAws is not started")
        return f"http://{self.host}:{self._server.server_port}"

    def start(self) -> SimulatedAws:
        """Listen and start the clock; returns self once requests are served."""
        if self._server is not None:
            return self
        self._server = make_server(
            self.host, self.port, self.wsgi, threaded=True, request_handler=_QuietRequestHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sim-aws-http", daemon=True
        )
        self._thread.start()
        for sim in (self, *self.regions.values()):
            sim.ctx.scheduler.start()
            known = getattr(sim.ctx.kube, "aws_endpoint_known", None)
            if callable(known):
                known(self.endpoint_url)
        return self

    def stop(self) -> None:
        for other in self.regions.values():
            other.ctx.scheduler.stop()
        self.ctx.scheduler.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> SimulatedAws:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call_log(
        self, service: str | None = None, operation: str | None = None
    ) -> list[dict[str, Any]]:
        """Mutating calls (oldest first), each with service, operation, params, status, error."""
        return self.ctx.calls.query(service, operation)

    def changes(self) -> list[dict[str, Any]]:
        """Mutating calls minus the control plane's event plumbing (its EventBridge rule and SQS
        queue: made once per region, then a long poll that receives and deletes in the
        background): what a dry run or a no-op must not add to."""
        return [c for c in self.ctx.calls.query() if c["service"] not in ("sqs", "events")]

    def inventory(self) -> dict[str, list[str]]:
        """Every resource that exists, by kind, minus the account's defaults."""
        self.ctx.scheduler.run_due()
        with self.ctx.lock:
            result = moto_inventory(self.ctx.account_id, self.region)
            result.update(self.eks.inventory())
            result["hyperpod_clusters"] = sorted(c.name for c in self.hyperpod.clusters.values())
            result["mlflow_tracking_servers"] = sorted(self.sagemaker_extras.tracking_servers)
        return result
