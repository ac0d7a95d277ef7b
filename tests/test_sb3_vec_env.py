"""The SB3 VecEnv over the batched game (agents.interop.sb3_vec_env).

Default suite (no SB3): ``SeatVecEnv``'s contract on tiny games: shapes and dtypes, masks that are the game's legal
actions, episodes that end at a knock-out or the game's end with the placement reward, waiting seats, equality with
a plain-Python loop of the single-game env (the documented semantics written out), determinism, opponents from every
source, bad arguments. Opt-in (``sb3_contrib`` installed): SB3's wrappers and sb3-contrib's mask lookup on the
``VecEnv``, and ``MaskablePPO`` training on it."""

import jax
import numpy as np
import pytest

from agents.interop.sb3_vec_env import SeatVecEnv
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame import units
from jaxgame.game import PLACEMENT_REWARDS
from jaxgame.observation import OBS_LAYOUT
from tests import tiny_games
from tests.tiny_games import TINY

#: the reference loop steps the tiny game with env.step, the program tests/test_env.py's loop compiles
tiny_group = pytest.mark.xdist_group(tiny_games.group)
NUM_GAMES = 2
ALIVE = OBS_LAYOUT["self"][0] + 9  # the "alive" feature of a seat's own block


@pytest.fixture(scope="module")
def selfplay():
    """2 tiny games x 8 learner seats: one compiled program for the tests below."""
    return SeatVecEnv(NUM_GAMES, rules=TINY, seed=0)


def _legal(rng, masks):
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def _check_pools(games):
    """Pool conservation and board invariants of a batch of games (numpy)."""
    p = jax.device_get(games.players)
    shop_copies = (p.shop[..., None] == np.arange(sp.NUM_SPECIES)).sum(axis=(-2, -3))
    owned = ((p.species[..., None] == np.arange(sp.NUM_SPECIES)) * sp.COPIES_PER_STAR[p.stars][..., None]).sum(
        axis=(-2, -3)
    )
    np.testing.assert_array_equal(
        np.asarray(games.pool) + shop_copies + owned, np.broadcast_to(sp.SPECIES_POOL_COPIES, np.shape(games.pool))
    )
    assert np.all(p.gold >= 0) and np.all(np.asarray(units.board_count(p.species)) <= p.level)


class Reference:
    """The module docstring's semantics for all-learner games, written plainly with the single game's ``env.step``:
    every game steps once with the actions, then all step on while no seat of any game has a choice and no game
    ended; each seat's episode is tracked by a flag."""

    def __init__(self, env, games):
        self.env = env
        self.states = [jax.tree_util.tree_map(lambda x, g=g: x[g], games) for g in range(NUM_GAMES)]
        self.masks = [np.asarray(env.action_mask(s)) for s in self.states]
        self.in_episode = [np.ones(8, bool) for _ in self.states]

    def step(self, actions):
        """actions int[NUM_GAMES * 8] -> (obs, rewards, dones, terminal observations, ranks, waiting), flattened, and
        the game steps played."""
        actions = np.asarray(actions, np.int32).reshape(NUM_GAMES, 8)
        reward, done = np.zeros((NUM_GAMES, 8), np.float32), np.zeros((NUM_GAMES, 8), bool)
        final, rank = np.zeros((NUM_GAMES, 8, self.env.obs_size), np.float32), np.zeros((NUM_GAMES, 8), np.int32)
        ended, steps, obs = np.zeros(NUM_GAMES, bool), 0, [None] * NUM_GAMES
        while steps == 0 or not (ended.any() or any((m.sum(-1) >= 2).any() for m in self.masks)):
            for g in range(NUM_GAMES):
                chosen = actions[g] if steps == 0 else self.masks[g].argmax(-1).astype(np.int32)
                self.states[g], ts = self.env.step(self.states[g], chosen)
                ts = jax.device_get(ts)
                reward[g] += ts.reward
                ended[g], self.masks[g] = bool(ts.done), np.asarray(ts.action_mask)
                for s in range(8):
                    if self.in_episode[g][s] and not done[g, s] and (ended[g] or not ts.info["alive"][s]):
                        done[g, s], final[g, s], rank[g, s] = True, ts.info["final_observation"][s], ts.info["rank"][s]
                obs[g] = np.asarray(ts.observation)
            steps += 1
        for g in range(NUM_GAMES):
            self.in_episode[g] = np.ones(8, bool) if ended[g] else self.in_episode[g] & ~done[g]
        return (
            np.concatenate(obs),
            reward.ravel(),
            done.ravel(),
            final.reshape(16, -1),
            rank.ravel(),
            ~np.concatenate(self.in_episode),
            steps,
        )


