"""``gymnasium.make("jaxgame/AutoChess-v0")`` after ``import jaxgame`` alone.

Gymnasium 1.x has no plugin entry points: an env id exists once something registers it. ``import jaxgame`` does
so here when Gymnasium is installed. Registering imports nothing of the env itself: the entry points are strings,
resolved by ``gymnasium.make`` / ``gymnasium.make_vec``. The env is the single-seat adapter of the library
(``agents.interop.gymnasium_env``, installed with ``pip install "jaxgame[gymnasium]"``): it plays the 7 opponents
(bots or saved policies), which is the library's work, not the game's, so the game names it without importing it.
"""

from __future__ import annotations

import importlib.util

ENV_ID = "jaxgame/AutoChess-v0"
ENTRY_POINT = "agents.interop.gymnasium_env:AutoChessSingleSeatEnv"
VECTOR_ENTRY_POINT = "agents.interop.gymnasium_env:AutoChessVectorEnv"


def register() -> bool:
    """Register ``ENV_ID`` with Gymnasium when it is installed; idempotent. Returns whether the id is registered."""
    if importlib.util.find_spec("gymnasium") is None:
        return False
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT)
    return True
