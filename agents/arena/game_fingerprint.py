"""Whether the game still plays as it did: a fingerprint of fixed games of scripted bots.

A ladder's ratings (``agents.arena.ladder``) hold for the game they were fitted on. The game's source changes for
reasons that leave its play alone (formatting, a recorder, a new module), so its bytes (``ladder.game_pin``) say
too little; this fingerprint says what matters: :data:`GAMES` games of the bots :data:`SEATS` under given rules,
:data:`STEPS` decision steps from the seed :data:`SEED`, hashed from every step's actions, lives and ranks. Any
change to the rules' outcomes, the shop, the combat or the bots changes some action or life within those steps.

    fingerprint = game_fingerprint(rules)     # a sha256 hex string; the same on every backend that runs JAX
    fingerprint = remembered_fingerprint(rules)   # the same, kept on disk per game source, rules and JAX version

One compiled program (the games' steps in a ``lax.scan``); about 15-25 s on the 2-core CPU, most of it compiling.
The bots draw from JAX's random streams, so a JAX release that changed them would change the fingerprint too.
:func:`remembered_fingerprint` keeps each result in ``CACHE`` (``$JAXGAME_FINGERPRINT_CACHE``, else
``~/.cache/jaxgame/fingerprints``; ``JAXGAME_NO_CACHE=1`` turns it off), keyed by everything the games depend on:
the source of ``jaxgame`` and of this module, the rules and the JAX version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import jax
import numpy as np

import jaxgame
from jaxgame import bots

#: the bots at the fingerprint's table, by seat
SEATS = ("expert", "expert_public", "greedy", "random", "expert", "expert_public", "greedy", "random")
#: games played side by side
GAMES = 4
#: decision steps played (20 rounds of the default 12 steps; a game that ends restarts, as the env does)
STEPS = 240
#: where :func:`remembered_fingerprint` keeps its results
CACHE = Path(
    os.environ.get("JAXGAME_FINGERPRINT_CACHE")
    or os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "jaxgame", "fingerprints")
)
#: the master seed of the reset and the bots' draws (the fingerprint's; another seed plays other games)
SEED = 0


@functools.cache
def _program(rules_json: str):
    """``(seed) -> (actions int32[STEPS, GAMES, 8], life int32[STEPS, GAMES, 8], rank int32[STEPS, GAMES, 8],
    done bool[STEPS, GAMES])`` of the fingerprint's games under the rules (``GameConfig`` fields as sorted JSON),
    jitted once per rules."""
    venv = jaxgame.VecEnv(jaxgame.make("autochess", **json.loads(rules_json)), GAMES)
    policy = bots.mixed_policy(SEATS)

    @jax.jit
    def play(seed):
        reset_key, play_key = jax.random.split(jax.random.key(seed))
        states, ts = venv.reset(reset_key)

        def body(carry, key):
            states, ts = carry
            actions = jax.vmap(policy)(jax.random.split(key, GAMES), states, ts.action_mask)
            states, ts = venv.step(states, actions)
            return (states, ts), (actions, ts.info["life"], ts.info["rank"], ts.done)

        return jax.lax.scan(body, (states, ts), jax.random.split(play_key, STEPS))[1]

    return play


def game_fingerprint(rules: dict | None = None, seed: int = SEED) -> str:
    """The sha256 (hex) of the fingerprint's games under ``rules`` (``GameConfig`` fields; None: the defaults) from
    ``seed``: every step's actions, lives, ranks and game ends, as int32 little-endian bytes in that order."""
    play = _program(json.dumps(rules or {}, sort_keys=True))
    digest = hashlib.sha256()
    for array in jax.device_get(play(np.int32(seed))):
        digest.update(np.ascontiguousarray(np.asarray(array).astype("<i4")).tobytes())
    return digest.hexdigest()


def game_source_sha256() -> str:
    """The sha256 of the game's source: every ``jaxgame/*.py``, by name and bytes (``ladder.game_pin``)."""
    digest = hashlib.sha256()
    for path in sorted(Path(jaxgame.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _key(rules: dict | None) -> str:
    """What the fingerprint depends on, hashed: the game's source (:func:`game_source_sha256`), this module's, the
    rules, the JAX version."""
    digest = hashlib.sha256(game_source_sha256().encode() + Path(__file__).read_bytes())
    digest.update(json.dumps(rules or {}, sort_keys=True).encode() + jax.__version__.encode())
    return digest.hexdigest()


def remembered_fingerprint(rules: dict | None = None) -> str:
    """:func:`game_fingerprint` of ``rules`` (seed :data:`SEED`), computed once per game source, rules and JAX
    version and kept in :data:`CACHE` (module docstring); an unreadable or unwritable cache is recomputed."""
    if os.environ.get("JAXGAME_NO_CACHE", "") not in ("", "0"):
        return game_fingerprint(rules)
    path = CACHE / f"{_key(rules)}.json"
    try:
        kept = json.loads(path.read_text())["fingerprint"]
        if isinstance(kept, str) and len(kept) == 64:
            return kept
    except (OSError, ValueError, KeyError, TypeError):
        pass
    fingerprint = game_fingerprint(rules)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"fingerprint": fingerprint, "rules": rules or {}, "jax": jax.__version__}))
        tmp.replace(path)
    except OSError:
        pass
    return fingerprint


__all__ = [
    "CACHE",
    "GAMES",
    "SEATS",
    "SEED",
    "STEPS",
    "game_fingerprint",
    "game_source_sha256",
    "remembered_fingerprint",
]
