"""What every simulated service shares: the lock, the clock, the account, faults, request-rate
limits, the call log, and the seam to the Kubernetes emulator."""

from __future__ import annotations

import logging
import secrets
import string
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sim.aws.account import Account
from sim.aws.calllog import CallLog
from sim.aws.clock import Scheduler, utcnow
from sim.aws.faults import Faults
from sim.aws.throttle import Throttle, scale_from_env
from sim.interfaces import EksFactsHooks, KubeHooks, SimNode
from sim.profile import TimeProfile

log = logging.getLogger(__name__)


def hex_id(length: int) -> str:
    return secrets.token_hex((length + 1) // 2)[:length]


def instance_id() -> str:
    """An EC2-style instance id, as HyperPod nodes have."""
    return "i-" + hex_id(17)


def lower_alnum(length: int) -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


class SimContext:
    """State shared by the simulated services of one SimulatedAws."""

    def __init__(
        self,
        profile: TimeProfile,
        kube: KubeHooks | None,
        region: str,
        account_id: str,
        throttle_scale: float | None = None,
    ) -> None:
        self.profile = profile
        self.kube = kube
        self.region = region
        self.account_id = account_id
        self.lock = threading.RLock()
        self.account = Account(account_id, region)
        self.faults = Faults()
        # AWS's published request rates (sim.aws.throttle); SIM_AWS_THROTTLE_SCALE when not given
        self.throttle = Throttle(scale_from_env() if throttle_scale is None else throttle_scale)
        self.calls = CallLog()
        self.scheduler = Scheduler(self.lock, self.flush)
        self._dirty_eks: set[str] = set()
        # Run after every change (a request's, the clock's): the services' state-change events.
        self.change_watchers: list[Callable[[], None]] = []
        self.eks_nodes: Callable[[str], list[SimNode]] = lambda _name: []
        self.eks_kube_ready: Callable[[str], bool] = lambda _name: False
        # an EKS cluster as DescribeCluster and DescribeNodegroup answer, with its node groups'
        # subnets as DescribeSubnets does (None once it is gone)
        self.eks_description: Callable[
            [str],
            tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[str, Any]]] | None,
        ] = lambda _name: None

    def now(self) -> datetime:
        return utcnow()

    def arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account_id}:{resource}"

    def nodes_changed(self, eks_cluster: str) -> None:
        """Note that the nodes of `eks_cluster` (HyperPod's, its node groups') or its
        description changed."""
        self._dirty_eks.add(eks_cluster)

    def flush(self) -> None:
        """Send the state changes' events, and tell the Kubernetes emulator about every EKS
        cluster whose nodes changed."""
        with self.lock:
            for watcher in self.change_watchers:
                try:
                    watcher()
                except Exception:
                    log.exception("change watcher failed")
            dirty, self._dirty_eks = self._dirty_eks, set()
            if self.kube is None:
                return
            for name in sorted(dirty):
                if not self.eks_kube_ready(name):
                    continue
                self.describe_to_kube(name)
                try:
                    self.kube.sync_nodes(name, self.eks_nodes(name))
                except Exception:
                    log.exception("sync_nodes(%s) failed", name)

    def describe_to_kube(self, eks_cluster: str) -> None:
        """Give an emulator that follows EKS's description (EksFactsHooks) the cluster's."""
        described = self.eks_description(eks_cluster)
        if described is None or not isinstance(self.kube, EksFactsHooks):
            return
        try:
            self.kube.eks_cluster_described(eks_cluster, *described)
        except Exception:
            log.exception("eks_cluster_described(%s) failed", eks_cluster)
