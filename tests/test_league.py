"""The self-play league (agents.league.pool): the pool ring buffer, snapshot sampling, seat roles, the batched
pool forward pass, the loss bookkeeping, and a league run's rollout, checkpoint and config checks."""

from __future__ import annotations

import functools
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.config import TrainConfig
from agents.core.rollout import Batch
from agents.league import pool as league
from agents.presets import preset_config


def tiny_params(value):
    return {"w": jnp.full((2, 3), value, jnp.float32), "b": jnp.full((3,), value, jnp.float32)}


def test_pool_is_a_ring_buffer():
    pool = league.pool_init(tiny_params(0.0), 3)
    np.testing.assert_array_equal(pool.update, [0, -1, -1])
    for u in range(1, 6):
        pool = league.pool_insert(pool, tiny_params(float(u)), u)
    # slots 0, 1, 2 were written by updates 0 1 2, then 3 -> slot 0, 4 -> slot 1, 5 -> slot 2
    np.testing.assert_array_equal(pool.update, [3, 4, 5])
    np.testing.assert_array_equal(pool.params["w"][:, 0, 0], [3.0, 4.0, 5.0])
    assert int(pool.next) == 0
    same = league.pool_insert(pool, tiny_params(9.0), 9, insert=jnp.bool_(False))
    jax.tree_util.tree_map(np.testing.assert_array_equal, same, pool)
    jitted = jax.jit(league.pool_insert)(pool, tiny_params(6.0), 6, True)
    np.testing.assert_array_equal(jitted.update, [6, 4, 5])


def test_sampling_uses_filled_slots_uniformly_or_by_loss_rate():
    pool = league.pool_init(tiny_params(0.0), 4)
    pool = league.pool_insert(pool, tiny_params(1.0), 1)  # slots 0 and 1 filled, 2 and 3 empty
    draws = np.asarray(league.sample_snapshots(pool, jax.random.key(0), 4000))
    counts = np.bincount(draws, minlength=4)
    assert counts[2] == counts[3] == 0
    assert abs(counts[0] - 2000) < 4 * np.sqrt(1000)  # binomial(4000, 1/2): 4 standard deviations

    pool = pool.replace(games=jnp.array([8.0, 8.0, 0.0, 0.0]), losses=jnp.array([6.0, 0.0, 0.0, 0.0]))
    weights = np.asarray(league.sampling_weights(pool, prioritized=True))
    np.testing.assert_allclose(weights, np.array([0.7, 0.1, 0.0, 0.0]) / 0.8, rtol=1e-6)  # (l + 1) / (g + 2)
    np.testing.assert_allclose(league.sampling_weights(pool, prioritized=False), [0.5, 0.5, 0, 0])
    draws = np.asarray(league.sample_snapshots(pool, jax.random.key(1), (40, 100), prioritized=True))
    assert draws.shape == (40, 100) and set(np.unique(draws)) == {0, 1}
    assert abs((draws == 0).sum() - 3500) < 4 * np.sqrt(4000 * 0.875 * 0.125)
    # an empty slot between filled ones (and a filled last slot) is never drawn either
    gap = pool.replace(update=jnp.array([0, -1, 3, 5]), games=jnp.zeros(4), losses=jnp.zeros(4))
    counts = np.bincount(np.asarray(league.sample_snapshots(gap, jax.random.key(2), 3000)), minlength=4)
    assert counts[1] == 0 and (np.abs(counts[[0, 2, 3]] - 1000) < 4 * np.sqrt(3000 * 2 / 9)).all()


def test_roles_give_each_game_its_learner_seats_and_the_configured_mix():
    num_envs, learner_seats, pool_prob = 4000, 3, 0.25
    roles = np.asarray(league.assign_roles(jax.random.key(1), num_envs, learner_seats, pool_prob))
    assert roles.shape == (num_envs, 8) and set(np.unique(roles)) == {0, 1, 2}
    np.testing.assert_array_equal((roles == league.ROLE_LEARNER).sum(1), learner_seats)
    others = roles != league.ROLE_LEARNER
    pool_share = (roles == league.ROLE_POOL).sum() / others.sum()
    n = others.sum()
    assert abs(pool_share - pool_prob) < 4 * np.sqrt(pool_prob * (1 - pool_prob) / n)
    per_seat = (roles == league.ROLE_LEARNER).mean(0)  # every seat is equally likely to be the learner's
    expected = learner_seats / 8
    assert np.all(np.abs(per_seat - expected) < 4 * np.sqrt(expected * (1 - expected) / num_envs))


