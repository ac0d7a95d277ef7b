"""A recorded game as an animated GIF (``python -m experiments.replay PLAYER --vs ... --out game.gif``): host code.

For each round of one seat's game: the seat's view (``jaxgame.render.render_rgb``: its board, bench, shop, life
and synergies) as it stood when the round's fight began, held ``round_ms``; then the seat's own fight, tick by tick
(``jaxgame.render.replay_shades``: home at the bottom, hp bars under the sprites, the units alive and the clock on
the right), one frame every ``every`` ticks. The frames are the same 4-colour palette as the viewer's, so a whole
game stays small (a 40-round game at scale 2 and ``every=4`` is about 1 MB).
"""

from __future__ import annotations

import types
from pathlib import Path

import jax
import numpy as np

from agents.replays import fights as fights_lib
from jaxgame import constants as C
from jaxgame import packing, render


def _fight_replay(fight: dict) -> types.SimpleNamespace:
    """A fight dict of ``agents.replays.fights`` (its fighters only) as the arrays ``render.replay_shades`` reads:
    x, y, hp, alive [T, 48]; species, stars, max_hp, team [48] (home = the first ``BOARD_CELLS`` units)."""
    units = 2 * C.BOARD_CELLS
    fighters = np.asarray(fight["units"]["fighter"], int)
    ticks = len(fight["frames"]["hp"])

    def per_unit(values, fill):
        out = np.full(units, fill, np.int32)
        out[fighters] = values
        return out

    def per_frame(name):
        out = np.zeros((ticks, units), np.int32)
        out[:, fighters] = np.asarray(fight["frames"][name], np.int32).reshape(ticks, len(fighters))
        return out

    hp = per_frame("hp")
    return types.SimpleNamespace(
        x=per_frame("x"),
        y=per_frame("y"),
        hp=hp,
        alive=hp > 0,
        species=per_unit(fight["units"]["species"], -1),
        stars=per_unit(fight["units"]["stars"], 1),
        max_hp=per_unit(fight["units"]["max_hp"], 1),
        team=(np.arange(units) >= C.BOARD_CELLS).astype(np.int32),
    )


def game_frames(trace, table, seat: int = 0, every: int = 4, scale: int = 2, rounds: int | None = None):
    """``[(uint8[H, W] shades, milliseconds)]``: the seat's view at each fight step and its own fight's frames
    (``render.replay_shades``, padded at the top to the view's height), for the first ``rounds`` fights (all by
    default). ``trace``: ``agents.replays.record.GameTrace``; ``table``: the game it was played with."""
    if every < 1 or scale < 1:
        raise ValueError(f"every and scale must be >= 1, got {every} and {scale}")
    if not 0 <= seat < C.NUM_PLAYERS:
        raise ValueError(f"seat must be in 0..{C.NUM_PLAYERS - 1}, got {seat}")
    by_step = fights_lib.fights_of_game(table, trace.states, trace.actions)
    steps = sorted(by_step)[:rounds]
    out = []
    for t in steps:
        out.append((render.render_shades(jax.tree.map(lambda x, t=t: x[t], trace.states), seat), 900))
        own = [f for f in by_step[t] if f["home"] == seat]
        for fight in own[:1]:
            shades = render.replay_shades(_fight_replay(fight), every=every)
            pad = np.zeros((len(shades), packing.FRAME_H - render.REPLAY_H, packing.FRAME_W), np.uint8)
            frames = np.concatenate([pad, shades], axis=1)
            out += [(f, 60) for f in frames[:-1]] + [(frames[-1], 700)]
    out.append((render.render_shades(jax.tree.map(lambda x: x[-1], trace.states), seat), 2500))  # the end
    merged = []  # consecutive equal frames as one, their times added (GIF players would show them so anyway)
    for frame, ms in out:
        if merged and np.array_equal(merged[-1][0], frame):
            merged[-1] = (frame, merged[-1][1] + ms)
        else:
            merged.append((frame, ms))
    return [(np.repeat(np.repeat(f, scale, axis=0), scale, axis=1), ms) for f, ms in merged]


def write_gif(path, frames) -> int:
    """Write ``game_frames``' frames as an animated GIF in the game's palette (``jaxgame.render.save_gif``, needs
    pillow); returns the file's bytes."""
    render.save_gif(path, [shades for shades, _ in frames], [ms for _, ms in frames])
    return Path(path).stat().st_size


__all__ = ["game_frames", "write_gif"]
