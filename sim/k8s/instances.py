"""Capacity of the instance types simulated nodes run on (vCPU, GiB, GPUs, EFA, Neuron)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capacity:
    cpu: int
    memory_gib: int
    gpus: int = 0
    efa: int = 0
    neuron: int = 0


CAPACITY = {
    "p5.48xlarge": Capacity(192, 2048, 8, 32),
    "p5e.48xlarge": Capacity(192, 2048, 8, 32),
    "p5en.48xlarge": Capacity(192, 2048, 8, 16),
    "p4d.24xlarge": Capacity(96, 1152, 8, 4),
    "p4de.24xlarge": Capacity(96, 1152, 8, 4),
    "p6-b200.48xlarge": Capacity(192, 2048, 8, 8),
    "g5.xlarge": Capacity(4, 16, 1),
    "g5.2xlarge": Capacity(8, 32, 1),
    "g5.4xlarge": Capacity(16, 64, 1),
    "g5.8xlarge": Capacity(32, 128, 1, 1),
    "g5.12xlarge": Capacity(48, 192, 4, 1),
    "g5.16xlarge": Capacity(64, 256, 1, 1),
    "g5.24xlarge": Capacity(96, 384, 4, 1),
    "g5.48xlarge": Capacity(192, 768, 8, 1),
    "g6.xlarge": Capacity(4, 16, 1),
    "g6.12xlarge": Capacity(48, 192, 4, 1),
    "g6.48xlarge": Capacity(192, 768, 8, 1),
    "g6e.xlarge": Capacity(4, 32, 1),
    "g6e.12xlarge": Capacity(48, 384, 4, 1),
    "g6e.48xlarge": Capacity(192, 1536, 8, 4),
    "trn1.32xlarge": Capacity(128, 512, 0, 8, 16),
    "trn1n.32xlarge": Capacity(128, 512, 0, 16, 16),
    "trn2.48xlarge": Capacity(192, 2048, 0, 16, 16),
    "inf2.48xlarge": Capacity(192, 768, 0, 0, 12),
    "c5.large": Capacity(2, 4),
    "c5.xlarge": Capacity(4, 8),
    "c5.2xlarge": Capacity(8, 16),
    "c5.4xlarge": Capacity(16, 32),
    "m5.large": Capacity(2, 8),
    "m5.xlarge": Capacity(4, 16),
    "m5.2xlarge": Capacity(8, 32),
    "m5.4xlarge": Capacity(16, 64),
    "m5.12xlarge": Capacity(48, 192),
    "t3.medium": Capacity(2, 4),
    "t3.large": Capacity(2, 8),
}

_SIZES = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "12xlarge": 48}


def capacity(instance_type: str) -> Capacity:
    """Known types exactly; unknown ones by their size suffix (general purpose, no accelerators)."""
    base = instance_type.removeprefix("ml.")
    if base in CAPACITY:
        return CAPACITY[base]
    size = base.rsplit(".", 1)[-1]
    cpu = _SIZES.get(size, 4)
    return Capacity(cpu, cpu * 4)