def test_the_opponent_mix_gives_self_play_snapshot_and_anchor_games_their_shares():
    """The design's mix (league_self_share=0.5, league_anchor_share=0.2, league_pool_prob=1): half the games are
    all-learner self-play, the others' pool seats play the anchor (slot K) in 0.2 / 0.5 of them, a snapshot in the
    rest; the anchor's games play the anchor's parameters, the others their slot's."""
    from agents.envs.make import LeagueTaskState

    num_envs, steps = 2000, 4
    roles = np.asarray(league.assign_roles(jax.random.key(1), num_envs, 3, 1.0, self_share=0.5))
    self_play = (roles == league.ROLE_LEARNER).all(1)
    assert abs(self_play.mean() - 0.5) < 4 * np.sqrt(0.25 / num_envs)
    np.testing.assert_array_equal((roles[~self_play] == league.ROLE_LEARNER).sum(1), 3)
    np.testing.assert_array_equal(roles[~self_play] != league.ROLE_BOT, True)  # pool_prob=1: no bot
    unmixed = np.asarray(league.assign_roles(jax.random.key(1), num_envs, 3, 1.0))
    np.testing.assert_array_equal(roles[~self_play], unmixed[~self_play])  # the mix only adds self-play games

    config = TrainConfig.from_fields(
        num_envs=num_envs,
        num_steps=steps,
        total_steps=num_envs * steps,
        league_size=3,
        league_learner_seats=3,
        league_pool_prob=1.0,
        league_self_share=0.5,
        league_anchor_share=0.2,
        anchor="some/run",
        anchor_kl=0.0,
        league_groups=num_envs // 8,
    )
    players = league.LeaguePlayers(config, PreferenceNetwork())
    assert players.anchor_prob == pytest.approx(0.4)
    pool = league.pool_init({"pref": jnp.zeros(5)}, 3, num_envs)
    for slot in (1, 2):
        pool = league.pool_insert(pool, {"pref": 1e4 * jnp.eye(5)[slot]}, slot)
    pool = pool.replace(params={"pref": pool.params["pref"].at[0].set(1e4 * jnp.eye(5)[0])})
    anchor = {"pref": 1e4 * jnp.eye(5)[3]}  # the anchor always picks action 3, slot k action k
    _, draws = jax.jit(players.start)(pool, jax.random.key(2), {"anchor": anchor})
    upcoming = np.asarray(draws.upcoming)
    share = (upcoming == 3).mean()
    assert abs(share - 0.4) < 4 * np.sqrt(0.24 / upcoming.size)
    counts = np.bincount(upcoming[upcoming < 3], minlength=3)  # the rest uniformly over the 3 filled slots
    assert np.all(np.abs(counts / counts.sum() - 1 / 3) < 0.03)
    # every env's game started now (game count 1 past the rollout's start): it plays its first upcoming draw
    env_state = LeagueTaskState(games=None, key=None, roles=jnp.asarray(unmixed), game=draws.game + 1)
    obs, mask = jnp.zeros((num_envs, 8, 2)), jnp.ones((num_envs, 8, 5), bool)
    _, _, (pool_seats, action) = jax.jit(players.seats)(draws, env_state, obs, mask, jax.random.key(0))
    want = np.repeat(upcoming[:, :1], 8, 1)  # slot k (or the anchor, "slot" 3) picks action k (3)
    pool_seats = np.asarray(pool_seats)
    np.testing.assert_array_equal(np.asarray(action)[pool_seats], want[pool_seats])

    # the anchor's games are never credited to a snapshot: a finished anchor game changes no slot's statistics
    stats = players.stats(pool).replace(env_slot=jnp.full(num_envs, 3, jnp.int32))
    ts = types.SimpleNamespace(
        done=jnp.ones(num_envs, bool),
        info={"roles": jnp.asarray(unmixed), "rank": jnp.tile(jnp.arange(1, 9), (num_envs, 1))},
    )
    after = jax.jit(lambda d, s: players.record(d, s, ts))(draws, stats)
    np.testing.assert_array_equal(after.games, pool.games)
    np.testing.assert_array_equal(after.env_slot, upcoming[:, 0])  # the game starting now plays its first draw
    np.testing.assert_array_equal(
        after.env_update[upcoming[:, 0] < 3], np.asarray(pool.update)[upcoming[upcoming[:, 0] < 3, 0]]
    )


