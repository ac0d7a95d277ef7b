"""The game in other libraries' APIs (optional extras).

* ``single_seat``: one learning seat against 7 opponents (bots, baselines, saved runs) as two jitted functions;
* ``gymnasium_env``: that seat as a Gymnasium env, registered as ``jaxgame/AutoChess-v0`` when Gymnasium is
  installed (``pip install "jaxgame[gymnasium]"``), and a batch of them as a Gymnasium ``VectorEnv``;
* ``pettingzoo_env``: the 8 seats for PettingZoo (``pip install "jaxgame[pettingzoo]"``): ``parallel_env()``,
  ``env()`` / ``raw_env()`` (the AEC form), ``state()`` for centralised critics;
* ``sb3_vec_env``: N games x the learner seats as one Stable-Baselines3 ``VecEnv`` (``make_sb3_vec_env``), one
  compiled call a step, ``action_masks()`` for sb3-contrib's ``MaskablePPO`` (``pip install "jaxgame[sb3]"``);
* ``jaxmarl_env``: a JaxMARL-style multi-agent view, pure JAX (no extra).
"""

from __future__ import annotations

from jaxgame.gymnasium_registration import ENV_ID, register

register()  # idempotent: ``import jaxgame`` has done it already where Gymnasium is installed

__all__ = ["ENV_ID", "register"]
