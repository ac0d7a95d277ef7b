"""The Gymnasium single-seat env and the PettingZoo parallel env (agents.interop): each library's own checkers,
the learner's view of a game, observation bounds, determinism, opponents from every source, and bad input."""

import contextlib
import time
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import agents.interop  # noqa: E402,F401  (registers jaxgame/AutoChess-v0)
from agents.interop import ENV_ID  # noqa: E402
from agents.interop.gymnasium_env import AutoChessSingleSeatEnv  # noqa: E402
from jaxgame import constants as C  # noqa: E402
from jaxgame.game import PLACEMENT_REWARDS  # noqa: E402
from jaxgame.observation import OBS_LAYOUT  # noqa: E402
from tests import tiny_games  # noqa: E402
from tests.tiny_games import TINY  # noqa: E402

#: the tests on the tiny single-seat game share its compiled programs in one worker
interop_group = pytest.mark.xdist_group("interop")
#: the PettingZoo env steps the tiny game with env.step, the program tests/test_env.py's loop compiles
tiny_group = pytest.mark.xdist_group(tiny_games.group)


#: every source of opponents at one table: a shipped baseline (played with the tiny rules, with a warning),
#: and two bots; one compiled program serves the tests below
MIXED = ["baseline:ppo_small-v1"] * 3 + ["greedy"] * 2 + ["random"] * 2

#: the observation's step-in-round entry (step_in_round / steps_per_round) and its turn-ended and alive flags
STEP_IN_ROUND, TURN_ENDED, ALIVE = (OBS_LAYOUT["self"][0] + i for i in (6, 8, 9))


@pytest.fixture(scope="module")
def tiny_mixed():
    with pytest.warns(UserWarning, match="trained with"):
        return gymnasium.make(ENV_ID, opponents=MIXED, rules=TINY, render_mode="rgb_array").unwrapped


@contextlib.contextmanager
def _checker_warnings_fail():
    """The checkers report problems as warnings: any warning raised from Gymnasium or PettingZoo fails."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    problems = [
        f"{w.filename}: {w.message}"
        for w in caught
        if "/gymnasium/" in w.filename or "/pettingzoo/" in w.filename or "WARN:" in str(w.message)
    ]
    assert not problems, "\n".join(problems)


def _play(env, seed, rng):
    """One episode with random legal actions -> (observations, rewards, infos), the reset's first."""
    obs, info = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], [info]
    terminated = False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        assert not truncated
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
    return observations, rewards, infos


@interop_group
def test_gymnasium_env_checker_passes(tiny_mixed):
    from gymnasium.utils.env_checker import check_env

    with _checker_warnings_fail():
        check_env(tiny_mixed)
    frame = tiny_mixed.render()
    assert frame.shape == (288, 320, 3) and frame.dtype == np.uint8


@interop_group
def test_an_episode_is_the_learners_decisions_until_its_place(tiny_mixed):
    """Every step offers a choice (2+ legal actions) until the end; observations lie in the declared space;
    the summed reward is the placement reward of the final rank; the episode ends when the learner is
    knocked out or the game ends."""
    env, rng = tiny_mixed, np.random.default_rng(0)
    ranks = []
    for seed in range(4):
        observations, rewards, infos = _play(env, seed, rng)
        assert all(env.observation_space.contains(o) for o in observations)
        assert all(i["action_mask"].sum() >= 2 for i in infos[:-1])
        assert all(i["game_steps"] >= 1 for i in infos[1:])
        rank = infos[-1]["rank"]
        assert 1 <= rank <= 8 and "rank" not in infos[-2]
        ts = env._state.timestep  # the last mask is the legal actions of the state the final observation shows
        last = ts.info["final_state"] if bool(ts.done) else env._state.game
        np.testing.assert_array_equal(
            infos[-1]["action_mask"], np.asarray(env.game.env.action_mask(last))[int(env._state.seat)]
        )
        np.testing.assert_allclose(sum(rewards), PLACEMENT_REWARDS[rank - 1], rtol=0, atol=1e-6)
        ranks.append(rank)
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)
    assert len(set(ranks)) > 1, "every game ended with the same place: the episodes are not varied"