class ScaleNetwork:
    def apply(self, params, obs):
        return obs * params["scale"], obs[..., 0]


@pytest.mark.parametrize("num_envs, capacity, batch_envs", [(6, 3, 2), (12, 4, 3), (5, 8, 1), (8, 3, 8), (7, 2, 7)])
def test_pool_logits_give_each_env_the_snapshot_its_game_plays(num_envs, capacity, batch_envs):
    """Batched by slot, whatever the mix: every env's seats through its own slot's parameters."""
    scale = jnp.arange(1.0, capacity + 1.0)
    obs = jnp.arange(num_envs * 3 * 2, dtype=jnp.float32).reshape(num_envs, 3, 2) + 1.0  # [N, S, 2]
    rng = np.random.default_rng(num_envs)
    in_play = min(capacity, num_envs)  # many batches: every slot in play, all but one with a single env
    mixes = [rng.integers(0, capacity, num_envs) for _ in range(4)] + [
        np.zeros(num_envs, int),
        np.full(num_envs, capacity - 1),
        np.array([0] * (num_envs - in_play + 1) + list(range(1, in_play)))[rng.permutation(num_envs)],
    ]
    run = jax.jit(functools.partial(league.pool_logits, ScaleNetwork(), batch_envs=batch_envs))
    for env_slot in mixes:
        logits = np.asarray(run({"scale": scale}, obs, jnp.asarray(env_slot, jnp.int32)))
        np.testing.assert_array_equal(logits, np.asarray(obs) * np.asarray(scale)[env_slot][:, None, None])
        counts = np.bincount(env_slot, minlength=capacity)
        needed = (-(-counts // batch_envs)).sum()
        assert needed <= league.num_batches(num_envs, batch_envs, capacity)


class PreferenceNetwork:
    """Each snapshot's logits: its ``pref`` row whatever the observation (a huge margin: a deterministic pick)."""

    def apply(self, params, obs):
        return jnp.broadcast_to(params["pref"], obs.shape[:-1] + params["pref"].shape[-1:]), obs[..., 0]


def test_pool_seats_act_with_the_snapshot_of_the_game_their_env_plays():
    """A game carried over from the last rollout plays its carried slot; the j-th game started in this rollout
    plays the rollout's j-th draw for its env. Snapshot k always picks action k, so the actions show it."""
    from agents.envs.make import LeagueTaskState

    config = TrainConfig.from_fields(
        num_envs=6, num_steps=4, total_steps=24, league_size=3, league_learner_seats=2, league_groups=3
    )
    players = league.LeaguePlayers(config, PreferenceNetwork())
    draws = league.Draws(
        params={"pref": 1e4 * jnp.eye(3, 5)},
        slot=jnp.array([2, 0, 1, 1, 0, 2]),
        game=jnp.array([0, 3, 5, 0, 7, 1]),
        upcoming=jnp.array([[1, 1, 1, 1], [2, 0, 1, 0], [1, 0, 2, 1], [2, 2, 2, 2], [1, 2, 0, 2], [0, 1, 0, 0]]),
    )
    game = jnp.array([0, 4, 7, 0, 10, 1])  # games started since the rollout began: 0, 1, 2, 0, 3, 0
    expected = np.array([2, 2, 0, 1, 0, 2])
    roles = np.asarray(league.assign_roles(jax.random.key(3), 6, 2, 0.7))
    assert (roles == league.ROLE_POOL).any(1).all()
    env_state = LeagueTaskState(games=None, key=None, roles=jnp.asarray(roles), game=game)
    np.testing.assert_array_equal(players.playing(draws, env_state), expected)
    obs, mask = jnp.zeros((6, 8, 2)), jnp.ones((6, 8, 5), bool)
    _, learner, (pool_seats, action) = jax.jit(players.seats)(draws, env_state, obs, mask, jax.random.key(0))
    np.testing.assert_array_equal(learner, roles == league.ROLE_LEARNER)
    np.testing.assert_array_equal(pool_seats, roles == league.ROLE_POOL)
    pool_seats = np.asarray(pool_seats)
    np.testing.assert_array_equal(np.asarray(action)[pool_seats], np.repeat(expected[:, None], 8, 1)[pool_seats])


def test_results_count_a_loss_when_the_snapshot_placed_better():
    pool = league.pool_init(tiny_params(0.0), 3)
    roles = jnp.array([[0, 0, 1, 1, 2, 2, 2, 2]] * 5)
    rank = jnp.array(
        [
            [1, 2, 3, 4, 5, 6, 7, 8],  # learner better
            [7, 8, 1, 2, 3, 4, 5, 6],  # snapshot better
            [7, 8, 1, 2, 3, 4, 5, 6],  # not done
            [3, 4, 1, 2, 5, 6, 7, 8],  # snapshot better
            [3, 4, 1, 2, 5, 6, 7, 8],
        ]
    )  # snapshot better, but its slot was overwritten: not credited
    done = jnp.array([True, True, False, True, True])
    env_slot = jnp.array([2, 2, 0, 0, 1])  # the snapshot each env's game played
    credit = jnp.array([True, True, True, True, False])
    out = league.record_results(pool, env_slot, roles, done, rank, credit)
    np.testing.assert_array_equal(out.games, [1, 0, 2])
    np.testing.assert_array_equal(out.losses, [1, 0, 1])


def test_ratings_go_to_the_named_snapshots_and_a_new_snapshot_starts_unrated():
    pool = league.pool_init(tiny_params(0.0), 3)
    pool = league.pool_insert(pool, tiny_params(1.0), 5)  # slots: update 0, update 5, empty
    assert np.isnan(np.asarray(pool.rating)).all()
    names = {league.snapshot_name(5): 12.5, "greedy": 40.0, league.snapshot_name(7): 1.0}
    rated = league.with_ratings(pool, names)
    np.testing.assert_array_equal(rated.rating, [np.nan, 12.5, np.nan])  # no rating for update 0's slot
    rated = league.with_ratings(rated, {league.snapshot_name(0): -3.0})
    np.testing.assert_array_equal(rated.rating, [-3.0, 12.5, np.nan])  # the others keep theirs
    rated = league.pool_insert(rated, tiny_params(2.0), 9)  # slot 2
    rated = league.pool_insert(rated, tiny_params(3.0), 10)  # overwrites slot 0
    np.testing.assert_array_equal(rated.rating, [np.nan, 12.5, np.nan])


# ---- league rollouts whose games end inside them ----
#: 4-step games (2 rounds of 2 steps): 10-step rollouts see games end, new ones start, and one run on into the next
TINY_LEAGUE = dict(
    num_envs=8,
    num_steps=10,
    total_steps=160,
    hidden=(16,),
    num_minibatches=1,
    eval_every=0,
    max_rounds=2,
    steps_per_round=2,
    max_combat_ticks=20,
    league_size=3,
    league_learner_seats=2,
    league_pool_prob=0.6,
    league_groups=4,
    snapshot_every=1,
)


class LoggingPlayers(league.LeaguePlayers):
    """``LeaguePlayers`` that report through host callbacks what every step played and credited."""

    def __init__(self, config, network, log):
        super().__init__(config, network)
        self.log = log

    def seats(self, context, env_state, obs, mask, key):
        seen = dict(playing=self.playing(context, env_state), roles=env_state.roles, game=env_state.game)
        jax.debug.callback(self.log["seats"].append, seen, ordered=True)
        return super().seats(context, env_state, obs, mask, key)

    def record(self, context, stats, ts):
        after = super().record(context, stats, ts)
        seen = dict(
            done=ts.done,
            roles=ts.info["roles"],
            rank=ts.info["rank"],
            games=stats.games,
            losses=stats.losses,
            games_after=after.games,
            losses_after=after.losses,
        )
        jax.debug.callback(self.log["record"].append, seen, ordered=True)
        return after


@pytest.fixture(scope="module")
def league_rollouts():
    """Two rollouts of a league with 3 different snapshots, slot 0 overwritten by a 4th between them (one
    compiled rollout program): the per-step logs [2T, ...], the transitions, the runners before and after."""
    from agents.algorithms import registry as trainers
    from agents.envs.make import make_env

    config = TrainConfig.from_fields(**TINY_LEAGUE)
    trainer = trainers.make_train(config, make_env(config))
    log = {"seats": [], "record": []}
    trainer.players = LoggingPlayers(config, trainer.network, log)
    runner = jax.jit(trainer.init)(jax.random.key(0))

    def scaled(factor):
        return jax.tree_util.tree_map(lambda x: x * factor, runner.params)

    runner = runner.replace(
        league=league.pool_insert(league.pool_insert(runner.league, scaled(-1.0), 1), scaled(3.0), 2)
    )
    rollout = jax.jit(trainer.rollout)
    first, traj1, _ = rollout(runner, jax.random.key(1))
    between = first.replace(league=league.pool_insert(first.league, scaled(5.0), 3))  # into slot 0
    second, traj2, _ = rollout(between, jax.random.key(2))
    jax.block_until_ready(second)
    jax.effects_barrier()

    def stacked(entries):
        return {k: np.stack([np.asarray(e[k]) for e in entries]) for k in entries[0]}

    traj = jax.tree_util.tree_map(lambda a, b: np.concatenate([a, b]), traj1, traj2)
    return dict(
        seats=stacked(log["seats"]),
        record=stacked(log["record"]),
        traj=traj,
        start=runner,
        first=first,
        between=between,
        second=second,
    )


def games_of(done_column):
    """[(first step, last step, ended)] of one env's games over the logged steps."""
    out, first = [], 0
    for t, d in enumerate(done_column):
        if d:
            out.append((first, t, True))
            first = t + 1
    if first < len(done_column):
        out.append((first, len(done_column) - 1, False))
    return out


def test_games_ending_in_a_rollout_redraw_roles_and_snapshot_and_credit_the_snapshot_that_played(league_rollouts):
    seats, record = league_rollouts["seats"], league_rollouts["record"]
    steps, num_envs = seats["playing"].shape
    rollout_steps = TINY_LEAGUE["num_steps"]
    assert steps == 2 * rollout_steps and len(record["done"]) == steps
    done, playing, roles = record["done"], seats["playing"], seats["roles"]
    assert done[: rollout_steps - 1].any()  # games end inside the first rollout, new ones start in it
    np.testing.assert_array_equal(seats["game"][1:], seats["game"][:-1] + done[:-1])  # the env counts its games

    games_delta = np.zeros((steps, 3))
    losses_delta = np.zeros((steps, 3))
    redrawn_roles = redrawn_slot = orphaned = 0
    for e in range(num_envs):
        previous = None
        for first, last, ended in games_of(done[:, e]):
            # one snapshot and one set of roles for the whole game, also across the rollouts' boundary
            assert (playing[first : last + 1, e] == playing[first, e]).all()
            assert (roles[first : last + 1, e] == roles[first, e]).all()
            if previous is not None:
                redrawn_roles += not np.array_equal(roles[first, e], roles[previous, e])
                redrawn_slot += playing[first, e] != playing[previous, e]
            previous = first
            if not ended:
                continue
            np.testing.assert_array_equal(record["roles"][last, e], roles[first, e])  # the finished game's roles
            slot = playing[first, e]
            if slot == 0 and first < rollout_steps <= last:  # its snapshot was replaced in the middle of the game
                orphaned += 1
                continue
            learner, pooled = roles[first, e] == league.ROLE_LEARNER, roles[first, e] == league.ROLE_POOL
            if learner.any() and pooled.any():
                rank = record["rank"][last, e]
                games_delta[last, slot] += 1
                losses_delta[last, slot] += rank[pooled].mean() < rank[learner].mean()
    assert redrawn_roles > 0 and redrawn_slot > 0 and orphaned > 0  # the seeds cover every case
    # every step credited exactly the games that ended to the snapshots that played them
    np.testing.assert_array_equal(record["games_after"] - record["games"], games_delta)
    np.testing.assert_array_equal(record["losses_after"] - record["losses"], losses_delta)
    assert (games_delta.sum(0) > 0).sum() >= 2 and losses_delta.sum() > 0

    first, second = league_rollouts["first"], league_rollouts["second"]
    for runner in (first, second):  # the runner carries the pool's per-env state, in step with the env
        np.testing.assert_array_equal(runner.league.env_game, runner.env_state.game)
    np.testing.assert_array_equal(first.league.env_slot, playing[rollout_steps])  # the carried games' snapshots
    np.testing.assert_array_equal(
        first.league.env_update, np.asarray(league_rollouts["start"].league.update)[playing[rollout_steps]]
    )


def test_only_the_learners_seats_carry_training_weight_in_a_league(league_rollouts):
    """Pool and bot seats are never training data, whatever their roles in the game being played."""
    traj, roles = league_rollouts["traj"], league_rollouts["seats"]["roles"]
    decision = np.asarray(traj.mask).sum(-1) > 1
    learner = roles == league.ROLE_LEARNER
    np.testing.assert_array_equal(np.asarray(traj.weight), (decision & learner).astype(np.float32))
    assert (decision & (roles == league.ROLE_POOL)).any() and (decision & (roles == league.ROLE_BOT)).any()
    assert np.asarray(traj.weight).sum() > 0


def test_bot_seats_carry_no_training_weight_against_greedy_bots():
    """opponents="greedy" (no league): seat 0 is the learner's, the bots' seats 1..7 have weight 0."""
    from agents.algorithms import registry as trainers
    from agents.envs.make import make_env

    config = TrainConfig.from_fields(
        opponents="greedy", **{k: v for k, v in TINY_LEAGUE.items() if not k.startswith("league")}
    )
    trainer = trainers.make_train(config, make_env(config))
    runner = jax.jit(trainer.init)(jax.random.key(0))
    _, traj, _ = jax.jit(trainer.rollout)(runner, jax.random.key(1))
    weight, decision = np.asarray(traj.weight), np.asarray(traj.mask).sum(-1) > 1
    assert decision[..., 1:].any() and weight[..., 0].sum() > 0
    np.testing.assert_array_equal(weight[..., 1:], 0.0)
    np.testing.assert_array_equal(weight[..., 0], decision[..., 0].astype(np.float32))


def test_an_update_against_bots_trains_on_the_learners_seats_alone_as_on_all_eight():
    """With bot opponents the PPO update leaves the bots' seats (weight 0) out of its batch: on one minibatch
    and one epoch, the parameters it reaches equal those of the same update over all 8 seats' samples."""
    from agents.algorithms import registry as trainers
    from agents.envs.make import make_env

    config = TrainConfig.from_fields(
        opponents="greedy,greedy,self,greedy,random,greedy,self,greedy",
        **{k: v for k, v in TINY_LEAGUE.items() if not k.startswith("league")},
    )
    assert config.trained_seats == 2 and config.ppo.num_minibatches == 1 and config.ppo.update_epochs >= 1
    config = config.with_overrides({"update_epochs": 1})
    trainer = trainers.make_train(config, make_env(config))
    runner = jax.jit(trainer.init)(jax.random.key(0))
    _, traj, _ = jax.jit(trainer.rollout)(runner, jax.random.key(1))
    rng = np.random.default_rng(0)
    batch = Batch(
        traj,
        rng.normal(size=traj.weight.shape).astype(np.float32),
        rng.normal(size=traj.weight.shape).astype(np.float32),
    )
    sliced = trainer.learner_samples(batch)
    assert sliced.advantages.shape == traj.weight.shape[:2] + (2,)
    np.testing.assert_array_equal(sliced.advantages, batch.advantages[:, :, [2, 6]])
    key, hp = jax.random.key(2), runner.hparams
    learner_only, _, _ = jax.jit(lambda b: trainer.optimize(runner.params, runner.opt_state, b, key, hp, 0))(batch)
    every_seat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[3:]), batch)
    all_eight, _, _ = jax.jit(
        lambda f: trainer._epochs(trainer.network, runner.params, runner.opt_state, f, key, hp, 0)
    )(every_seat)
    moved = False
    for a, b, before in zip(*(jax.tree_util.tree_leaves(p) for p in (learner_only, all_eight, runner.params))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        moved |= not np.allclose(a, before)
    assert moved, "the update changed nothing: the comparison would not test anything"


# ---- a league run on the smoke preset's shapes ----
SMALL = dict(league_size=3, league_learner_seats=1, league_groups=2, snapshot_every=1, num_steps=8)


@pytest.mark.xdist_group("smoke_run")  # with tests/test_train.py's smoke run: the same bot evaluation program
def test_a_league_run_rates_the_learner_and_its_snapshots(tmp_path):
    """Through the CLI with best_by='rating': every evaluation logs the ratings, and the checkpoint
    restores the pool exactly, with each snapshot's rating from the last evaluation."""
    import json

    from agents.algorithms import registry as trainers
    from agents.envs.make import make_env
    from agents.storage.checkpoints import CheckpointStore
    from experiments import train as train_cli

    run_dir = tmp_path / "run"
    sets = [f"{k}={v}" for k, v in dict(SMALL, num_steps=16, best_by="rating").items()]
    summary = train_cli.main(
        ["--preset=smoke", "--out", str(run_dir), "--quiet", *[a for s in sets for a in ("--set", s)]]
    )
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()[1:]]
    assert [r["update"] for r in records] == [2, 4]
    for r in records:
        assert all(np.isfinite(r[k]) for k in ("eval/rating", "eval/rating_random", "eval/rating_greedy"))
    assert set(summary["final_eval"]) >= {"eval/rating", "eval/rating_random", "eval/rating_greedy"}

    config = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
    trainer = trainers.make_train(config, make_env(config))
    with CheckpointStore(run_dir / "checkpoints", keep=2) as store:
        _, runner, _ = store.restore(jax.eval_shape(trainer.init, jax.random.key(0)), 4)
    assert np.asarray(runner.league.update).tolist() == [3, 4, 2]  # ring buffer after 4 updates
    # and each env's game with its snapshot: the env and the pool count the same games (some ended in the run)
    np.testing.assert_array_equal(runner.league.env_game, runner.env_state.game)
    assert np.asarray(runner.league.env_game).min() > 0 and np.isin(runner.league.env_slot, [0, 1, 2]).all()
    assert np.isfinite(np.asarray(runner.league.rating)).all()  # all three were rated at update 4
    # the pool came back exactly: update 4's snapshot is the learner's parameters after update 4
    newest = jax.tree_util.tree_map(lambda stack: stack[1], runner.league.params)
    jax.tree_util.tree_map(np.testing.assert_array_equal, newest, runner.params)
    older = jax.tree_util.tree_map(lambda stack: stack[0], runner.league.params)
    assert not all(
        np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(older), jax.tree_util.tree_leaves(runner.params))
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(algo="a2c"), "needs algo='ppo'"),
        (dict(opponents="greedy"), "opponents='self'"),
        (dict(league_groups=3), "league_groups must divide num_envs=8"),
        (dict(league_learner_seats=8), "league_learner_seats"),
        (dict(league_bot="nobody"), "league_bot"),
        (dict(league_self_share=0.6, league_anchor_share=0.5, anchor="r"), "league_self_share \\+ league_anchor_share"),
        (dict(league_anchor_share=0.2), "the anchor's games need a frozen policy: set anchor"),
        (dict(league_anchor_share=0.2, anchor="r", league_pool_prob=0.0), "the anchor would play no game"),
        (dict(anchor="r", anchor_kl=0.0), "anchor_kl must be > 0 with an anchor that plays no league games"),
    ],
)
def test_league_config_errors_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_fields(num_envs=8, num_steps=8, total_steps=1024, league_size=4, **overrides)


