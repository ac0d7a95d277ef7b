"""The training run: one run (``training``, its program ``train_program``), the chunk driver every run and sweep
shares (``chunks``), the checks before a run starts (``preflight``), Ctrl-C and SIGTERM (``signals``), what a config
builds (``build``), sweeps, logging and curves."""
