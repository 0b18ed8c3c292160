"""`python -m workload_svc`: training jobs, recipes, model downloads and their logs."""

from __future__ import annotations

import shared.slim  # noqa: F401  (first: before nats and structlog are imported)

# isort: split

from shared.service import run
from workload_svc.bootstrap import SERVICE


def main() -> None:
    run(SERVICE)


if __name__ == "__main__":
    main()
