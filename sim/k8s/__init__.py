"""A Kubernetes API emulator for the simulated world: one HTTPS API server per simulated EKS
cluster, spoken to by the unmodified `kubernetes` client and kubectl, with simulated controllers
and operators behind it."""

from __future__ import annotations

from sim.k8s.auth import make_token
from sim.k8s.facts import ClusterFacts, NodeGroup
from sim.k8s.server import ApiServer
from sim.k8s.world import KubeWorld

__all__ = ["ApiServer", "ClusterFacts", "KubeWorld", "NodeGroup", "make_token"]
