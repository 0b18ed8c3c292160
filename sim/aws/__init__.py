"""The simulated AWS: moto for what it covers, the project's own simulation for the rest,
one endpoint (see sim.aws.server)."""

from sim.aws.server import SimulatedAws

__all__ = ["SimulatedAws"]
