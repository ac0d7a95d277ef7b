"""What a run keeps on disk: the owned run directory, orbax checkpoints, metrics.jsonl and recorded datasets."""
