"""KubeWorld: one emulated API server per simulated EKS cluster (the `KubeHooks` seam)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sim.governance import SchedulerPolicy, TeamQuota
from sim.interfaces import ClusterEndpoint, SimNode
from sim.k8s.facts import STANDALONE, ClusterFacts
from sim.k8s.files import SharedFiles
from sim.k8s.node_faults import clear_node_fault, record_node_fault
from sim.k8s.operators import task_governance
from sim.k8s.server import ApiServer
from sim.profile import TimeProfile


class KubeWorld:
    """Starts, finds and stops the API servers of the simulated clusters."""

    def __init__(
        self,
        profile: TimeProfile,
        host: str = "127.0.0.1",
        *,
        facts: ClusterFacts = STANDALONE,
        region: str = "us-east-1",
        credentials: dict[str, str] | None = None,
    ) -> None:
        self.profile = profile
        self.host = host
        self.facts = facts
        self.region = region
        self.credentials = credentials
        # each cluster as the simulated EKS describes it (eks_cluster_described): its API
        # server's version, service CIDR and node-group nodes follow that description. A
        # cluster EKS has not described gets `facts`.
        self.described: dict[str, ClusterFacts] = {}
        self.servers: dict[str, ApiServer] = {}
        self.files = SharedFiles()  # the buckets every cluster's pods mount, as S3 is shared
        # called with (cluster, instance id, health status) on an injected node health fault,
        # for every cluster: how the simulated AWS learns it must replace or reboot an instance
        self.node_fault_listeners: list[Callable[[str, str, str], None]] = []
        self.lock = threading.Lock()
        self.aws_endpoint: str | None = None  # the simulated AWS, once it listens
        self.regions: dict[str, KubeWorld] = {}  # the API servers of other regions' clusters

    def in_region(self, region: str) -> KubeWorld:
        """The emulator of `region`'s EKS clusters: an EKS cluster name is unique per region
        only (Amazon EKS User Guide, "Create an Amazon EKS cluster": "The name must be unique
        within the AWS Region and AWS account"), so each region keeps its own API servers,
        their tokens signed for that region. The buckets pods mount are shared, as S3 is."""
        if region == self.region:
            return self
        with self.lock:
            found = self.regions.get(region)
            if found is None:
                found = KubeWorld(
                    self.profile,
                    self.host,
                    facts=self.facts,
                    region=region,
                    credentials=self.credentials,
                )
                found.files = self.files
                found.aws_endpoint = self.aws_endpoint
                self.regions[region] = found
        return found

    def aws_endpoint_known(self, url: str) -> None:
        """The simulated AWS listens at `url`: pods' AWS calls (STS, MLflow) go there."""
        self.aws_endpoint = url

    def start_cluster(self, name: str) -> ClusterEndpoint:
        with self.lock:
            server = self.servers.get(name)
            if server is None:
                server = ApiServer(
                    name,
                    self.profile,
                    host=self.host,
                    facts=self.described.get(name, self.facts),
                    region=self.region,
                    credentials=self.credentials,
                    files=self.files,
                )
                server.node_fault_listeners.append(self._node_fault)
                server.aws_endpoint = lambda: self.aws_endpoint
                server.start()
                self.servers[name] = server
        return ClusterEndpoint(server.endpoint, server.ca_pem, server.oidc_issuer)

    def eks_cluster_described(
        self,
        cluster_name: str,
        cluster: dict[str, Any],
        nodegroups: list[dict[str, Any]],
        subnets: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """EksFactsHooks: the simulated EKS's DescribeCluster and DescribeNodegroup answers,
        and the node groups' subnets."""
        facts = ClusterFacts.from_description(cluster, nodegroups, subnets)
        with self.lock:
            unchanged = self.described.get(cluster_name) == facts
            self.described[cluster_name] = facts
            server = self.servers.get(cluster_name)
        if server is not None and not unchanged:
            server.follow_facts(facts)

    def _node_fault(self, cluster: str, instance_id: str, status: str) -> None:
        for listener in list(self.node_fault_listeners):
            listener(cluster, instance_id, status)

    def stop_cluster(self, name: str) -> None:
        with self.lock:
            server = self.servers.pop(name, None)
            self.described.pop(name, None)
        if server is not None:
            server.stop()

    def sync_nodes(self, cluster_name: str, nodes: list[SimNode]) -> None:
        self.api_server(cluster_name).sync_nodes(nodes)

    def node_fault(self, cluster_name: str, instance_id: str, reason: str, message: str) -> None:
        record_node_fault(self.api_server(cluster_name), instance_id, reason, message)

    def node_fault_cleared(self, cluster_name: str, instance_id: str) -> None:
        clear_node_fault(self.api_server(cluster_name), instance_id)

    def api_server(self, name: str) -> ApiServer:
        with self.lock:
            server = self.servers.get(name)
        if server is None:
            raise KeyError(f"no API server for cluster {name!r}: start_cluster it first")
        return server

    def install(self, cluster_name: str, component: str) -> None:
        """Install an operator or EKS add-on (by component or add-on name) on a cluster."""
        self.api_server(cluster_name).install(component)

    def sync_task_governance(
        self, cluster_name: str, policy: SchedulerPolicy | None, teams: list[TeamQuota]
    ) -> None:
        """HyperPod task governance changed: render it (sim.governance.TaskGovernanceHooks)."""
        server = self.api_server(cluster_name)
        server.run_on_loop(task_governance.sync, server, policy, teams)

    def close(self) -> None:
        with self.lock:
            servers = list(self.servers.values())
            self.servers.clear()
            others = list(self.regions.values())
        for other in others:
            other.close()
        for server in servers:
            server.stop()
