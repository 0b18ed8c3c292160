"""The simulated world the embedded default and the tests run against: the simulated AWS,
and the Kubernetes emulator behind the KubeHooks seam when one is given."""

from __future__ import annotations

from sim.aws import SimulatedAws
from sim.interfaces import KubeHooks
from sim.profile import TimeProfile, get_profile


class World:
    """Start and stop the simulated world as one thing."""

    def __init__(
        self,
        profile: TimeProfile | str = "fast",
        host: str = "127.0.0.1",
        aws_port: int = 0,
        kube: KubeHooks | None = None,
        region: str = "us-east-1",
    ) -> None:
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.kube = kube
        self.aws = SimulatedAws(self.profile, host=host, port=aws_port, kube=kube, region=region)

    @property
    def aws_endpoint_url(self) -> str:
        return self.aws.endpoint_url

    def start(self) -> World:
        self.aws.start()
        return self

    def stop(self) -> None:
        self.aws.stop()

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
