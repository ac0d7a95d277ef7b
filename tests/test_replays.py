"""Replays (agents.replays): a recorded game is the seat-rotated evaluation's game of the same seed, its actions
replay to the same states through the env, the same seed writes the same file, the format refuses what it cannot
read, and a policy's top actions are its legal ones; the CLI end to end on short games of bots."""

from __future__ import annotations

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.arena import tables
from agents.replays import format as replay_format
from agents.replays import record
from jaxgame import actions as actions_lib
from jaxgame import constants as C

#: short, deadly games (tests/tiny_games.py's TINY): a game ends within a few dozen steps
TINY = dict(steps_per_round=2, max_rounds=10, starting_life=12, max_combat_ticks=150)
BOTS = ["expert", "greedy", "random", "greedy", "expert", "random", "greedy", "random"]
SEED = 3
#: BOTS on the command line: seat 0's player, then the 7 other seats'
LINEUP = [BOTS[0], "--vs", ",".join(BOTS[1:])]

# one worker compiles the recorders and the table runner these tests share
pytestmark = pytest.mark.xdist_group("replays")


class LinearPolicy:
    """A 'network' whose logits are a fixed linear map of the observation and whose value is the seat's own
    life / 100 (the vector's first float): which seat and step a recorded value belongs to can be checked."""

    def apply(self, params, obs):
        return obs @ params, obs[..., 0]


POLICY_PARAMS = (jax.random.normal(jax.random.key(7), (jaxgame.make("autochess").obs_size, C.NUM_ACTIONS)),)
BOT_NAMES = ("random", "greedy", "expert")
#: participants of the LinearPolicy tables: 0 the policy, then BOT_NAMES
MIXED = [0, 3, 2, 1, 0, 3, 2, 1]


@functools.cache
def tiny_game():
    return jaxgame.make("autochess", **TINY)


@functools.cache
def bot_game():
    """(trace, meta) of BOTS at SEED: record_game's path from player specs."""
    return record.play_game(BOTS, SEED, TINY)


@functools.cache
def mixed_recorder():
    return record.GameRecorder(tiny_game(), (LinearPolicy(),), BOT_NAMES, top_k=5)


@functools.cache
def mixed_table():
    """ranks int[1, 8 rotations, 8 positions] of the MIXED lineup at SEED, sampled policy actions."""
    run = tables.make_table_runner(tiny_game(), (LinearPolicy(),), 1, bot_names=BOT_NAMES)
    return np.asarray(run(POLICY_PARAMS, np.asarray([MIXED]), jax.random.key(SEED)))


@functools.cache
def mixed_game(rotation: int = 0):
    return mixed_recorder().play(POLICY_PARAMS, MIXED, jax.random.key(SEED), rotation=rotation)


def test_bots_placements_equal_the_table_runners_for_the_same_seed_and_lineup():
    trace, meta = bot_game()
    assert trace.finished and sorted(trace.placements) == list(range(1, 9))
    bots = tuple(b for b in tables.TABLE_BOTS if b in BOTS)
    run = tables.make_table_runner(tiny_game(), (), 1, bot_names=bots)
    ranks = np.asarray(run((), np.asarray([[bots.index(b) for b in BOTS]]), jax.random.key(SEED)))
    np.testing.assert_array_equal(trace.placements, ranks[0, 0])  # rotation 0: position j in seat j
    assert meta["seats"] == BOTS and meta["names"] == BOTS


@pytest.mark.parametrize("rotation", [0, 5])
def test_a_sampled_policy_seat_plays_the_table_runners_game(rotation):
    # the policy samples with the table's draws: the same placements in rotation 0 and in a later rotation, where
    # lineup position j sits in seat (j + rotation) % 8
    trace = mixed_game(rotation)
    ranks = mixed_table()[0, rotation]  # by lineup position
    seat_of_position = (np.arange(C.NUM_PLAYERS) + rotation) % C.NUM_PLAYERS
    np.testing.assert_array_equal(trace.placements[seat_of_position], ranks)
    np.testing.assert_array_equal(trace.policy_seats[seat_of_position], np.asarray(MIXED) == 0)


