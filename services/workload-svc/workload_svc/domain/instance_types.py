"""GPUs and EFA interfaces per HyperPod instance type (AWS's published specifications), used
when an instance group has no registered node to read its allocatable resources from."""

from __future__ import annotations

# instance type -> (NVIDIA GPUs, EFA interfaces)
ACCELERATORS: dict[str, tuple[int, int]] = {
    "ml.p6-b200.48xlarge": (8, 8),
    "ml.p5.48xlarge": (8, 32),
    "ml.p5e.48xlarge": (8, 32),
    "ml.p5en.48xlarge": (8, 16),
    "ml.p4d.24xlarge": (8, 4),
    "ml.p4de.24xlarge": (8, 4),
    "ml.g5.xlarge": (1, 0),
    "ml.g5.2xlarge": (1, 0),
    "ml.g5.4xlarge": (1, 0),
    "ml.g5.8xlarge": (1, 1),
    "ml.g5.12xlarge": (4, 1),
    "ml.g5.16xlarge": (1, 1),
    "ml.g5.24xlarge": (4, 1),
    "ml.g5.48xlarge": (8, 1),
    "ml.g6.xlarge": (1, 0),
    "ml.g6.12xlarge": (4, 1),
    "ml.g6.48xlarge": (8, 1),
    "ml.g6e.xlarge": (1, 0),
    "ml.g6e.12xlarge": (4, 1),
    "ml.g6e.48xlarge": (8, 4),
    "ml.trn1.32xlarge": (0, 8),
    "ml.trn1n.32xlarge": (0, 16),
    "ml.trn2.48xlarge": (0, 16),
}


def accelerators(instance_type: str | None) -> tuple[int, int] | None:
    return ACCELERATORS.get(instance_type or "")
