"""SimulatedAws: moto plus the project's own simulation, on one HTTP endpoint.

Domain services get the endpoint URL and any credentials; nothing else tells them the cloud is
simulated. Tests also reach the simulation in-process: the call log, the inventory, faults and
the account.
"""

from __future__ import annotations

import threading
from typing import Any

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
from sim.aws.front import FrontApp, Handler
from sim.aws.grafana import Grafana
from sim.aws.hyperpod import HyperPod
from sim.aws.inventory import moto_inventory
from sim.aws.mlflow_api import MlflowApi
from sim.aws.pricing import Pricing
from sim.aws.sagemaker_extras import SageMakerExtras
from sim.aws.service_quotas import ServiceQuotas
from sim.aws.task_governance import TaskGovernance
from sim.aws.training_plans import TrainingPlanOfferings
from sim.interfaces import KubeHooks
from sim.profile import TimeProfile

DEFAULT_ACCOUNT_ID = "123456789012"


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


class SimulatedAws:
    """The simulated AWS of one account and region, served over HTTP."""

    def __init__(
        self,
        profile: TimeProfile,
        host: str = "127.0.0.1",
        port: int = 0,
        kube: KubeHooks | None = None,
        region: str = "us-east-1",
        *,
        account_id: str = DEFAULT_ACCOUNT_ID,
    ) -> None:
        self.host = host
        self.port = port
        self.region = region
        self.ctx = SimContext(profile, kube, region, account_id)
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
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

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
            self.host, self.port, self.app, threaded=True, request_handler=_QuietRequestHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sim-aws-http", daemon=True
        )
        self._thread.start()
        self.ctx.scheduler.start()
        known = getattr(self.ctx.kube, "aws_endpoint_known", None)
        if callable(known):
            known(self.endpoint_url)
        return self

    def stop(self) -> None:
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

    def inventory(self) -> dict[str, list[str]]:
        """Every resource that exists, by kind, minus the account's defaults."""
        self.ctx.scheduler.run_due()
        with self.ctx.lock:
            result = moto_inventory(self.ctx.account_id, self.region)
            result.update(self.eks.inventory())
            result["hyperpod_clusters"] = sorted(c.name for c in self.hyperpod.clusters.values())
            result["mlflow_tracking_servers"] = sorted(self.sagemaker_extras.tracking_servers)
        return result
