"""Time profiles of the simulated world: how long simulated cloud work takes.

`real` follows what AWS documents (EKS 8-12 min, HyperPod ~15 min); `fast` scales it down for
tests and demos. Both the simulated AWS and the Kubernetes emulator read durations from here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TimeProfile:
    name: str
    eks_create: float
    eks_delete: float
    eks_addon_install: float
    hyperpod_create: float
    hyperpod_update: float
    hyperpod_delete: float
    node_boot: float
    node_replace: float
    node_reboot: float
    deep_health_check: float
    fsx_create: float
    nat_gateway_create: float
    pod_schedule: float
    image_pull: float
    container_start: float
    load_balancer_provision: float
    # how long one minute of a space's idle timeout lasts (jupyter-k8s counts real minutes)
    idle_minute: float = 60.0

    def scaled(self, factor: float) -> TimeProfile:
        values = {
            field: getattr(self, field) * factor
            for field in self.__dataclass_fields__
            if field != "name"
        }
        return replace(self, name=f"{self.name}x{factor:g}", **values)


REAL = TimeProfile(
    name="real",
    eks_create=600.0,
    eks_delete=300.0,
    eks_addon_install=60.0,
    hyperpod_create=900.0,
    hyperpod_update=600.0,
    hyperpod_delete=300.0,
    node_boot=420.0,
    node_replace=600.0,
    node_reboot=180.0,
    deep_health_check=1200.0,
    fsx_create=600.0,
    nat_gateway_create=90.0,
    pod_schedule=1.0,
    image_pull=30.0,
    container_start=5.0,
    load_balancer_provision=120.0,
)

FAST = TimeProfile(
    name="fast",
    eks_create=1.5,
    eks_delete=0.5,
    eks_addon_install=0.3,
    hyperpod_create=2.0,
    hyperpod_update=1.0,
    hyperpod_delete=0.5,
    node_boot=0.5,
    node_replace=1.0,
    node_reboot=0.5,
    deep_health_check=1.0,
    fsx_create=0.5,
    nat_gateway_create=0.3,
    pod_schedule=0.05,
    image_pull=0.1,
    container_start=0.05,
    load_balancer_provision=0.3,
    idle_minute=0.5,
)

PROFILES = {"real": REAL, "fast": FAST}


def get_profile(name: str) -> TimeProfile:
    """`real`, `fast`, or either scaled: `fast*0.5`, `real*0.1`."""
    base, _, factor = name.partition("*")
    try:
        profile = PROFILES[base]
    except KeyError:
        raise ValueError(f"unknown time profile {name!r}: use one of {sorted(PROFILES)}") from None
    return profile.scaled(float(factor)) if factor else profile