@tiny_group
def test_shapes_dtypes_masks_and_spaces(selfplay):
    env = selfplay
    assert env.num_envs == NUM_GAMES * 8 and env.learners == tuple(range(8))
    obs = env.reset()
    assert obs.shape == (16, env.observation_space.shape[0]) and obs.dtype == np.float32
    rng = np.random.default_rng(0)
    for _ in range(30):
        masks = env.action_masks()
        assert masks.shape == (16, C.NUM_ACTIONS) and masks.dtype == np.bool_ and masks.any(axis=1).all()
        # the masks are the game's own legal actions of each seat now
        game_masks = jax.device_get(jax.vmap(env.table.env.action_mask)(env.games))
        np.testing.assert_array_equal(masks, game_masks.reshape(16, C.NUM_ACTIONS))
        obs, reward, done, infos = env.step(_legal(rng, masks))
        assert obs.dtype == np.float32 and reward.dtype == np.float32 and done.dtype == np.bool_
        assert obs.shape == (16, env.observation_space.shape[0]) and reward.shape == done.shape == (16,)
        assert isinstance(infos, list) and len(infos) == 16 and all(isinstance(i, dict) for i in infos)
        assert all(env.observation_space.contains(o) for o in obs)
        assert env.game_steps >= 1
        _check_pools(env.games)


