"""Recurrent policies at the tables (``agents.arena.tables``): a GRU plays whole tiny games; the table keeps each
policy's carry per game and seat and restarts it at the step after a seat's episode ended (its elimination, its
game's end), as training does; the table's outputs for a seat are the network stepped by hand over that seat's
observations with those resets; the replays' recorder and the play session thread the carry the same way.

The resets are pinned with a stand-in network (``StepCounter``) whose carry counts the steps since it was last
reset, and the table's own calls are watched through ``Spy`` (an ordered host callback), against what the game
shows independently of the tables' code: a seat's ``alive`` flag and a fresh game's clock in its observation, or the
recorded states. Tiny rules (``tests.tiny_games.TINY``): eliminations and game ends within 21 steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.arena import tables
from agents.config import TrainConfig
from agents.core.networks import actor_critic, observation_part
from agents.core.recurrent import is_recurrent
from agents.pipeline import recording
from agents.policies.load import RunPolicy, table_networks
from agents.replays import play, record
from jaxgame import constants as C
from jaxgame.observation import OBS_LAYOUT
from tests.tiny_games import TINY

pytestmark = pytest.mark.xdist_group("recurrent_tables")

#: the self block of the vector observation (jaxgame/observation.py): the clock (round, step in round) and alive
SELF = OBS_LAYOUT["self"][0]
CLOCK = slice(SELF + 5, SELF + 7)
ALIVE = SELF + 9
NUM_GAMES = 2
NUM_ENVS = NUM_GAMES * C.NUM_PLAYERS
BOTS = ("random", "greedy")
#: participants: 0 the step counter, 1 the GRU, 2 random, 3 greedy; each game mixes them so that seats fall early
LINEUPS = np.asarray([[0, 1, 2, 3, 1, 3, 0, 2], [1, 1, 3, 0, 3, 2, 3, 3]])


class StepCounter:
    """A stand-in recurrent network whose carry float32[*B, 1] counts the steps since it was last reset (1 on the
    step of a reset): ``value`` float32[*B] is that count and the logits float32[*B, A] depend on it alone."""

    is_recurrent = True

    def initial_carry(self, batch_shape):
        return jnp.zeros((*batch_shape, 1), jnp.float32)

    def apply(self, params, carry, obs, reset):
        count = jnp.where(reset[..., None], 0.0, carry) + 1.0
        return count, count * jnp.linspace(-1.0, 1.0, C.NUM_ACTIONS), count[..., 0]


class Spy:
    """A recurrent network that runs ``base`` and hands every call's ``(obs, reset, logits, value)`` to the host in
    order (``jax.debug.callback(ordered=True)``): ``steps`` is what the table gave the network and what it got back,
    one entry per step of the table's loop, each [E, 8, ...]."""

    is_recurrent = True

    def __init__(self, base):
        self.base = base
        self.steps: list[tuple[np.ndarray, ...]] = []

    def initial_carry(self, batch_shape):
        return self.base.initial_carry(batch_shape)

    def apply(self, params, carry, obs, reset):
        carry, logits, value = self.base.apply(params, carry, obs, reset)
        keep = lambda *xs: self.steps.append(tuple(np.asarray(x) for x in xs))  # noqa: E731
        jax.debug.callback(keep, obs, reset, logits, value, ordered=True)
        return carry, logits, value

    def stacked(self) -> tuple[np.ndarray, ...]:
        """``(obs [T, E, 8, D], reset [T, E, 8], logits [T, E, 8, A], value [T, E, 8])`` over the T steps."""
        return tuple(np.stack(xs) for xs in zip(*self.steps))


@functools.cache
def tiny_game() -> jaxgame.AutoChessEnv:
    return jaxgame.make("autochess", **TINY)


@functools.cache
def gru():
    """(network, params): the GRU a ``network="gru"`` run trains (16 units), initialised from key 0."""
    network = actor_critic("gru", C.NUM_ACTIONS, (16,))
    return network, network.init(jax.random.key(0), jnp.zeros((1, 1, tiny_game().obs_size)))


def gru_config() -> TrainConfig:
    """The config of a ``network="gru"`` run of ``gru()``'s network (what a loaded policy carries)."""
    return TrainConfig.from_fields(network="gru", hidden=(16,), num_envs=2, num_minibatches=2, eval_every=0)


@functools.cache
def spied_table():
    """The table of ``LINEUPS`` (2 games x 8 rotations) with the counter and the GRU spied on: ``(ranks int[2, 8,
    8], counter's steps, GRU's steps)`` (``Spy.stacked``)."""
    counter, network = Spy(StepCounter()), Spy(gru()[0])
    run = tables.make_table_runner(tiny_game(), (counter, network), NUM_GAMES, bot_names=BOTS)
    ranks = np.asarray(run((jnp.zeros(()), gru()[1]), LINEUPS, jax.random.key(3)))
    return ranks, counter.stacked(), network.stacked()


