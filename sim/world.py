"""The simulated world the embedded default and the tests run against: the simulated AWS, and
the Kubernetes emulator behind the KubeHooks seam (one API server per ACTIVE EKS cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.aws import SimulatedAws
from sim.interfaces import KubeHooks
from sim.profile import TimeProfile, get_profile

if TYPE_CHECKING:
    from sim.k8s.world import KubeWorld


class World:
    """Start and stop the simulated world as one thing.

    `kube` plugs in any KubeHooks; with `kubernetes=True` and no `kube`, the world starts the
    project's emulator (sim.k8s) and closes it on stop. Neither: EKS clusters have no API server.
    """

    def __init__(
        self,
        profile: TimeProfile | str = "fast",
        host: str = "127.0.0.1",
        aws_port: int = 0,
        kube: KubeHooks | None = None,
        region: str = "us-east-1",
        *,
        kubernetes: bool = False,
        regions: tuple[str, ...] = (),
    ) -> None:
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self._owned_kube: KubeWorld | None = None
        if kube is None and kubernetes:
            from sim.k8s.world import KubeWorld

            self._owned_kube = KubeWorld(self.profile, host=host, region=region)
            kube = self._owned_kube
        self.kube = kube
        self.aws = SimulatedAws(
            self.profile, host=host, port=aws_port, kube=kube, region=region, regions=regions
        )

    @property
    def aws_endpoint_url(self) -> str:
        return self.aws.endpoint_url

    def start(self) -> World:
        self.aws.start()
        return self

    def stop(self) -> None:
        self.aws.stop()
        if self._owned_kube is not None:
            self._owned_kube.close()

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
