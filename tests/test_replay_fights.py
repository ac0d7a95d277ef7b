"""agents.replays.fights: the recorded fights of real games are the fights the game fought.

Short games of greedy bots (tiny rules: 2 decision steps a round, low life, short fights, PvE in rounds 1
and 5 so that PvP rounds, eliminations and ghost fights come early) are played through ``env.step`` in one
compiled rollout; every fight step's recorded fights are checked against the game's own ``FightResult``
(``prepare_fights`` + ``run_fights``, the pieces of ``env.step``'s fight phase) and against the life each
seat lost in that ``env.step``.
"""

from __future__ import annotations

import collections
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from agents.replays import fights as F
from jaxgame import bots, combat
from jaxgame import constants as C

RULES = dict(steps_per_round=2, max_rounds=12, starting_life=15, max_combat_ticks=150, pve_rounds=(1, 5))
STEPS = 24  # the whole 12 rounds
SEEDS = (0, 1, 2)


@functools.cache
def tiny_env():
    return jaxgame.make("autochess", **RULES)


@functools.cache
def _rollout():
    env = tiny_env()

    @jax.jit
    def run(key):
        state, ts = env.reset(key)

        def body(carry, t):
            state, ts = carry
            actions = bots.greedy_policy(jax.random.fold_in(key, t), state, ts.action_mask)
            nxt, nts = env.step(state, actions)
            before = state.replace(key=jax.random.key_data(state.key))
            return (nxt, nts), (before, actions, nts.done, nts.info["life"], nts.info["round"])

        return jax.lax.scan(body, (state, ts), jnp.arange(STEPS))[1]

    return run


@functools.cache
def game(seed: int):
    """numpy (states before each step [T], actions [T, 8], done [T], life after [T, 8], round after [T]) of one
    game of greedy bots, cut after its end (the env auto-resets)."""
    states, actions, done, life, round_ = jax.device_get(_rollout()(jax.random.key(seed)))
    end = int(np.flatnonzero(done)[0]) + 1 if done.any() else STEPS
    return jax.tree.map(lambda x: x[:end], (states, actions, done, life, round_))


@functools.cache
def recorded(seed: int):
    states, actions, *_ = game(seed)
    return F.fights_of_game(tiny_env(), states, actions)


@functools.partial(jax.jit, static_argnums=0)
def _games_fights(env, state, actions):
    """The game's own plan and FightResult [8] of the fight step from ``state`` (``env.step``'s pieces)."""
    state, fight_key, _, _ = env.decision_step(state, actions)
    plan = env.prepare_fights(state, fight_key)
    return plan.replace(key=jax.random.key_data(plan.key)), env.run_fights(plan)


def games_fights(seed: int, t: int):
    states, actions, *_ = game(seed)
    state = jax.tree.map(lambda x: x[t], states)
    state = state.replace(key=jax.random.wrap_key_data(state.key))
    return jax.device_get(_games_fights(tiny_env(), state, actions[t]))


def at(tree, t):
    return jax.tree.map(lambda x: x[t], tree)


def side_alive(frames_hp, fighters, side):
    """bool[frames]: some fighter of ``side`` (0 home, 1 away) has hp > 0 in each frame."""
    cols = (np.asarray(fighters) >= combat.HALF) == side
    return (np.asarray(frames_hp)[:, cols] > 0).any(axis=1)


def test_fight_steps_are_the_steps_that_end_a_round():
    env = tiny_env()
    for seed in SEEDS:
        states, _, done, _, round_after = game(seed)
        ends_round = done | (round_after != states.round)
        np.testing.assert_array_equal(F.is_fight_step(env, states), ends_round)
        assert F.is_fight_step(env, at(states, 1)) is True and F.is_fight_step(env, at(states, 0)) is False
        assert sorted(recorded(seed)) == np.flatnonzero(ends_round).tolist()


