"""The observation layouts' versions: what a policy saved, exported or served outside JAX was trained to read.

A policy trained on one layout reads another's numbers as nonsense and still returns actions, so every export
records the version of its observation kind and every loader outside the training stack refuses, in one line, an
observation declared with another. ``LAYOUT_VERSIONS`` is bumped by hand when a layout changes;
``layout_fingerprint`` hashes what defines each layout (block offsets and sizes, frame geometry, tile atlas, action
count) and ``tests/test_onnx_export.py`` pins each version to its fingerprint, so a layout that changes without a
new version fails the suite.
"""

from __future__ import annotations

import hashlib
import json

from jaxgame import constants as C
from jaxgame import observation as obs
from jaxgame import packing, render

#: observation kind -> its layout's version (``TrainConfig.obs``: vector, pixels, oracle)
LAYOUT_VERSIONS = {"vector": 1, "pixels": 1, "oracle": 1}


def layout_description(kind: str) -> dict:
    """What defines the layout of observation ``kind`` (json-able)."""
    if kind not in LAYOUT_VERSIONS:
        raise ValueError(f"unknown observation kind {kind!r}; expected one of {sorted(LAYOUT_VERSIONS)}")
    actions = {
        "num_actions": C.NUM_ACTIONS,
        "buy": C.ACTION_BUY,
        "reroll": C.ACTION_REROLL,
        "buy_xp": C.ACTION_BUY_XP,
        "lock": C.ACTION_LOCK,
        "sell": C.ACTION_SELL,
        "place": C.ACTION_PLACE,
        "recall": C.ACTION_RECALL,
    }
    if kind == "pixels":
        atlas = hashlib.sha256(render.RENDER_ATLAS_PACKED.tobytes()).hexdigest()
        return {
            "kind": kind,
            "frame": [packing.FRAME_H, packing.FRAME_W, packing.PACKED_W],
            "tile": packing.TILE,
            "atlas_sha256": atlas,
            "actions": actions,
        }
    description = {
        "kind": "vector",
        "blocks": {name: list(span) for name, span in obs.OBS_LAYOUT.items()},
        "size": obs.OBS_SIZE,
        "unit_features": obs.UNIT_FEATURES,
        "opponent_features": obs.OPPONENT_FEATURES,
        "actions": actions,
    }
    if kind == "oracle":
        description.update(kind=kind, oracle_seat_features=obs.ORACLE_SEAT_FEATURES, oracle_size=obs.ORACLE_SIZE)
    return description


def layout_fingerprint(kind: str) -> str:
    """The sha256 of ``layout_description(kind)`` (sorted keys, compact JSON)."""
    text = json.dumps(layout_description(kind), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def action_table() -> list[dict]:
    """The action ids' meaning, one entry a range: ``{"first", "last", "name", "argument"}`` (``argument``: what
    ``id - first`` counts, or None)."""
    return [
        {"first": C.ACTION_END_TURN, "last": C.ACTION_END_TURN, "name": "end_turn", "argument": None},
        {"first": C.ACTION_BUY, "last": C.ACTION_REROLL - 1, "name": "buy", "argument": "shop slot"},
        {"first": C.ACTION_REROLL, "last": C.ACTION_REROLL, "name": "reroll", "argument": None},
        {"first": C.ACTION_BUY_XP, "last": C.ACTION_BUY_XP, "name": "buy_xp", "argument": None},
        {"first": C.ACTION_LOCK, "last": C.ACTION_LOCK, "name": "lock", "argument": None},
        {
            "first": C.ACTION_SELL,
            "last": C.ACTION_PLACE - 1,
            "name": "sell",
            "argument": f"slot (0..{C.BENCH_SIZE - 1} bench, then {C.BOARD_CELLS} board cells)",
        },
        {
            "first": C.ACTION_PLACE,
            "last": C.ACTION_RECALL - 1,
            "name": "place",
            "argument": f"bench * {C.BOARD_CELLS} + board cell",
        },
        {"first": C.ACTION_RECALL, "last": C.NUM_ACTIONS - 1, "name": "recall", "argument": "board cell"},
    ]


__all__ = ["LAYOUT_VERSIONS", "action_table", "layout_description", "layout_fingerprint"]
