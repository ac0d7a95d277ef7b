"""Gold and experience: levelling, interest, streaks and round income."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C

#: XP needed to go from level L to L+1 (index L); 0 at the max level.
XP_TO_NEXT = np.array([0, 0, 2, 6, 10, 22, 34, 52, 72, 0], dtype=np.int32)
XP_COST_GOLD = 4
XP_PER_PURCHASE = 4
XP_PER_ROUND = 2
BASE_INCOME = 5
MAX_INTEREST = 5
MAX_STREAK_BONUS = 5
WIN_GOLD = 1


def add_xp(level: jnp.ndarray, xp: jnp.ndarray, amount) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Add XP and level up as often as it allows (``XP_TO_NEXT``); level 9 keeps 0 XP.

    Level 1 needs 0 XP, so a level-1 player levels up on its first XP.
    """
    need = jnp.asarray(XP_TO_NEXT)
    xp = xp + amount
    for _ in range(C.MAX_LEVEL):  # at most one level per pass; 8 passes suffice
        up = (level < C.MAX_LEVEL) & (xp >= need[level]) & ((need[level] > 0) | (xp > 0))
        xp = jnp.where(up, xp - need[level], xp)
        level = jnp.where(up, level + 1, level)
    xp = jnp.where(level >= C.MAX_LEVEL, 0, xp)
    return level, xp


def round_income(gold: jnp.ndarray, streak: jnp.ndarray) -> jnp.ndarray:
    """Gold gained at a round start: 5 + min(5, gold // 10) + min(5, |streak|)."""
    interest = jnp.minimum(MAX_INTEREST, gold // 10)
    streak_bonus = jnp.minimum(MAX_STREAK_BONUS, jnp.abs(streak))
    return BASE_INCOME + interest + streak_bonus


def update_streak(streak: jnp.ndarray, won: jnp.ndarray, lost: jnp.ndarray) -> jnp.ndarray:
    """Win: +1 (or restart at +1); loss: -1 (or restart at -1); draw: 0."""
    return jnp.where(won, jnp.maximum(streak, 0) + 1, jnp.where(lost, jnp.minimum(streak, 0) - 1, 0)).astype(jnp.int32)


def xp_fraction(level: jnp.ndarray, xp: jnp.ndarray) -> jax.Array:
    """float32 in [0, 1]: progress towards the next level (1 at the max level)."""
    need = jnp.asarray(XP_TO_NEXT)[level]
    return jnp.where(need > 0, xp / jnp.maximum(need, 1), 1.0).astype(jnp.float32)
