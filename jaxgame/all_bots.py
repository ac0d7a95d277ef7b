"""Every scripted player by name: ``BOTS[name](key, state, mask) -> int32[8]``.

``jaxgame.bots``' heuristic bots (``random``, ``greedy``, ``expert``, ``expert_public``) and
``jaxgame.search_bot``'s ``search``, which tries its board moves in the game's combat first. ``SEAT_GATED``: the
bots that decide only for the seats whose mask has a legal action, so a table passes them only their own seats'
masks (``agents.arena.tables``); the heuristic bots decide every seat whatever the masks.
"""

from __future__ import annotations

from jaxgame import bots, search_bot

BOTS = {**bots.BOTS, "search": search_bot.search_policy}
SEAT_GATED = search_bot.SEAT_GATED


def decision_masks(name: str, mask, plays):
    """The legal masks bool[..., 8, A] the bot ``name`` is given: a seat-gated bot's only on the seats it plays
    (``plays`` bool[..., 8]; the others all False, where it does no work), which leaves its actions there
    unchanged; every other bot's on every seat."""
    return mask & plays[..., None] if name in SEAT_GATED else mask


__all__ = ["BOTS", "SEAT_GATED", "decision_masks"]