def _replayed_states(game, key, actions):
    """The states before each of ``actions``' steps and the final one, through ``env.step`` from ``key``;
    and the done flags of every step."""
    state, ts = game.reset(key)
    states, done = [state], []
    for row in actions:
        state, ts = game.step(state, jnp.asarray(row, jnp.int32))
        states.append(state)
        done.append(bool(ts.done))
    states[-1] = ts.info["final_state"]  # the step that ends the game resets; its pre-reset state is the last
    return states, done


def test_the_actions_replay_through_the_env_to_the_recorded_states():
    trace, meta = bot_game()
    written = record.to_record(trace, meta)
    states, done = _replayed_states(tiny_game(), record.game_reset_key(SEED), replay_format.actions(written))
    assert done == [False] * (trace.steps - 1) + [True]  # the game ends on the recorded last step, not before
    for t, state in enumerate(states):
        public = record.public_state(jax.device_get(state))
        for name in record.STATE_FIELDS:
            np.testing.assert_array_equal(public[name], np.asarray(written["state"][name][t]), err_msg=f"{name} {t}")
    final = jax.device_get(states[-1].replace(key=jax.random.key_data(states[-1].key)))
    last = jax.tree_util.tree_map(lambda x: x[-1], trace.states)  # the full final state, hidden parts too
    jax.tree_util.tree_map(np.testing.assert_array_equal, final, last)
    np.testing.assert_array_equal(final.players.rank, written["placements"])


def test_the_same_seed_writes_the_same_file_and_another_seed_another_game(tmp_path):
    first = record.record_game(BOTS, SEED, TINY)
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    sizes = [replay_format.write(first, paths[0]), replay_format.write(record.record_game(BOTS, SEED, TINY), paths[1])]
    assert paths[0].read_bytes() == paths[1].read_bytes() and sizes[0] == sizes[1] == paths[0].stat().st_size
    other = record.record_game(BOTS, SEED + 1, TINY)
    assert other["actions"] != first["actions"]
    # the fights are those of the fight steps: every seat still in the game fights once (home, or a PvP away side)
    fight_steps = np.flatnonzero(first["fight"])
    assert len(fight_steps) and sorted({f["step"] for f in first["fights"]}) == fight_steps.tolist()
    for t in fight_steps:
        fights = [f for f in first["fights"] if f["step"] == t]
        fighting = [f["home"] for f in fights] + [f["away"] for f in fights if f["kind"] == "pvp"]
        assert sorted(fighting) == np.flatnonzero(first["state"]["alive"][t]).tolist(), t


