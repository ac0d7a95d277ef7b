"""Behaviour cloning's pieces that are not the trainer: the split of a recording by game and the optimizer.

The loss is ``agents.losses.bc_loss``; the samples come from ``agents.recording`` (``agents.dataset`` on disk).

* ``split_by_game``: validation samples are whole games (every rotation, position and step of a game seed), never
  steps of a game that is also trained on: the steps of one game are strongly correlated, so a split by step would
  measure memory, not generalisation.
* ``make_optimizer``: AdamW (decoupled weight decay) after a global-norm clip, its learning rate warmed up linearly
  from 0 and decayed along a cosine to 0 (``learning_rate``): a fresh optimizer, as a phase starts.
"""

from __future__ import annotations

import numpy as np
import optax


def split_by_game(game: np.ndarray, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) sample indices, int64[...] each, ascending. ``game``: int[N], each sample's game;
    ``val_fraction`` in [0, 1): the share of the games (rounded, at least one when > 0) whose samples are held out,
    drawn with ``seed``. ``ValueError`` when no game would be left to train on."""
    game = np.asarray(game)
    if game.ndim != 1 or not np.issubdtype(game.dtype, np.integer):
        raise ValueError(f"game must be a 1-d int array, got {game.dtype} {game.shape}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    games = np.unique(game)
    held = 0 if val_fraction == 0 else max(1, int(round(val_fraction * games.size)))
    if held >= games.size:
        raise ValueError(f"val_fraction={val_fraction} of {games.size} game(s) leaves none to train on; record more "
                         "games or hold out fewer")
    val_games = np.random.default_rng(seed).choice(games, held, replace=False)
    val = np.isin(game, val_games)
    return np.flatnonzero(~val), np.flatnonzero(val)


def learning_rate(peak: float, warmup_steps: int, total_steps: int):
    """``step -> lr``: linear from 0 to ``peak`` over ``warmup_steps`` optimizer steps, then a cosine to 0 at
    ``total_steps`` (which includes the warmup), 0 after."""
    if not 0 <= warmup_steps < total_steps:
        raise ValueError(f"warmup_steps must be in [0, total_steps={total_steps}), got {warmup_steps}")
    return optax.warmup_cosine_decay_schedule(0.0, peak, warmup_steps, total_steps, end_value=0.0)


def make_optimizer(peak_lr: float, warmup_steps: int, total_steps: int, weight_decay: float,
                   max_grad_norm: float) -> optax.GradientTransformation:
    """Global-norm clip, then AdamW with ``learning_rate``'s schedule and decoupled ``weight_decay``."""
    return optax.chain(
        optax.clip_by_global_norm(max_grad_norm),
        optax.adamw(learning_rate(peak_lr, warmup_steps, total_steps), weight_decay=weight_decay),
    )


__all__ = ["learning_rate", "make_optimizer", "split_by_game"]