@interop_group
def test_same_seed_same_episode_other_seed_other(tiny_mixed):
    env = tiny_mixed
    first = _play(env, 5, np.random.default_rng(1))
    again = _play(env, 5, np.random.default_rng(1))
    assert len(first[0]) == len(again[0])
    for a, b in zip(first[0], again[0]):
        np.testing.assert_array_equal(a, b)
    assert [i["seat"] for i in first[2]] == [i["seat"] for i in again[2]]
    assert not np.array_equal(first[0][0], env.reset(seed=6)[0])


@interop_group
def test_a_chosen_seat(tiny_mixed):
    env = tiny_mixed
    for seed in range(3):
        obs, info = env.reset(seed=seed, options={"seat": 5})
        assert info["seat"] == 5 and env.observation_space.contains(obs)
        obs, reward, terminated, _, info = env.step(int(np.flatnonzero(env.action_masks())[-1]))
        assert env.observation_space.contains(obs) and info["seat"] == 5
        np.testing.assert_array_equal(env.action_masks(), info["action_mask"])


@interop_group
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"opponents": ["greedy"] * 6}, ValueError, "opponents"),
        ({"opponents": "no-such-run-dir"}, ValueError, "no-such-run-dir"),
        ({"seat": 8}, ValueError, "seat"),
        ({"render_mode": "human"}, ValueError, "render_mode"),
        ({"obs": "both"}, ValueError, "obs"),
        ({"rules": {"max_rounds": 0}}, ValueError, "max_rounds"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        AutoChessSingleSeatEnv(**kwargs)


@interop_group
def test_an_action_outside_the_space_is_refused(tiny_mixed):
    tiny_mixed.reset(seed=0)
    for action in (-1, C.NUM_ACTIONS, 2.5):
        with pytest.raises(ValueError, match="action"):
            tiny_mixed.step(action)
    with pytest.raises(ValueError, match="seat"):
        tiny_mixed.reset(seed=0, options={"seat": 8})


# ---------------------------------------------------------------- PettingZoo


@pytest.fixture(scope="module")
def parallel_env():
    pytest.importorskip("pettingzoo")
    from agents.interop.pettingzoo_env import AutoChessParallelEnv

    return AutoChessParallelEnv(rules=TINY, render_mode="rgb_array")


@tiny_group
def test_pettingzoo_api_and_seed_tests_pass(parallel_env):
    from pettingzoo.test import parallel_api_test, parallel_seed_test

    from agents.interop.pettingzoo_env import AutoChessParallelEnv

    with _checker_warnings_fail():
        parallel_api_test(parallel_env, num_cycles=1000)
        parallel_seed_test(lambda: AutoChessParallelEnv(rules=TINY), num_cycles=500)


@tiny_group
def test_pettingzoo_game_ends_with_every_place_and_its_reward(parallel_env):
    """Seats leave as they are knocked out, each with its place; the places are 1..8 once; each seat's
    summed reward is the placement reward of its place; masks are PettingZoo's int8."""
    env, rng = parallel_env, np.random.default_rng(0)
    observations, _ = env.reset(seed=3)
    totals, ranks = dict.fromkeys(env.possible_agents, 0.0), {}
    while env.agents:
        before = list(env.agents)
        for a in before:
            assert observations[a]["action_mask"].dtype == np.int8
            assert env.observation_space(a).contains(observations[a])
        actions = {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in before}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        assert set(rewards) == set(before) and not any(truncations.values())
        for a in before:
            totals[a] += rewards[a]
            assert ("rank" in infos[a]) == terminations[a] == (a not in env.agents)
            if terminations[a]:
                ranks[a] = infos[a]["rank"]
    assert sorted(ranks.values()) == list(range(1, 9))
    for a, rank in ranks.items():
        np.testing.assert_allclose(totals[a], PLACEMENT_REWARDS[rank - 1], rtol=0, atol=1e-6, err_msg=a)
    assert env.render().shape == (288, 640, 3)
    assert env.step({}) == ({}, {}, {}, {}, {})  # a finished game, as PettingZoo's converters step one
    with pytest.raises(ValueError, match="reset"):
        env.step({"seat_0": 0})


@tiny_group
def test_pettingzoo_masks_belong_to_their_observations(parallel_env):
    """Every observation comes with its own state's mask, a terminating seat's final one too (the finished game's,
    not the next game's): only the no-op is legal exactly when the observation shows the seat's turn ended or the
    seat out of the game."""
    env, rng, out_at_end = parallel_env, np.random.default_rng(2), 0

    def check(observations):
        for agent, o in observations.items():
            no_choice = o["observation"][TURN_ENDED] == 1 or o["observation"][ALIVE] == 0
            assert (o["action_mask"].sum() == 1) == no_choice, agent

    for seed in (3, 4):
        observations, _ = env.reset(seed=seed)
        while env.agents:
            check(observations)
            actions = {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in env.agents}
            observations, _, terminations, _, _ = env.step(actions)
            check(observations)
        out_at_end += sum(o["observation"][ALIVE] == 0 for o in observations.values())  # knocked out in the last fight
    assert out_at_end >= 1  # the check met the final observations of a game's end with seats out of the game


def test_vector_env_resets_a_finished_game_in_the_same_step():
    """gymnasium.make_vec: one batch of single-seat games; a terminated game's last observation and place are
    in the infos (with their masks) and its slot already holds a new game's first observation."""
    venv = gymnasium.make_vec(
        ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", opponents="random", rules=TINY
    )
    obs, info = venv.reset(seed=0)
    assert obs.shape == (3, venv.single_observation_space.shape[0]) and venv.observation_space.contains(obs)
    rng, finished, totals = np.random.default_rng(0), [], np.zeros(3)
    while len(finished) < 4:
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs, reward, terminated, truncated, info = venv.step(actions)
        totals += reward
        assert not truncated.any() and venv.observation_space.contains(obs)
        np.testing.assert_array_equal(info["_final_obs"], terminated)
        # some learner decides at every step (lock-step: the others may have one legal action); a new game at a choice
        assert (info["action_mask"].sum(axis=1) >= 2).any()
        assert (info["action_mask"][terminated].sum(axis=1) >= 2).all()
        for i in np.flatnonzero(terminated):
            assert 1 <= info["rank"][i] <= 8 and venv.single_observation_space.contains(info["final_obs"][i])
            np.testing.assert_allclose(totals[i], PLACEMENT_REWARDS[info["rank"][i] - 1], atol=1e-6)
            finished.append(int(info["rank"][i]))
            totals[i] = 0.0
    with pytest.raises(ValueError, match="actions"):
        venv.step(np.zeros(2, np.int64))


@interop_group
def test_gymnasium_make_works_after_import_jaxgame_alone():
    """A fresh interpreter: ``import gymnasium, jaxgame`` registers the id (no ``agents`` import needed)."""
    import subprocess
    import sys

    code = (
        "import gymnasium, jaxgame, sys; assert 'agents' not in sys.modules; "
        "assert 'jaxgame/AutoChess-v0' in gymnasium.registry; "
        "spec = gymnasium.spec('jaxgame/AutoChess-v0'); print(spec.entry_point, spec.vector_entry_point)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == [
        "agents.interop.gymnasium_env:AutoChessSingleSeatEnv",
        "agents.interop.gymnasium_env:AutoChessVectorEnv",
    ]


@pytest.fixture(scope="module")
def random_vector():
    """3 tiny games against random bots as one vector env, with the single env of the same games."""
    from agents.interop.gymnasium_env import AutoChessVectorEnv

    return AutoChessVectorEnv(num_envs=3, opponents="random", rules=TINY), AutoChessSingleSeatEnv("random", rules=TINY)


@interop_group
def test_vector_env_takes_a_list_of_seeds_and_gives_per_env_info_masks(random_vector):
    """``reset(seed=[...])`` seeds each env as the single env's ``reset(seed=s)`` does (same first observation, mask
    and seat); an int seeds env i with seed + i; a None leaves that env's game to its own generator; every info key
    has its ``_key`` mask; a bad seed list is refused with one line."""
    venv, single = random_vector
    obs, info = venv.reset(seed=[11, 12, 13])
    for i, s in enumerate([11, 12, 13]):
        want_obs, want_info = single.reset(seed=s)
        np.testing.assert_array_equal(obs[i], want_obs)
        np.testing.assert_array_equal(info["action_mask"][i], want_info["action_mask"])
        assert info["seat"][i] == want_info["seat"]
    for key in ("action_mask", "seat"):
        np.testing.assert_array_equal(info[f"_{key}"], np.ones(3, bool))
    again, _ = venv.reset(seed=11)  # env i: 11 + i
    np.testing.assert_array_equal(again, obs)
    kept, _ = venv.reset(seed=[None, 12, None])  # envs 0 and 2 go on with their generators: new games
    np.testing.assert_array_equal(kept[1], obs[1])
    assert not np.array_equal(kept[0], obs[0]) or not np.array_equal(kept[2], obs[2])
    rng = np.random.default_rng(0)
    ended = False
    while not ended:
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        _, _, terminated, _, info = venv.step(actions)
        np.testing.assert_array_equal(info["_action_mask"], np.ones(3, bool))
        np.testing.assert_array_equal(info["_rank"], terminated)
        ended = terminated.any()
    for bad in ([1, 2], [1, 2, -3], [1.5, 2, 3], "0", True):
        with pytest.raises(ValueError, match="seed must be None, a non-negative int or a list of 3"):
            venv.reset(seed=bad)


def _random_legal(rng, masks):
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def _hasty(rng, mask) -> int:
    """End the turn (action 0) half the time, else a random legal action: turns end at different steps."""
    return 0 if rng.random() < 0.5 else int(rng.choice(np.flatnonzero(mask)))


@interop_group
def test_vector_env_steps_its_games_in_step(random_vector):
    """Every step plays the same game steps in every game: after each step all envs' games are at the same step of
    their round (new games too, started at a round's start like the others); a learner whose turn ended while
    another decides gets steps with one legal action (games stepped one by one fall out of step instead)."""
    venv, _ = random_vector
    obs, info = venv.reset(seed=0)
    rng, ended, one_action = np.random.default_rng(0), 0, 0
    for _ in range(40):
        np.testing.assert_array_equal(obs[:, STEP_IN_ROUND], obs[0, STEP_IN_ROUND])
        assert (info["action_mask"].sum(axis=1) >= 2).any()
        one_action += int((info["action_mask"].sum(axis=1) == 1).sum())
        obs, _, terminated, _, info = venv.step(_random_legal(rng, info["action_mask"]))
        ended += int(terminated.sum())
    assert ended >= 2 and one_action >= 5, (ended, one_action)  # the run met autoresets and one-action steps


@interop_group
def test_vector_env_learners_decide_as_in_the_single_env(random_vector):
    """Env i seeded with s: its steps with two or more legal actions, up to its episode's end, are the single env's
    steps from ``reset(seed=s)`` (same observations and masks, given the same choices), with the same final
    observation, place and summed reward; the one-action steps between them are the lock-step's. Its next game is
    the single env's next ``reset()``'s."""
    venv, single = random_vector
    seeds = [21, 22, 23]
    obs, info = venv.reset(seed=seeds)
    rngs = [np.random.default_rng(i) for i in range(3)]
    seen, totals, ranks, calls, episode_calls = [[] for _ in seeds], np.zeros(3), [None] * 3, 0, [0] * 3
    next_game = [None] * 3
    while None in ranks:
        actions = np.zeros(3, np.int64)  # anything: at a one-action step every action is the no-op
        for i, mask in enumerate(info["action_mask"]):
            if ranks[i] is None and mask.sum() >= 2:
                seen[i].append((obs[i], mask))
                actions[i] = _hasty(rngs[i], mask)
        obs, reward, terminated, _, info = venv.step(actions)
        calls += 1
        for i in range(3):
            if ranks[i] is None:
                totals[i] += reward[i]
                if terminated[i]:
                    ranks[i], episode_calls[i] = int(info["rank"][i]), calls
                    seen[i].append((info["final_obs"][i], None))
                    next_game[i] = obs[i]
    assert any(n > len(s) - 1 for n, s in zip(episode_calls, seen))  # some env's episode had one-action steps
    for i, seed in enumerate(seeds):
        rng, (single_obs, single_info) = np.random.default_rng(i), single.reset(seed=seed)
        total, terminated = 0.0, False
        for step, (vector_obs, vector_mask) in enumerate(seen[i]):
            np.testing.assert_array_equal(vector_obs, single_obs, err_msg=f"env {i} step {step}")
            if vector_mask is None:
                assert terminated and single_info["rank"] == ranks[i]
                break
            np.testing.assert_array_equal(vector_mask, single_info["action_mask"])
            single_obs, reward, terminated, _, single_info = single.step(_hasty(rng, vector_mask))
            total += reward
        np.testing.assert_allclose(totals[i], total, rtol=0, atol=1e-5)
        np.testing.assert_array_equal(next_game[i], single.reset()[0])


@interop_group
def test_a_second_instance_of_a_configuration_compiles_nothing(random_vector):
    """Every view instance of one configuration shares its jitted programs (agents.interop.program_cache): the
    second single env, vector env and SB3 VecEnv run their first reset and step at once, where the first compiled."""
    from agents.interop.gymnasium_env import AutoChessVectorEnv
    from agents.interop.sb3_vec_env import SeatVecEnv

    first_vector, first_single = random_vector
    first_single.reset(seed=0)
    first_single.step(int(np.flatnonzero(first_single.action_masks())[0]))  # compiled (or already)
    first_vector.reset(seed=0)
    first_sb3 = SeatVecEnv(2, rules=TINY, seed=0)
    first_sb3.reset()

    def first_reset_and_step(make, step):
        """(env, seconds): a new instance, its first reset and one legal step."""
        start = time.perf_counter()
        env = make()
        step(env, env.reset(seed=1) if not isinstance(env, SeatVecEnv) else env.reset())
        return env, time.perf_counter() - start

    def legal(masks):
        return np.asarray([np.flatnonzero(m)[0] for m in masks])

    single, single_s = first_reset_and_step(
        lambda: AutoChessSingleSeatEnv("random", rules=TINY),
        lambda e, out: e.step(int(np.flatnonzero(out[1]["action_mask"])[0])),
    )
    vector, vector_s = first_reset_and_step(
        lambda: AutoChessVectorEnv(num_envs=3, opponents="random", rules=TINY),
        lambda e, out: e.step(legal(out[1]["action_mask"])),
    )
    sb3, sb3_s = first_reset_and_step(
        lambda: SeatVecEnv(2, rules=TINY, seed=1), lambda e, out: e.step(legal(e.action_masks()))
    )
    assert single.game.run is first_single.game.run and vector._play_all is first_vector._play_all
    assert sb3._play_all is first_sb3._play_all
    assert max(single_s, vector_s, sb3_s) <= 1.0, (single_s, vector_s, sb3_s)
    other = AutoChessSingleSeatEnv("greedy", rules=TINY)  # another configuration: its own programs
    assert other.game.run is not first_single.game.run
