"""`python -m workload_svc`: training jobs, recipes, model downloads and their logs."""

from __future__ import annotations

import shared.slim  # noqa: F401  (first: before nats and structlog are imported)

# isort: split

import asyncio

from shared.config import get_settings
from shared.service import serve
from workload_svc.bootstrap import COMPANIONS, NAME, SUBJECTS, handlers


def main() -> None:
    asyncio.run(serve(NAME, SUBJECTS, handlers, get_settings(), COMPANIONS))


if __name__ == "__main__":
    main()
