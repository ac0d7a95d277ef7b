"""The fights of a game's fight steps, tick by tick, as the game fought them (issue 44).

A game's fights run inside the ``env.step`` of a round's last decision step (``is_fight_step``), on the
boards the seats have *after* that step's actions. So a step's fights are a function of the state before
the step and the step's actions: :func:`fights_of_step` runs the game's own pieces
(``AutoChessEnv.decision_step`` -> ``prepare_fights``, i.e. ``rounds.plan_fights``) to get the pairing,
the two boards of every combat slot and the fight key, gives slot ``s`` the key
``fold_in(plan.key, s)`` as ``rounds.run_fights`` does, and records each active slot with
``jaxgame.combat.record_fight``: the same boards and key, so the same outcome as the game's
(``tests/test_replay_fights.py`` checks it against the game's ``FightResult`` and its life changes).

>>> fights = fights_of_step(game, state, actions)   # [] unless is_fight_step(game, state)
>>> by_step = fights_of_game(game, states, actions)  # {step: [fight, ...]} of a whole game, stacked [T] inputs
>>> warm_up(game, state)                              # compile both programs ahead of the first fight

Every fight of a call (a step, or a whole game) is recorded by one compiled program, ``jit(vmap(
record_fight))`` over :data:`FIGHTS_PER_CALL` fights (padded with empty boards), compiled once per
rules' ``max_combat_ticks`` and units per side (``MAX_LEVEL``, or 24 for a board beyond the rules).

A fight is a JSON-ready dict of Python ints, lists and strings (:func:`fight_record`, fields in
docs/replays.md): the seats, the fighters that exist (not all 48) with species, stars, max hp, max mana and
fighter index, the outcome, the life damage it causes, x, y, hp and mana per fighter and frame for the
``ticks + 1`` frames the fight lasts (frame 0 is the start, frame t + 1 the state after tick t), and the
events: every basic attack and ability cast, with its tick, its fighter and its target.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from jaxgame import combat, rounds
from jaxgame import constants as C

#: Fights recorded per call of the compiled recorder; a batch is padded with empty boards up to a multiple
#: (empty vs empty is decided at tick 0, but under ``vmap`` the padding still runs ``max_ticks`` ticks).
FIGHTS_PER_CALL = 16
#: ``FightResult`` fields, in the order of a record's ``result``.
RESULT_FIELDS = ("winner", "home_survivors", "away_survivors", "home_damage", "away_damage", "ticks")
KINDS = ("pve", "pvp", "ghost")
#: ``combat.FightReplay`` fields :func:`record_fights` keeps
REPLAY_FIELDS = (
    "x", "y", "hp", "mana", "alive", "max_hp", "max_mana", "species", "stars", "team", "action", "target"
)  # fmt: skip


def is_fight_step(game: jaxgame.AutoChessEnv, state) -> bool | np.ndarray:
    """Whether the fights run in the ``env.step`` from ``state`` (the round's last decision step), on the
    host: a Python bool for one game, bool[...] for ``state`` with leading batch axes. Mirrors
    ``jaxgame.game.fight_due``."""
    due = np.asarray(state.step_in_round) == game.config.steps_per_round - 1
    return bool(due) if due.ndim == 0 else due


def _typed_key(key) -> jax.Array:
    """A typed PRNG key from a typed one or its key data (uint32[2], as host copies of states hold it)."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    return key if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else jax.random.wrap_key_data(key)


@functools.partial(jax.jit, static_argnums=0)
def _plan_step(game: jaxgame.AutoChessEnv, state, actions):
    """The fight step's plan as the game makes it: (FightPlan with [8] slots, slot keys' data uint32[8, 2],
    the round int32[]). ``decision_step`` and ``prepare_fights`` are the env's own (``AutoChessEnv._step_impl``);
    slot ``s``'s key is ``fold_in(plan.key, s)`` (``rounds.run_fights``)."""
    state, fight_key, _, _ = game.decision_step(state, actions)
    plan = game.prepare_fights(state, fight_key)
    slot_keys = jax.vmap(lambda s: jax.random.fold_in(plan.key, s))(jnp.arange(C.NUM_PLAYERS))
    return plan.replace(key=jax.random.key_data(plan.key)), jax.random.key_data(slot_keys), state.round


def plan_of_step(game: jaxgame.AutoChessEnv, state, actions):
    """Host (numpy) copy of :func:`_plan_step` for one game: ``state`` the GameState before the step (typed
    key or key data), ``actions`` int32[8]."""
    state = state.replace(key=_typed_key(state.key))
    plan, slot_keys, round_ = _plan_step(game, state, jnp.asarray(actions, jnp.int32))
    return jax.tree.map(np.asarray, plan), np.asarray(slot_keys), int(round_)


@functools.cache
def _recorder(max_ticks: int, max_units: int):
    """jit(vmap(record_fight)) for static ``max_ticks`` and ``max_units``: boards int32[N, 24] x 4, key data
    uint32[N, 2] -> (FightResult of int32[N], FightReplay with a leading [N])."""
    record = functools.partial(combat.record_fight, max_ticks=max_ticks, max_units=max_units)
    return jax.jit(jax.vmap(record))


def _units_per_side(species: np.ndarray, stars: np.ndarray) -> int:
    """The most occupied cells of a board in ``species``/``stars`` int32[N, 24] (combat's notion of a unit)."""
    occupied = (species >= 0) & (stars >= 1)
    return int(occupied.sum(axis=-1).max(initial=0))


def record_fights(home_species, home_stars, away_species, away_stars, keys, max_ticks: int):
    """``combat.record_fight`` of N fights on the host: boards int32[N, 24], keys' data uint32[N, 2].

    Runs in calls of :data:`FIGHTS_PER_CALL` fights (the last padded with empty boards) of one compiled
    program. Simulates ``MAX_LEVEL`` units a side (exact for every board the rules allow), or 24 when a
    board holds more, so the outcome is the rules' for any board, as the game's is. Returns (dict of
    ``RESULT_FIELDS`` -> int32[N], dict of numpy ``FightReplay`` fields with a leading [N]).
    """
    boards = [
        np.asarray(b, np.int32).reshape(-1, C.BOARD_CELLS) for b in (home_species, home_stars, away_species, away_stars)
    ]
    keys = np.asarray(keys, np.uint32).reshape(-1, 2)
    n = keys.shape[0]
    most = max(_units_per_side(boards[0], boards[1]), _units_per_side(boards[2], boards[3]))
    record = _recorder(int(max_ticks), C.MAX_LEVEL if most <= C.MAX_LEVEL else combat.HALF)
    padded = -(-n // FIGHTS_PER_CALL) * FIGHTS_PER_CALL
    fill = [(-1 if i % 2 == 0 else 0) for i in range(4)]
    boards = [np.concatenate([b, np.full((padded - n, C.BOARD_CELLS), f, np.int32)]) for b, f in zip(boards, fill)]
    keys = np.concatenate([keys, np.zeros((padded - n, 2), np.uint32)])
    parts = []
    for lo in range(0, padded, FIGHTS_PER_CALL):
        chunk = slice(lo, lo + FIGHTS_PER_CALL)
        parts.append(jax.device_get(record(*[b[chunk] for b in boards], keys[chunk])))
    results, replays = (jax.tree.map(lambda *xs: np.concatenate(xs)[:n], *[p[i] for p in parts]) for i in (0, 1))
    return {f: getattr(results, f) for f in RESULT_FIELDS}, {f: getattr(replays, f) for f in REPLAY_FIELDS}


def life_damage(round_: int, winner: int, home_survivors: int, away_survivors: int) -> tuple[int, int]:
    """(home, away) life damage of a fight by the rules (``rounds.apply_fight_results``): a side that lost or
    drew loses ``(round + 1) // 2`` plus the enemy's survivors, else 0; the life actually lost stops at the
    seat's life."""
    base = (round_ + 1) // 2
    home = base + away_survivors if winner in (1, 2) else 0
    away = base + home_survivors if winner in (0, 2) else 0
    return home, away


def _slot_fights(plan, slot_keys: np.ndarray, round_: int, rules) -> list[dict]:
    """The active slots of one step's host plan as fight headers (no outcome or frames yet), slot order; ``rules``:
    the game's ``GameConfig``."""
    creeps = int(rounds.pve_index_table(rules)[min(round_, rules.max_rounds + 1)])
    fights = []
    for slot in np.flatnonzero(plan.active):
        opponent, ghost = int(plan.opponent[slot]), int(plan.ghost_source[slot])
        kind = "pve" if plan.is_pve else ("pvp" if opponent >= 0 else "ghost")
        fights.append(
            dict(
                round=round_,
                slot=int(slot),
                kind=kind,
                home=int(slot),
                away={"pve": None, "pvp": opponent, "ghost": ghost}[kind],
                creeps=creeps if kind == "pve" else None,
                key=[int(k) for k in slot_keys[slot]],
                boards=[plan.home_species[slot], plan.home_stars[slot], plan.away_species[slot], plan.away_stars[slot]],
            )
        )
    return fights


def fight_record(header: dict, result: dict, replay: dict, i: int) -> dict:
    """Fight ``i`` of a :func:`record_fights` batch as a JSON-ready dict (fields in docs/replays.md):
    ``header`` from the plan (seats, kind, round, key), only the fighters that exist and only the
    ``ticks + 1`` frames the fight lasts."""
    out = {k: v for k, v in header.items() if k != "boards"}
    res = {f: int(result[f][i]) for f in RESULT_FIELDS}
    home, away = life_damage(header["round"], res["winner"], res["home_survivors"], res["away_survivors"])
    fighters = np.flatnonzero(replay["species"][i] >= 0)
    frames = slice(0, res["ticks"] + 1)
    column = np.full(combat.NUM_FIGHTERS, -1)
    column[fighters] = np.arange(len(fighters))
    action = replay["action"][i, : res["ticks"]][:, fighters]  # int32[ticks, n]
    ticks, units = np.nonzero(action)
    out.update(
        result=res,
        life_damage={"home": home, "away": away if header["kind"] == "pvp" else None},
        units={
            "fighter": fighters.tolist(),
            "species": replay["species"][i, fighters].tolist(),
            "stars": replay["stars"][i, fighters].tolist(),
            "max_hp": replay["max_hp"][i, fighters].tolist(),
            "max_mana": replay["max_mana"][i, fighters].tolist(),
        },
        frames={f: replay[f][i, frames][:, fighters].tolist() for f in ("x", "y", "hp", "mana")},
        events=[
            [int(t), int(u), int(action[t, u]), int(column[replay["target"][i, t, fighters[u]]])]
            for t, u in zip(ticks, units)
        ],
    )
    return out


def _record_headers(game: jaxgame.AutoChessEnv, headers: list[dict]) -> list[dict]:
    if not headers:
        return []
    boards = [np.stack([h["boards"][j] for h in headers]) for j in range(4)]
    keys = np.asarray([h["key"] for h in headers], np.uint32)
    result, replay = record_fights(*boards, keys, game.config.max_combat_ticks)
    return [fight_record(h, result, replay, i) for i, h in enumerate(headers)]


def _host_state(state):
    """``state`` with its key as key data (numpy leaves stack; typed keys do not)."""
    key = state.key
    if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        state = state.replace(key=jax.random.key_data(key))
    return state


def warm_up(game: jaxgame.AutoChessEnv, state) -> None:
    """Compile what :func:`fights_of_step` runs for ``game`` (the step's plan from ``state``, a GameState of one
    game, and the recorder of the rules' fights) by running both once and throwing the results away."""
    plan_of_step(game, state, np.zeros(C.NUM_PLAYERS, np.int32))
    empty = np.full((1, C.BOARD_CELLS), -1, np.int32), np.zeros((1, C.BOARD_CELLS), np.int32)
    record_fights(*empty, *empty, np.zeros((1, 2), np.uint32), game.config.max_combat_ticks)


def fights_of_step(game: jaxgame.AutoChessEnv, state, actions) -> list[dict]:
    """The fights of the ``game.step(state, actions)`` of one game, tick by tick (:func:`fight_record`
    dicts, slot order), or [] when no fight runs in that step (:func:`is_fight_step`).

    ``state``: the GameState *before* the step (its PRNG key typed or as key data); ``actions`` int32[8],
    the step's actions (the fights use the boards after them). The same state and actions give identical
    dicts.
    """
    return fights_of_game(
        game, jax.tree.map(lambda x: np.asarray(x)[None], _host_state(state)), np.asarray(actions)[None]
    ).get(0, [])


def fights_of_game(game: jaxgame.AutoChessEnv, states, actions) -> dict[int, list[dict]]:
    """The fights of every fight step of a sequence of steps: ``states`` GameState stacked [T] or [T + 1] (the
    state before step t; a last row, e.g. ``record.GameTrace``'s final state, is ignored; keys as key data or
    typed), ``actions`` int32[T, 8]. Returns {t: [fight, ...]} for the fight steps t (in order). All the fights
    go through one compiled recorder (:func:`record_fights`)."""
    actions = np.asarray(actions, np.int32)
    states = jax.tree.map(lambda x: x[: actions.shape[0]], _host_state(states))
    steps = np.flatnonzero(np.atleast_1d(is_fight_step(game, states)))
    headers, owner = [], []
    for t in steps:
        plan, slot_keys, round_ = plan_of_step(game, jax.tree.map(lambda x, t=t: x[t], states), actions[t])
        step_fights = _slot_fights(plan, slot_keys, round_, game.config)
        headers += step_fights
        owner += [int(t)] * len(step_fights)
    by_step = {int(t): [] for t in steps}
    for t, fight in zip(owner, _record_headers(game, headers)):
        by_step[t].append(fight)
    return by_step


def as_json_list(by_step: dict[int, list[dict]]) -> list[dict]:
    """:func:`fights_of_game`'s fights as one JSON list, by step then slot, each with its ``step`` first."""
    return [{"step": t, **fight} for t in sorted(by_step) for fight in by_step[t]]
