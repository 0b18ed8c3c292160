"""`python -m gateway`: the REST API and UI on port 3099."""

from gateway.app import main

main()
