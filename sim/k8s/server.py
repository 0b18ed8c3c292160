"""One emulated kube-apiserver: HTTPS on its own port, its own thread and asyncio loop."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import logging
import ssl
import threading
from collections.abc import Callable
from typing import Any

import trustme

from sim.interfaces import SimNode
from sim.k8s.api import ADMIN_USER, Api
from sim.k8s.auth import PREFIX, check_token, make_token
from sim.k8s.bootstrap import bootstrap
from sim.k8s.controllers import roster
from sim.k8s.events import EventRecorder
from sim.k8s.facts import STANDALONE, ClusterFacts
from sim.k8s.faults import Faults
from sim.k8s.files import SharedFiles
from sim.k8s.http import HttpServer, Request
from sim.k8s.logs import LogBook
from sim.k8s.operators.install import install
from sim.k8s.registry import Registry, ResourceType
from sim.k8s.routes import Router
from sim.k8s.store import Obj, Store
from sim.k8s.telemetry import Telemetry
from sim.k8s.tokens import ServiceAccountTokens
from sim.k8s.validation import BuiltinValidator
from sim.profile import TimeProfile

log = logging.getLogger(__name__)

# The simulated world's conventional credentials (moto's): their tokens are verified.
DEFAULT_CREDENTIALS = {"testing": "testing"}


class ApiServer:
    """The API server of one simulated EKS cluster, with its simulated controllers and operators."""

    def __init__(
        self,
        cluster: str,
        profile: TimeProfile,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        facts: ClusterFacts = STANDALONE,
        region: str = "us-east-1",
        history: int = 5000,
        credentials: dict[str, str] | None = None,
        files: SharedFiles | None = None,
    ) -> None:
        self.cluster = cluster
        self.profile = profile
        self.host = host
        self.port = port
        self.region = region
        self.facts = facts
        self.kubernetes_version = facts.kubernetes_version
        self.store = Store(history=history)
        self.registry = Registry()
        self.api = Api(self.store, self.registry, facts.kubernetes_version, facts.service_cidr)
        self.logs = LogBook()
        # what containers wrote to mounted storage (a world's clusters share its buckets)
        self.files = files if files is not None else SharedFiles()
        self.events = EventRecorder(self.api)
        self.faults = Faults(self)
        self.telemetry = Telemetry(self)
        self.bookmark_interval = 5.0
        # the simulated AWS's endpoint, when the world has one (where pods' AWS calls go)
        self.aws_endpoint: Callable[[], str | None] = lambda: None
        self.requests = 0
        self._token_checks: dict[str, str] = {}  # token -> why it is refused ("" when accepted)
        # access key id -> secret: tokens signed with these keys are verified for this cluster
        self.credentials: dict[str, str] = dict(
            DEFAULT_CREDENTIALS if credentials is None else credentials
        )
        self.stopping = False
        self.internal_errors: list[str] = []
        self.metrics: dict[tuple[str, str], float] = {}
        # called with (cluster, instance id, health status) when a node health fault is injected
        self.node_fault_listeners: list[Callable[[str, str, str], None]] = []
        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert(host, "localhost", "kubernetes", "kubernetes.default.svc")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.http: HttpServer | None = None
        self.tokens = ServiceAccountTokens(self.store, self.oidc_issuer)
        self.controllers = roster.build(self)
        self.kubelet = roster.find(self.controllers, "kubelet")
        self.nodes = roster.find(self.controllers, "node-controller")

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> ApiServer:
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self.thread = threading.Thread(
            target=self._run, args=(ready,), name=f"kube-apiserver-{self.cluster}", daemon=True
        )
        self.thread.start()
        self.port = ready.result(timeout=30)
        return self

    def _run(self, ready: concurrent.futures.Future[int]) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.cert.configure_cert(ctx)
            ctx.set_alpn_protocols(["http/1.1"])
            self.http = HttpServer(Router(self).handle, ctx)
            port = loop.run_until_complete(self.http.start(self.host, self.port))
            self.port = port
            loop.run_until_complete(self._bootstrap())
        except BaseException as exc:
            ready.set_exception(exc)
            return
        ready.set_result(port)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self.http.stop())
            loop.close()

    async def _bootstrap(self) -> None:
        bootstrap(self)
        loop = asyncio.get_running_loop()
        for controller in self.controllers:
            controller.start(loop)

    def stop(self) -> None:
        if self.loop is None or self.stopping:
            return
        self.stopping = True
        loop = self.loop

        def shutdown() -> None:
            for controller in self.controllers:
                controller.stop()
            loop.stop()

        loop.call_soon_threadsafe(shutdown)
        if self.thread is not None:
            self.thread.join(timeout=10)

    def run_on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call `fn` on the server's loop (where controllers and logs live) and wait for it."""
        assert self.loop is not None
        if threading.current_thread() is self.thread:
            return fn(*args)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(call)
        return future.result(timeout=30)

    # ---- identity ------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def ca_pem(self) -> str:
        return self.ca.cert_pem.bytes().decode()

    @property
    def oidc_issuer(self) -> str:
        digest = hashlib.sha256(self.cluster.encode()).hexdigest()[:32].upper()
        return f"https://oidc.eks.{self.region}.amazonaws.com/id/{digest}"

    def check_token(self, token: str) -> str | None:
        if not token.startswith(PREFIX):
            # a service account token this cluster issued, checked on every request: it stops
            # working when it expires or its account goes
            return None if self.tokens.user(token) is not None else "not a valid token"
        cached = self._token_checks.get(token)
        if cached is not None:
            return cached or None
        problem = check_token(token, self.cluster, self.credentials)
        if len(self._token_checks) > 4096:
            self._token_checks.clear()
        self._token_checks[token] = problem or ""
        return problem

    def user_of(self, token: str) -> dict[str, Any]:
        """Who an accepted bearer token stands for: a service account for its tokens, the
        cluster creator's IAM identity (mapped to a cluster admin) for EKS tokens."""
        return self.tokens.user(token) or dict(ADMIN_USER)

    def token(self) -> str:
        return make_token(self.cluster, self.region)

    def kubeconfig(self, token: str | None = None) -> dict[str, Any]:
        """A kubeconfig as one builds it from DescribeCluster: endpoint, CA data, bearer token."""
        name = f"arn:aws:eks:{self.region}:000000000000:cluster/{self.cluster}"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "server": self.endpoint,
                        "certificate-authority-data": base64.b64encode(
                            self.ca_pem.encode()
                        ).decode(),
                    },
                }
            ],
            "users": [{"name": name, "user": {"token": token or self.token()}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        }

    # ---- in-process helpers --------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> ResourceType:
        return self.api.resolve(api_version, kind)

    def apply(self, obj: Obj) -> Obj:
        """Create or replace `obj` (thread-safe; for tests and the simulated AWS)."""
        rt = self.resource(obj["apiVersion"], obj["kind"])
        ns = obj["metadata"].get("namespace", "default") if rt.namespaced else ""
        existing = self.store.get(rt.key, ns, obj["metadata"]["name"])
        body = dict(obj, metadata=dict(obj["metadata"], resourceVersion=None))
        if existing is None:
            return self.api.create(rt, ns, body, manager="sim")
        return self.api.update(rt, ns, obj["metadata"]["name"], body, manager="sim")

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        rt = self.resource(api_version, kind)
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        return self.api._finish(rt, obj) if obj is not None else None

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        rt = self.resource(api_version, kind)
        items: list[Obj] = self.api.list_objects(rt, namespace)["items"]
        return items

    def bind_pod(self, namespace: str, name: str, binding: Obj) -> Obj:
        node = (binding.get("target") or {}).get("name")
        bound: Obj = self.run_on_loop(self.scheduler_bind, namespace, name, node)
        return bound

    def scheduler_bind(self, namespace: str, name: str, node: str) -> Obj:
        scheduler = roster.find(self.controllers, "default-scheduler")
        result: Obj = scheduler.bind(namespace, name, node)
        return result

    def sync_nodes(self, nodes: list[SimNode]) -> None:
        self.run_on_loop(self.nodes.sync_hyperpod, nodes)

    def follow_facts(self, facts: ClusterFacts) -> None:
        """The EKS cluster's description changed: an upgraded control plane reports its new
        version (and validates by its schemas); node-group nodes join, follow and go with
        their groups. The service CIDR cannot change (EKS fixes it at creation)."""
        self.facts = facts
        if facts.kubernetes_version != self.kubernetes_version:
            self.kubernetes_version = facts.kubernetes_version
            self.api.validator = BuiltinValidator(facts.kubernetes_version)
        self.run_on_loop(self.nodes.sync_node_groups, facts.node_groups)

    def install(self, component: str) -> None:
        """Install an operator or add-on as the product's installers would (CRDs, deployment)."""
        install(self, component)

    def set_metric(self, namespace: str, scaled_object: str, value: float) -> None:
        """The value KEDA's scaler reads for a ScaledObject (e.g. requests per second)."""
        self.metrics[(namespace, scaled_object)] = value

    def log_internal_error(self, req: Request, exc: Exception) -> None:
        log.exception("internal error serving %s %s", req.method, req.path, exc_info=exc)
        self.internal_errors.append(f"{req.method} {req.path}: {type(exc).__name__}: {exc}")