def test_format_round_trip_and_what_it_refuses(tmp_path):
    game = record.to_record(*bot_game())
    path = tmp_path / "game.json"
    size = replay_format.write(game, path)
    assert replay_format.read(path) == game and size == path.stat().st_size
    assert b" " not in path.read_bytes()  # compact: no indentation, no spaces after separators
    actions = replay_format.actions(game)
    assert actions.dtype == np.int32 and actions.shape == (game["steps"], C.NUM_PLAYERS)
    for name, content, expected in [
        ("foreign", {"format": "something-else", "version": 1}, "not a jaxgame-replay file (format 'something-else')"),
        ("newer", {**game, "version": replay_format.VERSION + 1}, f"version {replay_format.VERSION + 1} is newer"),
        ("list", [1, 2], "not a jaxgame-replay file (a JSON list"),
        ("missing", {k: v for k, v in game.items() if k != "actions"}, "without the field(s) actions"),
    ]:
        bad = tmp_path / f"{name}.json"
        bad.write_text(json.dumps(content))
        with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
            replay_format.read(bad)
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(path.read_bytes()[: size // 2])
    with pytest.raises(ValueError, match="not a complete replay file .*truncated"):
        replay_format.read(truncated)
    with pytest.raises(ValueError, match="newer"):
        replay_format.write({**game, "version": replay_format.VERSION + 1}, tmp_path / "never.json")


def test_a_policy_seats_top_actions_are_its_legal_actions_sorted_with_its_value():
    trace = mixed_game()
    masks = np.asarray(jax.vmap(jax.vmap(actions_lib.legal_mask))(trace.states.players))[:-1]  # [T, 8, A]
    seats = np.flatnonzero(trace.policy_seats)
    assert seats.tolist() == [0, 4]
    top, probs = trace.top_actions[:, seats], trace.top_probs[:, seats]
    legal = np.take_along_axis(masks[:, seats], np.maximum(top, 0), axis=-1)
    assert np.all(legal[top >= 0]) and np.all(probs[top < 0] == 0)
    enough = masks[:, seats].sum(-1) >= top.shape[-1]  # where k actions are legal, none is -1
    assert np.all(top[enough] >= 0) and (top < 0).any()  # turn ended: only end turn is legal
    assert np.all(np.diff(probs, axis=-1) <= 0) and np.all(probs.sum(-1) <= 1 + 1e-6) and np.all(probs >= 0)
    np.testing.assert_allclose(probs[..., 0][masks[:, seats].sum(-1) == 1], 1.0)  # the only legal action
    assert np.all(np.isfinite(trace.value[:, seats]))
    life = np.asarray(trace.states.players.life)[:-1, seats]
    np.testing.assert_allclose(trace.value[:, seats], life / 100, rtol=1e-6)  # the seat's own life, at that step
    written = record.to_record(trace, _meta(trace))
    assert written["players"]["policy_seats"] == [0, 4]
    stored = np.asarray(written["policy"]["top_probs"])
    assert np.all(stored <= probs + 1e-9) and np.all(probs - stored < 1e-4) and np.all(stored.sum(-1) <= 1)


def _meta(trace):
    """A ``play_game`` meta for the LinearPolicy game."""
    names = ["linear" if p == 0 else BOT_NAMES[p - 1] for p in MIXED]
    return {
        "seed": SEED,
        "game": 0,
        "num_games": 1,
        "rotation": 0,
        "deterministic": False,
        "top_k": 5,
        "lineup": names,
        "seats": names,
        "names": names,
        "rules": dataclasses.asdict(tiny_game().config),
        "max_steps": 21,
    }


def test_players_are_one_or_eight():
    assert record.seat_players("greedy") == ["greedy"] * 8 and record.seat_players(BOTS) == BOTS
    with pytest.raises(ValueError, match="1 or 8 players, got 3"):
        record.seat_players(["greedy", "random", "expert"])
    with pytest.raises(ValueError, match="did you mean greedy"):
        record.seat_players(["grredy"])
    with pytest.raises(ValueError, match="rules apply to games of bots only"):
        record.play_game(["baseline:ppo_small-v1"], 0, TINY)


def test_cli_writes_the_replay_and_prints_one_line(tmp_path, capsys):
    from experiments import replay

    out = tmp_path / "games" / "bots.json"
    rules = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    result = replay.main([*LINEUP, "--seed", str(SEED), "--out", str(out), "--quiet", *rules])
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == result and printed["out"] == str(out) and printed["bytes"] == out.stat().st_size
    written = replay_format.read(out)
    assert printed["placements"] == written["placements"] == bot_game()[0].placements.tolist()
    assert printed["steps"] == written["steps"] == bot_game()[0].steps and printed["finished"]


def test_cli_draws_seat_0s_game_as_a_gif_of_its_rounds_and_fights(tmp_path, capsys):
    """--out game.gif: seat 0's view at each fight step (the trace's state, rendered), then its own fight's frames;
    the last frame the final state; the placements those of the same game's record."""
    from PIL import Image

    from agents.replays import fights as fights_lib
    from experiments import replay
    from jaxgame import packing, render

    out = tmp_path / "game.gif"
    rules = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    result = replay.main([*LINEUP, "--seed", str(SEED), "--out", str(out), "--quiet", *rules, "--gif-every", "3"])
    trace, _ = bot_game()
    assert result["placements"] == trace.placements.tolist() and result["bytes"] == out.stat().st_size
    fight_steps = sorted(fights_lib.fights_of_game(tiny_game(), trace.states, trace.actions))
    image = Image.open(out)
    assert image.size == (2 * packing.FRAME_W, 2 * packing.FRAME_H) and image.n_frames > len(fight_steps) + 1

    def frame(i):
        image.seek(i)
        return np.asarray(image.convert("RGB"))[::2, ::2]

    first = render.render_rgb(jax.tree.map(lambda x: x[fight_steps[0]], trace.states), 0, scale=1)
    np.testing.assert_array_equal(frame(0), first)
    final = render.render_rgb(jax.tree.map(lambda x: x[-1], trace.states), 0, scale=1)
    np.testing.assert_array_equal(frame(image.n_frames - 1), final)
    from agents.replays import gif

    by_step = fights_lib.fights_of_game(tiny_game(), trace.states, trace.actions)
    own = [f for f in by_step[fight_steps[0]] if f["home"] == 0]
    assert own, "seat 0 fights in the first fight round of this game"
    shades = render.replay_shades(gif._fight_replay(own[0]), every=3)[0]  # its first tick, home at the bottom
    np.testing.assert_array_equal(frame(1)[packing.FRAME_H - render.REPLAY_H :], packing.PALETTE[shades])
    with pytest.raises(SystemExit):
        replay.main(["greedy", "--vs", "greedy", "--out", str(tmp_path / "x.gif"), "--gif-every", "0"])


def test_cli_says_the_final_placements_in_one_sentence():
    from experiments.replay import ordinal, placement_sentence

    assert [ordinal(n) for n in (1, 2, 3, 4, 8, 11, 12, 13, 21, 22)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "8th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
    ]
    players = ["runs/demo", "expert", "greedy", "random", "expert", "greedy", "random", "expert"]
    game = {"finished": True, "steps": 300, "placements": [3, 1, 5, 8, 2, 4, 7, 6]}
    assert placement_sentence(players, game) == (
        "seat 1 (expert) placed 1st, seat 4 (expert) placed 2nd, seat 0 (runs/demo) placed 3rd, seat 5 (greedy) "
        "placed 4th, seat 2 (greedy) placed 5th, seat 7 (expert) placed 6th, seat 6 (random) placed 7th, seat 3 "
        "(random) placed 8th"
    )
    assert "did not end within its 300 steps" in placement_sentence(players, {**game, "finished": False})


@pytest.mark.parametrize("out", ["game.mp4", "game", "game.json.txt"])
def test_cli_refuses_an_out_suffix_it_cannot_write_before_any_work(tmp_path, out, capsys):
    from experiments import replay

    with pytest.raises(SystemExit) as exit_info:
        replay.main(["greedy", "--vs", "greedy", "--out", str(tmp_path / out), "--quiet"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "a replay is written as .json or .html or .htm or .gif" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / out).exists()


@pytest.mark.slow(reason="a full 40-round game of baseline:ppo_small-v1 at a table of 8 rotations: minutes")
def test_a_baseline_replay_places_as_the_same_seeds_evaluate_game():
    from agents.arena.tournament import evaluate_checkpoint, resolve_players, table_game

    players = ["baseline:ppo_small-v1"] + ["expert"] * 7
    game = record.record_game(players, 11)
    assert game["finished"] and game["players"]["policy_seats"] == [0]
    result = evaluate_checkpoint("baseline:ppo_small-v1", None, {"expert": ["expert"] * 7}, games=1, seed=11)
    # one game seed: the mean placement of position 0 over the 8 rotations; rotation 0 is the record's game
    assert result["vs_expert"]["games"] == 8
    policies = resolve_players(["baseline:ppo_small-v1", "expert"])[0]
    run = tables.make_table_runner(table_game(policies), [p.network for p in policies], 1, bot_names=("expert",))
    ranks = np.asarray(run((policies[0].params,), np.asarray([[0] + [1] * 7]), jax.random.key(11)))
    assert game["placements"] == ranks[0, 0].tolist()
    assert np.isclose(ranks[0, :, 0].mean(), result["vs_expert"]["mean_placement"])
