"""Hyperpilot: the `hyperpilot` command line (a REST client of the gateway) and the embedded stack."""

__version__ = "0.1.0"
