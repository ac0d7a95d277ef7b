"""The names a CLI checks before it imports JAX: presets, pipeline presets, config fields, game rules and
the game's sizes.

They live in the code (``agents.presets``, ``agents.config``), whose import costs the whole of JAX (seconds on a
2-core CPU, tens of seconds under load), so ``cli_names.json`` beside this file carries a copy that the CLIs read
instead: a mistyped preset or ``--set`` key is answered from it at once, with the library's own message. The copy is
written from the code (``python -m experiments.names --write``) and ``tests/test_cli.py`` fails while it is stale
(``--check``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from pathlib import Path

NAMES_FILE = Path(__file__).with_name("cli_names.json")


@functools.cache
def names() -> dict:
    """``{"presets": [...], "pipelines": [...], "field_groups": {short name: group}, "groups": [...],
    "num_actions": 258, "num_players": 8, "difference": evaluate's default, "rank_points": [...],
    "ladder": {"current", "versions", "games", "seed", "fit_seed", "draws"}, "export_platforms": [...],
    "rules": the game rules' names, "table_bots": the bots a table holds by default,
    "recorded_obs": the observations experiments.record stores}``."""
    return json.loads(NAMES_FILE.read_text())


def generate() -> dict:
    """The same dict from the code itself (imports JAX)."""
    from agents.arena import ladder, significance, tables
    from agents.config import FIELD_GROUPS, GROUPS
    from agents.pipeline.recording import RECORDED_OBS
    from agents.policies.export import DEFAULT_PLATFORMS
    from agents.presets import PIPELINES, PRESETS
    from jaxgame import constants as C
    from jaxgame.config import GameConfig

    return {
        "presets": sorted(PRESETS),
        "pipelines": sorted(PIPELINES),
        "field_groups": dict(FIELD_GROUPS),
        "groups": list(GROUPS),
        "num_actions": C.NUM_ACTIONS,
        "num_players": C.NUM_PLAYERS,
        "difference": significance.DEFAULT_DIFFERENCE,
        "rank_points": list(significance.DEFAULT_RANK_POINTS),
        "ladder": {
            "current": ladder.CURRENT_LADDER,
            "versions": ladder.available(),
            "games": ladder.DEFAULT_GAMES,
            "seed": ladder.DEFAULT_SEED,
            "fit_seed": ladder.FIT_SEED,
            "draws": ladder.DEFAULT_DRAWS,
        },
        "export_platforms": list(DEFAULT_PLATFORMS),
        "rules": [f.name for f in dataclasses.fields(GameConfig)],
        "table_bots": list(tables.DEFAULT_BOTS),
        "recorded_obs": list(RECORDED_OBS),
    }


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--write"]:
        NAMES_FILE.write_text(json.dumps(generate(), indent=1) + "\n")
        return 0
    if argv == ["--check"]:
        stale = generate() != names()
        if stale:
            print(f"{NAMES_FILE} is stale: python -m experiments.names --write", file=sys.stderr)
        return int(stale)
    print("usage: python -m experiments.names --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