def test_recorded_fights_are_the_games_fights():
    """Slots, boards and every FightResult field equal the game's, and each seat's life change in env.step
    equals the life damage of its fight (capped at its life); the ghost's owner and idle seats lose none."""
    kinds = collections.Counter()
    for seed in SEEDS:
        states, _, _, life_after, _ = game(seed)
        for t, fights in recorded(seed).items():
            plan, result = games_fights(seed, t)
            assert [f["slot"] for f in fights] == np.flatnonzero(plan.active).tolist()
            life_before = states.players.life[t]
            expected_loss = np.zeros(C.NUM_PLAYERS, np.int64)
            for f in fights:
                s = f["slot"]
                kinds[f["kind"]] += 1
                assert f["round"] == states.round[t] and f["home"] == s
                assert f["result"] == {k: int(getattr(result, k)[s]) for k in F.RESULT_FIELDS}
                assert f["kind"] == ("pve" if plan.is_pve else "pvp" if plan.opponent[s] >= 0 else "ghost")
                assert f["away"] == {"pve": None, "pvp": plan.opponent[s], "ghost": plan.ghost_source[s]}[f["kind"]]
                units = np.asarray(f["units"]["fighter"])
                home_sp, home_st = plan.home_species[s], plan.home_stars[s]
                away_sp, away_st = plan.away_species[s], plan.away_stars[s]
                board_sp, board_st = np.concatenate([home_sp, away_sp]), np.concatenate([home_st, away_st])
                np.testing.assert_array_equal(units, np.flatnonzero((board_sp >= 0) & (board_st >= 1)))
                np.testing.assert_array_equal(f["units"]["species"], board_sp[units])
                np.testing.assert_array_equal(f["units"]["stars"], board_st[units])
                expected_loss[s] += f["life_damage"]["home"]
                if f["kind"] == "pvp":
                    expected_loss[f["away"]] += f["life_damage"]["away"]
                else:
                    assert f["life_damage"]["away"] is None
            np.testing.assert_array_equal(life_before - life_after[t], np.minimum(expected_loss, life_before))
    assert min(kinds[k] for k in F.KINDS) > 0, kinds  # the games exercise PvE, PvP and ghost fights


