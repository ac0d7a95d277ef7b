"""Command-line entry points: ``python -m experiments.<name>``.

They train, evaluate and plot, so they need the ``train`` extra: ``pip install "jaxgame[train]"``.
"""

import importlib.util as _util

_MISSING = [
    name
    for name in ("optax", "orbax.checkpoint", "tensorboardX", "tqdm", "matplotlib", "openskill", "PIL")
    if _util.find_spec(name.split(".")[0]) is None
]
if _MISSING:
    raise SystemExit(
        f"the jaxgame command-line tools need the train extra (missing: {', '.join(_MISSING)}): "
        'pip install "jaxgame[train]" (from a checkout: pip install -e ".[train]")'
    )
