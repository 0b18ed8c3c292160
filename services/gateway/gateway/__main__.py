"""`python -m gateway`: the REST API and UI on port 3099."""

import shared.slim  # noqa: F401  (first: before nats and structlog are imported)

# isort: split

from gateway.app import main

main()
