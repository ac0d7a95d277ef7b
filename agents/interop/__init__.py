"""The game in other libraries' APIs (optional extras).

* ``single_seat``: one learning seat against 7 opponents (bots, baselines, saved runs) as two jitted functions;
* ``gymnasium_env``: that seat as a Gymnasium env, registered as ``jaxgame/AutoChess-v0`` when Gymnasium is
  installed (``pip install "jaxgame[gymnasium]"``), and a batch of them as a Gymnasium ``VectorEnv``;
* ``pettingzoo_env``: the 8 seats as a PettingZoo ``ParallelEnv`` (``pip install "jaxgame[pettingzoo]"``);
* ``jaxmarl_env``: a JaxMARL-style multi-agent view, pure JAX (no extra).
"""

from __future__ import annotations

ENV_ID = "jaxgame/AutoChess-v0"


def register() -> None:
    """Register ``jaxgame/AutoChess-v0`` with Gymnasium (done on ``import agents.interop`` when Gymnasium is
    installed; the env's module is imported only when one is made); idempotent."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="agents.interop.gymnasium_env:AutoChessSingleSeatEnv",
                           vector_entry_point="agents.interop.gymnasium_env:AutoChessVectorEnv")


try:
    import gymnasium  # noqa: F401
except ImportError:  # the Gymnasium adapter is an optional extra
    pass
else:
    register()