# ---- independent learners: one parameter set per seat ----
@functools.cache
def independent_trainer():
    from agents.algorithms import registry as trainers
    from agents.envs.make import make_env

    config = preset_config("smoke").with_overrides(dict(independent=True, num_steps=8))
    return trainers.make_train(config, make_env(config))


def test_independent_learners_changing_one_seats_data_leaves_every_other_seats_update_unchanged():
    trainer = independent_trainer()
    runner = jax.jit(trainer.init)(jax.random.key(0))
    kernels = jax.tree_util.tree_leaves(runner.params)  # one parameter set per seat, initialised apart
    assert all(k.shape[0] == 8 for k in kernels)
    assert not np.allclose(kernels[1][0], kernels[1][1]) or not np.allclose(kernels[-1][0], kernels[-1][1])
    # a made-up batch of the rollout's shapes (no need to compile the game): every seat acts every step
    shapes = jax.eval_shape(trainer.rollout, runner, jax.random.key(1))[1]
    keys = iter(jax.random.split(jax.random.key(1), 8))
    num_actions = shapes.mask.shape[-1]
    traj = shapes.replace(
        obs=jax.random.normal(next(keys), shapes.obs.shape, shapes.obs.dtype),
        mask=jnp.ones(shapes.mask.shape, bool),
        action=jax.random.randint(next(keys), shapes.action.shape, 0, num_actions, shapes.action.dtype),
        log_prob=jnp.full(shapes.log_prob.shape, -np.log(num_actions), jnp.float32),
        value=jax.random.normal(next(keys), shapes.value.shape),
        reward=jnp.zeros(shapes.reward.shape),
        terminal=jnp.zeros(shapes.terminal.shape, bool),
        weight=jnp.ones(shapes.weight.shape),
    )
    advantages = jax.random.normal(jax.random.key(2), traj.reward.shape)
    targets = jax.random.normal(jax.random.key(3), traj.reward.shape)
    optimize = jax.jit(
        lambda batch: trainer.optimize(
            runner.params, runner.opt_state, batch, jax.random.key(4), runner.hparams, runner.update
        )[0]
    )
    before = optimize(Batch(traj, advantages, targets))
    j = 5  # seat j's advantages, targets and observations change
    changed = Batch(
        traj.replace(obs=traj.obs.at[:, :, j].add(1.0)), advantages.at[:, :, j].mul(-3.0), targets.at[:, :, j].add(2.0)
    )
    after = optimize(changed)
    chex.assert_tree_all_finite(before)
    for b, a in zip(jax.tree_util.tree_leaves(before), jax.tree_util.tree_leaves(after)):
        others = np.arange(8) != j
        np.testing.assert_array_equal(np.asarray(b)[others], np.asarray(a)[others])
    assert any(
        not np.array_equal(np.asarray(b)[j], np.asarray(a)[j])
        for b, a in zip(jax.tree_util.tree_leaves(before), jax.tree_util.tree_leaves(after))
    )