@tiny_group
def test_episodes_end_at_a_knock_out_or_the_game_end_with_the_placement_reward(selfplay):
    """Each seat-env's episode returns its placement reward; a game's 8 episodes take the places 1..8; a seat knocked
    out mid-game waits (no-op only, reward 0, its terminal view and its new view show it out) until its game ends."""
    env, rng = selfplay, np.random.default_rng(1)
    env.reset(seed=3)
    returns, places = np.zeros(16, np.float32), [[] for _ in range(NUM_GAMES)]
    games_ended = np.zeros(NUM_GAMES, int)
    knocked_out = 0
    while games_ended.min() < 3:
        was_waiting = env.waiting.copy()
        masks = env.action_masks()
        np.testing.assert_array_equal(masks[was_waiting].sum(-1), 1)
        assert not masks[was_waiting][:, 1:].any()
        obs, reward, done, infos = env.step(_legal(rng, masks))
        assert not (done & was_waiting).any() and (reward[was_waiting] == 0).all()
        returns += reward
        for i in np.flatnonzero(done):
            info = infos[i]
            assert set(info) == {"terminal_observation", "TimeLimit.truncated", "rank"}
            assert info["TimeLimit.truncated"] is False and 1 <= info["rank"] <= 8
            final = info["terminal_observation"]
            assert final.shape == obs[i].shape and final.dtype == np.float32 and env.observation_space.contains(final)
            np.testing.assert_allclose(returns[i], PLACEMENT_REWARDS[info["rank"] - 1], atol=1e-6)
            returns[i] = 0.0
            places[i // 8].append(info["rank"])
            if env.waiting[i]:  # out while its game goes on: the terminal view and the next both show it out
                knocked_out += 1
                assert info["terminal_observation"][ALIVE] == 0 and obs[i][ALIVE] == 0
        assert not [i for i, info in enumerate(infos) if info and not done[i]]
        for g in range(NUM_GAMES):
            seats = slice(8 * g, 8 * g + 8)
            if (done[seats] & ~env.waiting[seats]).any():  # the game ended: every seat starts a new one
                assert not env.waiting[seats].any() and (obs[seats][:, ALIVE] == 1).all()
                assert sorted(places[g]) == list(range(1, 9)), places[g]
                places[g] = []
                games_ended[g] += 1
    assert knocked_out > 0


@tiny_group
def test_equals_a_plain_python_loop_of_the_single_game_env(selfplay):
    """Step for step equal to ``Reference``. The seats end their turn 9 times in 10, so that steps where no seat has a
    choice (played on inside the call) occur."""
    env, rng = selfplay, np.random.default_rng(2)
    env.reset(seed=7)
    ref = Reference(tiny_games.tiny_env(), env.games)
    ends, skipped = 0, 0
    for _ in range(50):
        actions = np.where(rng.random(16) < 0.9, C.ACTION_END_TURN, _legal(rng, env.action_masks()))
        obs, reward, done, infos = env.step(actions)
        want_obs, want_reward, want_done, want_final, want_rank, want_waiting, want_steps = ref.step(actions)
        assert env.game_steps == want_steps
        np.testing.assert_array_equal(obs, want_obs)
        np.testing.assert_array_equal(reward, want_reward)
        np.testing.assert_array_equal(done, want_done)
        np.testing.assert_array_equal(env.waiting, want_waiting)
        np.testing.assert_array_equal(env.action_masks(), np.concatenate(ref.masks))
        for i in np.flatnonzero(done):
            np.testing.assert_array_equal(infos[i]["terminal_observation"], want_final[i])
            assert infos[i]["rank"] == want_rank[i]
        ends += int(done.sum())
        skipped += env.game_steps > 1
    assert ends >= 3 * 16 and skipped >= 3


@tiny_group
def test_same_seed_same_run_other_seed_other(selfplay):
    env = selfplay

    def run(seed):
        rng, trace = np.random.default_rng(0), [env.reset(seed=seed)]
        for _ in range(25):
            obs, reward, done, infos = env.step(_legal(rng, env.action_masks()))
            trace += [obs, reward, done, *(i["terminal_observation"] for i in infos if i)]
        return trace

    first, again, other = run(4), run(4), run(5)
    assert len(first) == len(again)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


#: the opponents of tests/test_interop.py's single-seat game (a shipped baseline, trained with other rules: a
#: warning, and bots), clockwise after the learner; for learner seat 3 they sit in seats 4 5 6 7 0 1 2
SINGLE_SEAT_OPPONENTS = ["baseline:ppo_small-v1"] * 3 + ["greedy"] * 2 + ["random"] * 2
MIXED = {(3 + 1 + i) % 8: spec for i, spec in enumerate(SINGLE_SEAT_OPPONENTS)}
mixed_group = pytest.mark.xdist_group("sb3_vec_env_mixed")


@mixed_group
def test_one_learner_with_opponents_equals_the_single_seat_game():
    """One game, seat 3 learns against bots and a baseline: step for step the single-seat game (the Gymnasium env's)
    from the same state until the learner's episode ends (same observations, masks, rewards, end and place). Then
    the seat-env is at a new game's start at once, also after a knock-out (the game without learners is dropped)."""
    from agents.interop.single_seat import SeatState, SingleSeatGame

    with pytest.warns(UserWarning, match="trained with"):
        env = SeatVecEnv(1, learners=[3], opponents=[MIXED[s] for s in sorted(MIXED)], rules=TINY)
    with pytest.warns(UserWarning, match="trained with"):
        single = SingleSeatGame(SINGLE_SEAT_OPPONENTS, rules=TINY)
    assert env.num_envs == 1 and env.opponents == MIXED
    rng, knocked_out, places = np.random.default_rng(0), 0, []
    for seed in range(4):
        obs = env.reset(seed=seed)
        game, timestep, key = jax.tree_util.tree_map(lambda x: x[0], (env.games, env.states.timestep, env.states.key))
        state = SeatState(game, timestep, np.int32(3), key)
        np.testing.assert_array_equal(obs[0], timestep.observation[3])
        terminated = False
        while not terminated:
            action = _legal(rng, env.action_masks())
            obs, reward, done, infos = env.step(action)
            state, out = jax.device_get(single.step(state, np.int32(action[0])))
            terminated = bool(out.terminated)
            assert done[0] == terminated and env.game_steps == out.game_steps
            np.testing.assert_array_equal(reward[0], out.reward)
            if not terminated:
                np.testing.assert_array_equal(obs[0], out.observation)
                np.testing.assert_array_equal(env.action_masks()[0], out.action_mask)
        np.testing.assert_array_equal(infos[0]["terminal_observation"], out.observation)
        assert infos[0]["rank"] == out.rank
        knocked_out += not bool(state.timestep.done)  # out while its game went on
        places.append(int(out.rank))
        assert not env.waiting[0] and obs[0][ALIVE] == 1 and (env.action_masks()[0].sum() >= 2)
        assert int(env.games.step_in_round[0]) == 0 and int(env.games.round[0]) == 1
        assert np.asarray(env.games.players.alive[0]).all()
    assert knocked_out >= 1, places


@mixed_group
def test_learner_seats_among_bots_never_wait_in_a_game_without_learners():
    """Seats 2 and 5 of 3 games learn among bots: each learner episode returns its placement reward; a seat waits
    only while the other learner of its game plays on (mask: the no-op, reward 0); after every step some learner
    has a choice."""
    env = SeatVecEnv(
        3, learners=[5, 2], opponents=["greedy", "random", "random", "expert", "random", "greedy"], rules=TINY, seed=0
    )
    assert env.learners == (2, 5) and env.num_envs == 6
    assert env.opponents == {0: "greedy", 1: "random", 3: "random", 4: "expert", 6: "random", 7: "greedy"}
    env.reset()
    rng, returns, finished, waited = np.random.default_rng(0), np.zeros(6, np.float32), [], 0
    while len(finished) < 24:
        was_waiting = env.waiting.copy()
        obs, reward, done, infos = env.step(_legal(rng, env.action_masks()))
        returns += reward
        assert (reward[was_waiting] == 0).all() and not (done & was_waiting).any()
        masks = env.action_masks()
        assert (masks.sum(-1) >= 2).any(), "a step ended with no learner at a choice"
        assert not env.waiting.reshape(3, 2).all(axis=1).any(), "a game without learners goes on"
        np.testing.assert_array_equal(masks[env.waiting].sum(-1), 1)
        waited += int(env.waiting.sum())
        for i in np.flatnonzero(done):
            np.testing.assert_allclose(returns[i], PLACEMENT_REWARDS[infos[i]["rank"] - 1], atol=1e-6)
            returns[i] = 0.0
            finished.append(infos[i]["rank"])
    assert waited > 0 and len(set(finished)) > 1
    _check_pools(env.games)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_games": 0}, "num_games must be an int >= 1"),
        ({"num_games": True}, "num_games must be an int >= 1"),
        ({"learners": []}, "learners must be None"),
        ({"learners": [0, 8]}, "learners must be None"),
        ({"learners": [1, 1]}, "learners must be None"),
        ({"learners": [True]}, "learners must be None"),
        ({"learners": 3}, "learners must be None"),
        ({"learners": [0], "opponents": ["random"] * 6}, r"opponents must be a player spec or a sequence of 7"),
        ({"learners": [0, 1], "opponents": ["random", ""] * 3}, r"opponents must be .* sequence of 6"),
        ({"opponents": "nobody", "learners": [0]}, "nobody"),
        ({"seed": 1.5}, "seed must be None or an int"),
        ({"rules": [1]}, "rules must be None or a dict"),
        ({"rules": {"steps_per_round": -1}}, "steps_per_round"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        SeatVecEnv(**kwargs)
    assert "\n" not in str(error.value)


@tiny_group
def test_bad_actions_are_refused(selfplay):
    env = selfplay
    env.reset()
    for bad in (
        np.zeros(15, np.int64),
        np.zeros(16, np.float32),
        np.full(16, C.NUM_ACTIONS),
        np.full(16, -1),
        np.zeros((16, 1), np.int64),
    ):
        with pytest.raises(ValueError, match=r"actions must be ints in \[0, 258\) of shape \(16,\)"):
            env.step(bad)
    fresh = SeatVecEnv(1, learners=[0], rules=TINY)  # no compile: refused before any step
    with pytest.raises(RuntimeError, match="before reset"):
        fresh.step(np.zeros(1, np.int64))


# ---------------------------------------------------------------- opt-in: stable-baselines3 and sb3-contrib


@tiny_group
def test_sb3_wrappers_masks_and_vec_env_methods(selfplay):
    """VecCheckNan (raising) over VecMonitor over the VecEnv for whole games: no NaN or inf, one monitored episode
    per seat and game with the seat's return; sb3-contrib finds and reads the masks; the attribute methods."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import VecCheckNan, VecEnv, VecMonitor

    from agents.interop.sb3_vec_env import make_sb3_vec_env, sb3_vec_env_class

    one = make_sb3_vec_env(3, learners=[4], opponents="greedy", rules=TINY)  # built, not compiled: no reset
    assert isinstance(one, VecEnv) and one.num_envs == 3 and one.get_attr("learners") == [(4,)] * 3
    venv = sb3_vec_env_class()(selfplay)
    assert isinstance(venv, VecEnv) and venv.num_envs == 16 and venv.render_mode is None
    wrapped = VecCheckNan(VecMonitor(venv), raise_exception=True)
    assert is_masking_supported(wrapped)
    wrapped.seed(11)
    first = wrapped.reset()
    wrapped.seed(11)
    np.testing.assert_array_equal(wrapped.reset(), first)
    rng, returns, episodes = np.random.default_rng(3), np.zeros(16), 0
    for _ in range(40):
        masks = get_action_masks(wrapped)
        assert masks.shape == (16, C.NUM_ACTIONS) and masks.dtype == np.bool_
        obs, reward, done, infos = wrapped.step(_legal(rng, masks))
        returns += reward
        for i in np.flatnonzero(done):
            assert infos[i]["episode"]["r"] == pytest.approx(returns[i], abs=1e-5)
            assert infos[i]["episode"]["r"] == pytest.approx(PLACEMENT_REWARDS[infos[i]["rank"] - 1], abs=1e-5)
            returns[i], episodes = 0.0, episodes + 1
    assert episodes >= 16
    assert venv.get_attr("learners", indices=[0, 3]) == [tuple(range(8))] * 2
    assert venv.env_is_wrapped(VecMonitor) == [False] * 16
    assert len(venv.env_method("action_masks", indices=[1, 2])) == 2
    with pytest.raises(AttributeError, match="action_masks"):
        venv.env_method("render")
    with pytest.raises(ValueError, match="for all indices"):
        venv.set_attr("anything", 1, indices=[0])
    with pytest.raises(AttributeError):
        venv.get_attr("no_such_attribute")


@tiny_group
def test_maskable_ppo_trains_on_it(selfplay):
    """MaskablePPO for 3 updates of 16 seat-envs x 64 steps on the tiny games: the losses it logs are finite and
    change, and the policy moves (its entropy changes)."""
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecMonitor

    from agents.interop.sb3_vec_env import sb3_vec_env_class
    from tests.sb3_logs import assert_losses_moved, log_recorder

    recorder = log_recorder()
    venv = VecMonitor(sb3_vec_env_class()(selfplay))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a busy 2-core machine torch's thread pool turns this 1 s run into a minute
    try:
        model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=128, n_epochs=2, seed=0, device="cpu")
        model.set_logger(Logger(folder=None, output_formats=[recorder]))
        model.learn(total_timesteps=3 * 16 * 64, log_interval=1)
    finally:
        torch.set_num_threads(threads)
    assert_losses_moved(model, recorder, updates=3, timesteps=3 * 16 * 64)
    assert "rollout/ep_rew_mean" in recorder.rows[0] and np.isfinite(recorder.rows[0]["rollout/ep_rew_mean"])
