"""Fixtures of the features adapter tests: the simulated AWS with its Kubernetes emulator (the
dependency suite's), and one ACTIVE EKS cluster for the module."""

from __future__ import annotations

from typing import Any

import pytest

from sim.aws import SimulatedAws
from tests.cluster_dependencies.conftest import make_eks_cluster, sim

__all__ = ["sim"]


@pytest.fixture(scope="module")
def eks(sim: SimulatedAws) -> dict[str, Any]:
    return make_eks_cluster(sim)