def test_frames_last_until_the_fight_ends_and_agree_with_its_outcome():
    max_ticks = RULES["max_combat_ticks"]
    outcomes = collections.Counter()
    for seed in SEEDS:
        for fights in recorded(seed).values():
            for f in fights:
                res, units = f["result"], f["units"]["fighter"]
                hp = np.asarray(f["frames"]["hp"])
                assert hp.shape == (res["ticks"] + 1, len(units))
                assert all(np.asarray(f["frames"][k]).shape == hp.shape for k in ("x", "y", "mana"))
                side = np.asarray(units) >= combat.HALF
                for tick, unit, kind, target in f["events"]:  # an alive unit acts on an alive enemy
                    assert 0 <= tick < res["ticks"] and kind in (combat.ACT_BASIC, combat.ACT_CAST)
                    assert hp[tick, unit] > 0 and hp[tick, target] > 0 and side[unit] != side[target]
                    cast = f["frames"]["mana"][tick][unit] >= f["units"]["max_mana"][unit]
                    assert cast == (kind == combat.ACT_CAST)
                assert f["events"] == sorted(f["events"]) and (res["ticks"] == 0 or f["events"])
                x, y = np.asarray(f["frames"]["x"]), np.asarray(f["frames"]["y"])
                for t in range(len(hp)):  # no two living units share a cell: the viewer never draws one on another
                    cells = x[t][hp[t] > 0] * C.GRID_ROWS + y[t][hp[t] > 0]
                    assert len(set(cells.tolist())) == len(cells)
                home, away = side_alive(hp, units, 0), side_alive(hp, units, 1)
                assert (hp[-1] > 0).sum() == res["home_survivors"] + res["away_survivors"]
                assert home[-1] == (res["home_survivors"] > 0) and away[-1] == (res["away_survivors"] > 0)
                assert (home[:-1] & away[:-1]).all()  # undecided before the last frame
                if res["winner"] == 2:
                    timeout = res["ticks"] == max_ticks and home[-1] and away[-1]
                    assert timeout or not (home[-1] or away[-1])
                else:
                    assert (home[-1], away[-1]) == ((True, False) if res["winner"] == 0 else (False, True))
                np.testing.assert_array_equal(hp[0], f["units"]["max_hp"])
                cell = np.asarray(units) % combat.HALF
                x0 = np.where(np.asarray(units) < combat.HALF, cell % C.BOARD_COLS, 7 - cell % C.BOARD_COLS)
                y0 = np.where(np.asarray(units) < combat.HALF, 2 - cell // C.BOARD_COLS, 3 + cell // C.BOARD_COLS)
                np.testing.assert_array_equal(f["frames"]["x"][0], x0)
                np.testing.assert_array_equal(f["frames"]["y"][0], y0)
                outcomes[res["winner"], res["ticks"] == max_ticks] += 1
    # home wins, away wins, wipe-outs and timeouts all occur in these games
    assert outcomes[0, False] and outcomes[1, False] and outcomes[2, True], outcomes


def test_a_steps_fights_are_deterministic_json_and_do_not_depend_on_the_batch():
    env = tiny_env()
    states, actions, *_ = game(SEEDS[0])
    by_step = recorded(SEEDS[0])
    t = max(by_step, key=lambda s: len(by_step[s]))  # a step with several fights
    one = F.fights_of_step(env, at(states, t), actions[t])
    assert one == F.fights_of_step(env, at(states, t), actions[t]) == by_step[t]  # alone or among a game's
    assert json.loads(json.dumps(one)) == one
    # a trace's [T + 1] states (a last row after the last action) give the same fights
    extra = jax.tree.map(lambda x: np.concatenate([x, x[t : t + 1]]), states)
    assert F.fights_of_game(env, extra, actions) == by_step
    flat = F.as_json_list(by_step)
    assert [(f["step"], f["slot"]) for f in flat] == [(s, f["slot"]) for s in sorted(by_step) for f in by_step[s]]
    assert F.fights_of_step(env, at(states, 0), actions[0]) == []  # the first step of a round fights nothing


def test_boards_beyond_the_rules_are_recorded_with_every_unit():
    """More than MAX_LEVEL units a side (no legal board): the recording simulates 24 a side, as the game
    switches to, so it equals simulate_fight's default (exact) result."""
    rng = np.random.RandomState(3)
    boards = []
    for n in (12, 5):
        species, stars = np.full(C.BOARD_CELLS, -1, np.int32), np.zeros(C.BOARD_CELLS, np.int32)
        cells = rng.choice(C.BOARD_CELLS, n, replace=False)
        species[cells], stars[cells] = rng.randint(0, 28, n), rng.randint(1, 4, n)
        boards += [species, stars]
    key = jax.random.key_data(jax.random.key(5))
    result, replay = F.record_fights(*[b[None] for b in boards], key[None], max_ticks=60)
    want = combat.simulate_fight(*boards, key, max_ticks=60)
    assert {k: int(v[0]) for k, v in result.items()} == {k: int(getattr(want, k)) for k in F.RESULT_FIELDS}
    assert (replay["species"][0] >= 0).sum() == 17


def test_life_damage_follows_the_rules():
    # round 5: base 3; the loser (or both on a draw) loses base + the enemy's survivors
    assert F.life_damage(5, 0, 4, 0) == (0, 3 + 4)
    assert F.life_damage(5, 1, 0, 2) == (3 + 2, 0)
    assert F.life_damage(5, 2, 1, 2) == (3 + 2, 3 + 1)
    assert F.life_damage(6, 2, 0, 0) == (3, 3)
