"""The training run: the chunked loop (``run.loop``), what a config builds, sweeps, logging and curves."""
