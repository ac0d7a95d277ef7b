"""Command-line entry points: ``python -m experiments.<name>``."""
