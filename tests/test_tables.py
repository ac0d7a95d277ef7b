"""Seat-rotated tables of policies and bots (agents.arena.tables): the rotation bookkeeping and who plays where."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.arena import tables
from jaxgame import constants as C

SHORT = dict(steps_per_round=2, max_rounds=6, starting_life=12, max_combat_ticks=150)


class PassivePolicy:
    """A 'network' that always ends its turn at once: it never buys, so it never fields a unit."""

    def apply(self, params, obs):
        logits = jnp.zeros(obs.shape[:-1] + (C.NUM_ACTIONS,)).at[..., C.ACTION_END_TURN].set(100.0 * params)
        return logits, jnp.zeros(obs.shape[:-1])


# the tests of played() share one worker (and its cached games) under pytest-xdist
pytestmark = pytest.mark.xdist_group("tables")

GREEDY = 1 + tables.TABLE_BOTS.index("greedy")  # participant index with one policy


@functools.cache
def short_runner():
    """The table runner of 3 SHORT games, the passive policy and the default bots (one compile for the tests)."""
    return tables.make_table_runner(jaxgame.make("autochess", **SHORT), (PassivePolicy(),), num_games=3)


@functools.cache
def played():
    """Game 0: 8 greedy bots; games 1 and 2: the passive policy in position 0 (resp. 5), greedy elsewhere."""
    run = short_runner()
    lineups = np.full((3, C.NUM_PLAYERS), GREEDY)
    lineups[1, 0] = lineups[2, 5] = 0
    return np.asarray(run((jnp.float32(1.0),), lineups, jax.random.key(0)))


def test_a_feed_forward_tables_games_are_those_it_played_before_the_tables_held_carries():
    """The ranks of ``played()`` as the tables gave them before they kept recurrent policies' carries (commit
    350a97d): a feed-forward table is the same program (its carries are None, so nothing is added to its loop)."""
    np.testing.assert_array_equal(
        played()[:, 0],
        [[6, 4, 7, 1, 2, 5, 3, 8], [7, 4, 6, 2, 3, 1, 8, 5], [2, 7, 3, 4, 1, 8, 5, 6]],  # rotation 0 of each game
    )


def test_rotation_maps_are_inverse():
    position = tables.rotation_seats(3)
    seat = tables.rotation_seats(3, shift=1)
    for e in range(position.shape[0]):
        np.testing.assert_array_equal(position[e][seat[e]], np.arange(C.NUM_PLAYERS))
        assert position[e][e % C.NUM_PLAYERS] == 0  # rotation r: position 0 sits in seat r


def test_every_rotation_is_a_full_ranking():
    ranks = played()
    assert ranks.shape == (3, C.NUM_PLAYERS, C.NUM_PLAYERS)
    assert np.all(np.sort(ranks, axis=-1) == np.arange(1, C.NUM_PLAYERS + 1))


def test_identical_players_replay_the_same_game_in_every_rotation():
    # one participant in every seat and the same game seed: rotating the lineup only relabels positions,
    # so position j of rotation r (seat (j + r) % 8) ranks as seat (j + r) % 8 of rotation 0
    ranks = played()[0]
    for r in range(C.NUM_PLAYERS):
        np.testing.assert_array_equal(ranks[r], ranks[0][(np.arange(C.NUM_PLAYERS) + r) % C.NUM_PLAYERS])


@pytest.mark.parametrize("game, position", [(1, 0), (2, 5)])
def test_the_policy_plays_its_own_position(game, position):
    # a player that never fields a unit loses every fight: it finishes at the bottom against 7 greedy bots
    # in every rotation, wherever its lineup position puts it (were the positions mixed up, its ranks
    # would spread over the positions)
    mean_rank = played()[game].mean(axis=0)
    assert np.argmax(mean_rank) == position and mean_rank[position] >= 7.0


def test_compare_tables_tests_the_per_seed_results_of_real_games():
    """agents.arena.tournament.compare_tables on the runner ``played`` uses (one compile): the passive policy (A)
    against
    the greedy bot (B), each against 7 greedy bots on the same 3 game seeds, and at one table. Per setting the
    tested numbers are each seed's mean placement of A's and of B's positions over the 8 rotations, and a
    player that never fields a unit places far worse than greedy: p < 0.01 with 3 seeds."""
    from agents.arena import significance, tournament

    run = short_runner()
    played_tables = {}

    def play(lineup):
        ranks = np.asarray(run((jnp.float32(1.0),), np.tile(lineup, (3, 1)), jax.random.key(0)))
        played_tables[tuple(lineup)] = ranks
        return ranks

    settings = tournament.compare_tables(play, 0, GREEDY, {"greedy": [GREEDY] * 7})
    assert list(settings) == ["vs greedy", "1v7", "7v1", "4v4"]
    alone_a = played_tables[(0,) + (GREEDY,) * 7]
    np.testing.assert_array_equal(alone_a[1], played()[1])  # game seed 1 is played()'s game 1: the same lineup
    vs = settings["vs greedy"]
    np.testing.assert_allclose(vs["per_seed_a"], alone_a[:, :, 0].mean(1))
    np.testing.assert_allclose(vs["per_seed_b"], played_tables[(GREEDY,) * 8][:, :, 0].mean(1))
    four = played_tables[(0, GREEDY) * 4]
    np.testing.assert_allclose(settings["4v4"]["per_seed_a"], four[:, :, 0::2].mean((1, 2)))
    np.testing.assert_allclose(settings["4v4"]["per_seed_b"], four[:, :, 1::2].mean((1, 2)))
    for name, setting in settings.items():
        placement = setting["placement"]
        assert placement == {
            **significance.compare(setting["per_seed_a"], setting["per_seed_b"], paired=True),
            "games_needed": placement["games_needed"],
            "p_holm": placement["p_holm"],
        }
        assert placement["difference"] > 2 and placement["p_value"] < 0.01, (name, placement)
        assert setting["points"]["mean_a"] < setting["points"]["mean_b"]


def test_bad_lineups_are_refused():
    game = jaxgame.make("autochess", **SHORT)
    run = tables.make_table_runner(game, (PassivePolicy(),), num_games=1)
    with pytest.raises(ValueError, match="participants 0..2"):
        run((jnp.float32(1.0),), np.full((1, 8), 3), jax.random.key(0))
    with pytest.raises(ValueError, match="shape"):
        run((jnp.float32(1.0),), np.zeros((2, 8), int), jax.random.key(0))
    with pytest.raises(ValueError, match="1 parameter tree"):
        run((), np.zeros((1, 8), int), jax.random.key(0))


class KindProbe:
    """A 'network' for one observation kind that fails at trace time on any other input (so a table that hands it
    the wrong part cannot run) and whose logits depend on the observation's values: ``"vector"`` reads float32[...,
    OBS_SIZE], ``"pixels"`` packed uint8[..., 72, 20]. ``params`` scales the end-turn logit (large: it never buys)."""

    def __init__(self, kind):
        self.kind = kind

    def apply(self, params, obs):
        if self.kind == "vector":
            assert obs.dtype == jnp.float32 and obs.shape[-1] == jaxgame.observation.OBS_SIZE, (obs.dtype, obs.shape)
            signal = obs[..., : C.NUM_ACTIONS]
        else:
            assert obs.dtype == jnp.uint8 and obs.shape[-2:] == (72, 20), (obs.dtype, obs.shape)
            signal = jnp.broadcast_to(
                obs.astype(jnp.float32).mean((-2, -1))[..., None] / 64.0, obs.shape[:-2] + (C.NUM_ACTIONS,)
            )
        logits = signal.at[..., C.ACTION_END_TURN].add(params)
        return logits, signal.sum(-1)


def fake_policy(name, obs):
    from agents.config import TrainConfig
    from agents.policies.load import RunPolicy

    config = TrainConfig().with_overrides({"obs": obs, "network": "tiles"} if obs == "pixels" else {"obs": obs})
    return RunPolicy(name, name, 0, config, KindProbe("pixels" if obs == "pixels" else "vector"), jnp.float32(0.0))


def test_vector_and_pixel_policies_share_a_table_each_reading_its_own_observations():
    """tournament.table_game: the game observes both kinds; table_networks: each network gets its own part, the
    same numbers it gets at a table of its own kind (checked on a played state)."""
    from agents.arena.tournament import table_game
    from agents.policies.load import table_networks

    vec, pix = fake_policy("v", "vector"), fake_policy("p", "pixels")
    game = table_game([vec, pix])
    assert game.obs_kind == "both"
    assert table_game([vec]).obs_kind == "vector" and table_game([pix]).obs_kind == "pixels"
    plain = jaxgame.make("autochess", **SHORT)
    state, ts = plain.reset(jax.random.key(3))
    for step in range(6):  # greedy play into the second round: a state with units, gold and a shop
        state, ts = plain.step(state, jaxgame.bots.BOTS["greedy"](jax.random.key(step), state, ts.action_mask))
    both = game.observe(state)
    for policy, network in zip([vec, pix], table_networks([vec, pix], game)):
        own = table_game([policy]).observe(state)
        for got, want in zip(network.apply(jnp.float32(1.0), both), policy.network.apply(jnp.float32(1.0), own)):
            np.testing.assert_array_equal(got, want)


def test_a_mixed_table_plays_each_policy_in_its_own_position():
    """A vector policy and a passive pixel policy (it never buys) with greedy bots, at one table: full rankings, and
    the pixel policy finishes at the bottom in its own lineup position in every rotation."""
    from agents.arena.tournament import table_game
    from agents.policies.load import table_networks

    vec, pix = fake_policy("v", "vector"), fake_policy("p", "pixels")
    game = jaxgame.make("autochess", obs="both", **SHORT)
    assert game.obs_kind == table_game([vec, pix]).obs_kind
    run = tables.make_table_runner(game, table_networks([vec, pix], game), num_games=1)
    lineup = np.full((1, C.NUM_PLAYERS), 2 + tables.TABLE_BOTS.index("greedy"))
    lineup[0, 0], lineup[0, 5] = 0, 1
    ranks = np.asarray(run((jnp.float32(0.0), jnp.float32(100.0)), lineup, jax.random.key(0)))[0]
    assert np.all(np.sort(ranks, axis=-1) == np.arange(1, C.NUM_PLAYERS + 1))
    assert np.argmax(ranks.mean(axis=0)) == 5 and ranks[:, 5].mean() >= 7.0


def test_observations_that_cannot_share_a_table_are_refused_by_name():
    from agents.policies.load import PolicyError, check_same_observations, table_observations

    vec, pix, oracle = fake_policy("v", "vector"), fake_policy("p", "pixels"), fake_policy("o", "oracle")
    assert table_observations([]) == "vector" and table_observations([pix, pix]) == "pixels"
    assert table_observations([vec, pix]) == "both"
    with pytest.raises(PolicyError, match="v: vector, o: oracle"):
        table_observations([vec, oracle])
    assert table_observations([pix], learner="vector") == "both"  # agents.interop: a learner's seat and opponents
    with pytest.raises(PolicyError, match="o: oracle, the learner: pixels"):
        table_observations([oracle], learner="pixels")
    with pytest.raises(PolicyError, match="v: vector, p: pixels"):  # a dataset's observations are one array
        check_same_observations([vec, pix])


class FixedLogits:
    """A 'network' whose logits are its parameters, the same for every observation."""

    def apply(self, params, obs):
        return jnp.broadcast_to(params, obs.shape[:-1] + params.shape), jnp.zeros(obs.shape[:-1])


def test_greedy_play_can_be_chosen_per_network():
    """One network plays its most likely legal action, the other samples, at one table (the ladder rates a clone
    by argmax play among members that sample)."""
    import types

    logits = jnp.linspace(0.0, 0.5, C.NUM_ACTIONS)  # nearly flat: sampling varies, the argmax never does
    mask = jnp.ones((C.NUM_PLAYERS, C.NUM_PLAYERS, C.NUM_ACTIONS), bool).at[..., -1].set(False)  # the top is illegal
    ts = types.SimpleNamespace(observation=jnp.zeros((C.NUM_PLAYERS, C.NUM_PLAYERS, 4)), action_mask=mask)
    player = jnp.asarray(np.tile([0, 1] * 4, (C.NUM_PLAYERS, 1)), jnp.int32)  # even seats: network 0
    actions, _ = tables.make_seat_actions((FixedLogits(), FixedLogits()), (), (True, False), num_games=1)
    carries = tables.initial_carries((FixedLogits(), FixedLogits()), C.NUM_PLAYERS)  # (None, None): feed-forward
    seen = np.stack(
        [
            np.asarray(actions((logits, logits), carries, player, None, ts, jax.random.key(k), jax.random.key(0))[0])
            for k in range(6)
        ]
    )
    assert (seen[:, :, 0::2] == C.NUM_ACTIONS - 2).all()  # argmax of the legal actions, whatever the key
    assert len(np.unique(seen[:, :, 1::2])) > 10  # sampled
    assert tables.greedy_per_network(True, 3) == (True, True, True)
    with pytest.raises(ValueError, match="one per network \\(2\\), got 3"):
        tables.make_seat_actions((FixedLogits(), FixedLogits()), (), (True, False, True), num_games=1)


def test_equal_arguments_share_one_runner_and_its_programs():
    """make_table_runner's cache: equal game, networks (flax modules compare by value), sizes and compiler options
    give the same runner (one compile per process); anything else, or a network that cannot be hashed, a runner of
    its own."""
    from agents.core.networks import actor_critic

    game = jaxgame.make("autochess", **SHORT)
    net = actor_critic("mlp", C.NUM_ACTIONS, (8,))
    first = tables.make_table_runner(game, (net,), 2, bot_names=("random",))
    again = tables.make_table_runner(
        jaxgame.make("autochess", **SHORT), (actor_critic("mlp", C.NUM_ACTIONS, (8,)),), 2, bot_names=("random",)
    )
    assert again is first
    assert tables.make_table_runner(game, (net,), 3, bot_names=("random",)) is not first  # another size
    assert tables.make_table_runner(game, (net,), 2, greedy_policy=True, bot_names=("random",)) is not first
    assert (
        tables.make_table_runner(game, (actor_critic("mlp", C.NUM_ACTIONS, (16,)),), 2, bot_names=("random",))
        is not first
    )  # another network
    options = {"xla_backend_optimization_level": 2, "xla_cpu_use_fusion_emitters": True}
    optimised = tables.make_table_runner(game, (net,), 2, bot_names=("random",), compiler_options=options)
    assert optimised is not first  # other XLA options: another program
    same_options = dict(reversed(options.items()))  # equal options, in another order
    assert tables.make_table_runner(game, (net,), 2, bot_names=("random",), compiler_options=same_options) is optimised

    class Unhashable:
        __hash__ = None

        def apply(self, params, obs):
            return net.apply(params, obs)

    odd = Unhashable()
    assert tables.make_table_runner(game, (odd,), 2) is not tables.make_table_runner(game, (odd,), 2)
    with pytest.raises(ValueError, match="num_games must be a positive int"):
        tables.make_table_runner(game, (net,), True)  # not the runner of 1 game: bool is refused before the cache
    for games in range(4, 4 + tables.MAX_CACHED_RUNNERS):
        tables.make_table_runner(game, (net,), games, bot_names=("random",))
    assert len(tables._RUNNERS) <= tables.MAX_CACHED_RUNNERS
    assert tables.make_table_runner(game, (net,), 2, bot_names=("random",)) is not first  # the oldest went first
