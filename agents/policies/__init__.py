"""Saved policies: load a run's or a shipped baseline's network and parameters, export them with ``jax.export``."""