@pytest.mark.slow(reason="~1 min")
def test_independent_learners_train_a_whole_update():
    """The whole update (rollout, GAE, every seat's epochs) compiles and gives finite losses."""
    trainer = independent_trainer()
    runner, metrics = jax.jit(trainer.run, static_argnums=1)(jax.jit(trainer.init)(jax.random.key(0)), 1)
    assert np.isfinite(np.asarray(metrics["loss/policy"])).all()
    assert int(runner.update) == 1


def test_independent_config_errors_name_the_field():
    with pytest.raises(ValueError, match="independent"):
        TrainConfig.from_fields(num_envs=8, num_steps=8, total_steps=1024, independent=True, league_size=2)
    with pytest.raises(ValueError, match="one learner's samples"):
        TrainConfig.from_fields(num_envs=8, num_steps=8, total_steps=1024, independent=True, num_minibatches=3)


def test_one_seat_of_a_per_seat_stack_plays_as_its_own_policy():
    from agents.core.networks import OneSeat, PerSeat

    stacked = {"scale": jnp.arange(8.0)}
    obs = jnp.ones((3, 8, 5))
    per_seat, _ = PerSeat(ScaleNetwork(), 8).apply(stacked, obs)
    np.testing.assert_array_equal(per_seat[0, :, 0], np.arange(8.0))  # seat p through params[p]
    seat3, _ = OneSeat(ScaleNetwork(), 3).apply(stacked, obs)
    np.testing.assert_array_equal(seat3, np.full((3, 8, 5), 3.0))  # seat 3's learner in every seat
