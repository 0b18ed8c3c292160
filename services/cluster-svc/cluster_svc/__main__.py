"""`python -m cluster_svc`: EKS, HyperPod, instance groups, nodes, features and storage."""

from __future__ import annotations

import shared.slim  # noqa: F401  (first: before nats and structlog are imported)

# isort: split

import asyncio

from cluster_svc.bootstrap import COMPANIONS, NAME, SUBJECTS, handlers
from shared.config import get_settings
from shared.service import serve


def main() -> None:
    asyncio.run(serve(NAME, SUBJECTS, handlers, get_settings(), COMPANIONS))


if __name__ == "__main__":
    main()
