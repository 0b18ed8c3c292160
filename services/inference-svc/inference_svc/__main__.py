"""`python -m inference_svc`: managed and self-managed inference endpoints, routers, autoscaling."""

from __future__ import annotations

import shared.slim  # noqa: F401  (first: before nats and structlog are imported)

# isort: split

from inference_svc.bootstrap import SERVICE
from shared.service import run


def main() -> None:
    run(SERVICE)


if __name__ == "__main__":
    main()
