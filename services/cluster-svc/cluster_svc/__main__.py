"""`python -m cluster_svc`: EKS, HyperPod, instance groups, nodes, features and storage."""

from __future__ import annotations

import shared.slim  # noqa: F401  (first: before nats and structlog are imported)

# isort: split

from cluster_svc.bootstrap import SERVICE
from shared.service import run


def main() -> None:
    run(SERVICE)


if __name__ == "__main__":
    main()
