"""Simulated controllers: declarative rules on store events, delayed by the time profile."""
