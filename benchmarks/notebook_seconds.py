"""Seconds per code cell of a notebook, run top to bottom in this process: prints JSON.

    XDG_CACHE_HOME=$(mktemp -d) python benchmarks/notebook_seconds.py notebooks/training.ipynb   # cold, then again

Each code cell is executed in order in one namespace (IPython's display stubbed, as tests/test_notebooks.py does),
in a new temporary directory. Run it twice with the same empty ``XDG_CACHE_HOME`` to see what the library's
persistent compilation cache (``agents.utils.compile_cache``) saves on the second run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import types
from pathlib import Path


def main(argv=None) -> dict:
    notebook = Path((argv or sys.argv[1:])[0]).resolve()
    display = types.ModuleType("IPython.display")
    display.display = lambda *args, **kwargs: None
    display.Image = lambda data=None, filename=None: None
    display.IFrame = lambda src, width=None, height=None: None
    ipython = types.ModuleType("IPython")
    ipython.display, ipython.version_info = display, (9, 0)
    sys.modules.update({"IPython": ipython, "IPython.display": display})
    cells = ["".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    os.chdir(tempfile.mkdtemp())
    namespace, seconds, start = {}, [], time.perf_counter()
    for i, cell in enumerate(cells):
        began = time.perf_counter()
        exec(compile(cell, f"{notebook.name}[cell {i}]", "exec"), namespace)
        seconds.append(round(time.perf_counter() - began, 1))
    result = {"notebook": notebook.name, "total_s": round(time.perf_counter() - start, 1), "cells_s": seconds}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
