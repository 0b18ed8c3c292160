"""Resource quantities (`500m`, `16Gi`, `1e9`) as numbers, for scheduling arithmetic."""

from __future__ import annotations

import re
from typing import Any

_SUFFIX = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
# apimachinery pkg/api/resource/quantity.go: splitRE and ErrFormatWrong's text
UPSTREAM_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{UPSTREAM_PATTERN}'"
_RE = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:([eE][+-]?[0-9]+)|([a-zA-Z]*))$")


def parse(value: Any) -> float:
    """A quantity as a number; ValueError (upstream's ErrFormatWrong text) for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _RE.match(value) if isinstance(value, str) else None
    if not m or (m.group(3) or "") not in _SUFFIX:
        raise ValueError(FORMAT_WRONG)
    if m.group(2):
        return float(m.group(1) + m.group(2))
    return float(m.group(1)) * _SUFFIX[m.group(3) or ""]


def pod_requests(spec: dict[str, Any]) -> dict[str, float]:
    """What a pod asks the scheduler for: max(sum of containers, any init container).

    Extended resources given only as limits count as requests, as the API server defaults them.
    """
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        for name, qty in _container_requests(c).items():
            total[name] = total.get(name, 0.0) + qty
    for c in spec.get("initContainers") or []:
        for name, qty in _container_requests(c).items():
            total[name] = max(total.get(name, 0.0), qty)
    return total


def _container_requests(container: dict[str, Any]) -> dict[str, float]:
    resources = container.get("resources") or {}
    requests = dict(resources.get("requests") or {})
    for name, qty in (resources.get("limits") or {}).items():
        requests.setdefault(name, qty)
    out = {}
    for name, qty in requests.items():
        try:
            out[name] = parse(qty)
        except ValueError:
            continue
    return out
