"""Benchmarks run from a checkout, not installed (pyproject's packages.find leaves ``benchmarks`` out of the wheel;
tests/test_packaging.py checks it): ``python -m benchmarks.harness --what ...`` (throughput and memory, one module
per ``--what``), ``python -m benchmarks.compare_revisions`` (this tree's env against an earlier git revision) and
the standalone scripts beside them (``python benchmarks/NAME.py``). They import ``jaxgame``, ``agents`` and
``experiments.common``; nothing there imports ``benchmarks``."""