def episode_resets(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the game shows of the episodes' edges in the table's observations obs [T, E, 8, D]: ``(reset bool[T, E,
    8], eliminated bool[T, E, 8], fresh bool[T, E])``: ``eliminated`` the seat is out of its game (its alive flag is
    0: knocked out on an earlier step), ``fresh`` the env's game started again on the step before (the clock is
    back at the first step's, after step 0); ``reset`` either, the steps whose carry must restart."""
    eliminated = obs[..., ALIVE] < 0.5
    clock = obs[..., CLOCK]
    fresh = (clock == clock[:1]).all(axis=(-2, -1))
    fresh[0] = False
    return eliminated | fresh[..., None], eliminated, fresh


def counts(reset: np.ndarray) -> np.ndarray:
    """float32[T, ...]: the steps since the last reset (1 on a reset step and on step 0), by hand."""
    out = np.ones(reset.shape, np.float32)
    for t in range(1, len(reset)):
        out[t] = np.where(reset[t], 1.0, out[t - 1] + 1.0)
    return out


def test_a_gru_plays_whole_tiny_games_at_a_table_and_equal_networks_share_the_runner():
    ranks, _, steps = spied_table()
    assert ranks.shape == (NUM_GAMES, C.NUM_PLAYERS, C.NUM_PLAYERS)
    assert (np.sort(ranks, axis=-1) == np.arange(1, C.NUM_PLAYERS + 1)).all()  # every game ended, fully ranked
    assert len(steps[0]) <= TINY["max_rounds"] * TINY["steps_per_round"] + 1
    # the runner cache compares recurrent networks by value, as it does flax modules
    build = lambda: tables.make_table_runner(tiny_game(), (actor_critic("gru", C.NUM_ACTIONS, (16,)),), 1)  # noqa: E731
    assert is_recurrent(gru()[0]) and build() is build()


def test_the_tables_carry_restarts_after_an_elimination_and_after_the_games_end():
    """The counter's count (its carry) at every step of every game and seat is the steps since its seat's last
    episode edge, as the observations show them: a seat knocked out restarts at each of its following steps (its
    episode is over, as in training), and every seat of a game that ended restarts at the next game's first step."""
    _, (obs, reset, _, value), _ = spied_table()
    expected, eliminated, fresh = episode_resets(obs)
    assert (eliminated & ~fresh[..., None]).any() and fresh.any()  # both edges happen within the table's steps
    assert (reset.any(-1) & ~reset.all(-1)).any()  # some seats of a game restart while the others remember
    np.testing.assert_array_equal(reset, expected)
    np.testing.assert_array_equal(value, counts(expected))


def test_the_tables_gru_outputs_for_a_seat_are_the_network_stepped_by_hand_over_its_observations():
    _, _, (obs, reset, logits, value) = spied_table()
    network, params = gru()
    expected, _, _ = episode_resets(obs)
    np.testing.assert_array_equal(reset, expected)
    # all seats at once, as one scan over the table's steps
    _, by_scan, by_scan_value = network.apply_sequence(params, network.initial_carry(obs.shape[1:3]), obs, expected)
    np.testing.assert_allclose(logits, by_scan, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value, by_scan_value, rtol=1e-5, atol=1e-6)
    # one seat at a time, step by step: a seat knocked out, and a seat of a game that ended before the table did
    _, eliminated, fresh = episode_resets(obs)
    out = eliminated & ~fresh[..., None]
    seats = [np.argwhere(out)[0][1:], np.concatenate([np.argwhere(fresh)[0][1:], [0]])]
    for env, seat in seats:
        carry = network.initial_carry((1,))
        for t in range(len(obs)):
            carry, step_logits, _ = network.apply(params, carry, obs[t, env, seat][None], expected[t, env, seat][None])
            np.testing.assert_allclose(logits[t, env, seat], step_logits[0], rtol=1e-5, atol=1e-6)


def test_a_recorded_dataset_threads_the_carry_across_its_segments_and_plays_the_tables_games():
    """``agents.pipeline.recording``: the counter (whose play depends on its carry) and the GRU, recorded in
    segments of 4 steps (the carry goes from one segment's program to the next in ``Tables``), play the table
    runner's games: the same final ranks."""
    networks, params = (StepCounter(), gru()[0]), (jnp.zeros(()), gru()[1])
    key = jax.random.key(5)
    recorder = recording.make_recorder(tiny_game(), networks, NUM_GAMES, (0, 1), BOTS, segment_steps=4)
    rows, rank = recorder.play(params, LINEUPS, key)
    assert len(rows["live"]) > 4 and rows["live"][4:].any()  # games went on past the first segment
    by_position = np.take_along_axis(rank, tables.rotation_seats(NUM_GAMES, shift=1), axis=1)
    table = tables.make_table_runner(tiny_game(), networks, NUM_GAMES, bot_names=BOTS)
    np.testing.assert_array_equal(by_position.reshape(NUM_GAMES, 8, 8), np.asarray(table(params, LINEUPS, key)))


def _expected_counts(states, steps: int) -> np.ndarray:
    """float32[T, 8]: a one-game record's counts by hand (``states``: the GameState before each of its ``steps``
    steps): a seat restarts at each step it is out of the game."""
    alive = np.asarray(states.players.alive)[:steps]
    return counts(~alive & (np.arange(steps) > 0)[:, None])


def test_a_recorded_game_threads_the_carry_as_the_table_does():
    """``agents.replays.record``: the counter's values in its seats are the steps since its seat's last reset; the
    GRU's values are the network stepped by hand over its seats' observations with the same resets."""
    network, params = gru()
    recorder = record.GameRecorder(tiny_game(), (StepCounter(), network), BOTS, top_k=3, num_games=NUM_GAMES)
    trace = recorder.play((jnp.zeros(()), params), LINEUPS[1], jax.random.key(3), game=1, rotation=2)
    assert trace.finished and sorted(trace.placements) == list(range(1, 9))
    player = LINEUPS[1][tables.rotation_seats(1)[2]]  # seat -> participant
    alive = np.asarray(trace.states.players.alive)[: trace.steps]
    assert (~alive[:, player == 1]).any()  # a GRU seat is knocked out before the end
    expected = _expected_counts(trace.states, trace.steps)
    np.testing.assert_array_equal(trace.value[:, player == 0], expected[:, player == 0])
    obs = jax.vmap(tiny_game().observe)(jax.tree_util.tree_map(lambda x: x[: trace.steps], trace.states))
    reset = ~alive & (np.arange(trace.steps) > 0)[:, None]
    _, _, by_hand = network.apply_sequence(params, network.initial_carry((C.NUM_PLAYERS,)), obs, reset)
    np.testing.assert_allclose(trace.value[:, player == 1], np.asarray(by_hand)[:, player == 1], rtol=1e-5, atol=1e-6)


def test_a_play_session_threads_the_carry_of_its_recurrent_opponents(monkeypatch, tmp_path):
    """``agents.replays.play.PlaySession`` against the counter in 7 seats: each seat's value at each step is the
    steps since its last reset (the game's start, or every step once it is knocked out)."""
    counter = RunPolicy("counter", "counter", 0, gru_config(), StepCounter(), jnp.zeros(()))
    monkeypatch.setattr(play, "resolve_players", lambda specs: ([counter], {spec: "counter" for spec in specs}))
    monkeypatch.setattr(play, "table_game", lambda policies, rules: tiny_game())  # TINY's life: seats fall early
    (tmp_path / "counter").mkdir()  # a player spec names an existing directory; its policy is the counter
    session = play.PlaySession(str(tmp_path / "counter"), seat=3, seed=1)
    while not session.done:
        session.act(C.ACTION_END_TURN)
    assert session.finished
    rows = session._rows
    states = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *[row.state for row in rows])
    value = np.stack([row.value for row in rows])
    others = np.arange(C.NUM_PLAYERS) != 3
    alive = np.asarray(states.players.alive)
    assert (~alive[:, others]).any()  # an opponent seat is knocked out before the end
    np.testing.assert_array_equal(value[:, others], _expected_counts(states, len(rows))[:, others])


def test_the_tables_networks_of_a_recurrent_policy_at_a_table_of_both_observations_keep_their_carry():
    """A GRU (vector) at a table with a pixel policy reads the vector part of the ``"both"`` observations and keeps
    its recurrent interface (``agents.core.networks.RecurrentObservationPart``)."""
    network, params = gru()
    policy = RunPolicy("gru", "gru", 0, gru_config(), network, params)
    both = jaxgame.make("autochess", obs="both", **TINY)
    (part,) = table_networks([policy], both)
    assert is_recurrent(part) and not is_recurrent(observation_part(actor_critic("mlp", 4, (8,)), "vector"))
    obs = {"vector": jax.random.normal(jax.random.key(1), (2, 3, tiny_game().obs_size)), "pixels": None}
    carry, reset = part.initial_carry((2, 3)), jnp.asarray([[True, False, True], [False, False, True]])
    for got, want in zip(part.apply(params, carry, obs, reset), network.apply(params, carry, obs["vector"], reset)):
        np.testing.assert_array_equal(got, want)
