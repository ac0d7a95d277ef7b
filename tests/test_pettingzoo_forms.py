"""PettingZoo the way its users wire it (agents.interop.pettingzoo_env): the module factories and their forms,
PettingZoo's AEC checkers, ``state()`` against a plain reading of the game and of the fights that follow, the
flat observations, and SuperSuit's black_death route to a VecEnv: through a plain-Python copy of it in the
default suite, through SuperSuit itself and the SB3 recipe of docs/interop.md when they are installed.
(tests/test_interop.py runs ``parallel_api_test`` and ``parallel_seed_test``.)"""

import contextlib
import pathlib
import re
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium import spaces  # noqa: E402

from agents.interop import pettingzoo_env as pz  # noqa: E402
from jaxgame import constants as C  # noqa: E402
from jaxgame import observation as observation_lib  # noqa: E402
from jaxgame.game import PLACEMENT_REWARDS  # noqa: E402
from tests import tiny_games  # noqa: E402
from tests.tiny_games import TINY  # noqa: E402

#: the env steps the tiny game with env.step, the program tests/test_env.py's loop compiles
tiny_group = pytest.mark.xdist_group(tiny_games.group)
OBS = observation_lib.OBS_SIZE
FLAT = C.NUM_ACTIONS + OBS
#: what api_test warns for every env with dict observations that is not in its list of PettingZoo's own
#: (``env_obs_dicts``): the dict with ``observation`` and ``action_mask`` is PettingZoo's masking convention
DICT_OBSERVATION_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
)
DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "interop.md"


@contextlib.contextmanager
def _checker_warnings_fail(allowed=()):
    """The checkers report problems as warnings: any warning raised from PettingZoo fails, but ``allowed``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    problems = {
        f"{w.filename}: {w.message}" for w in caught if "/pettingzoo/" in w.filename and str(w.message) not in allowed
    }
    assert not problems, "\n".join(sorted(problems))


def _legal(rng, masks):
    """int64[n]: a random legal action per row of bool/int masks [n, 258], 0 for a row without any."""
    return np.array([rng.choice(np.flatnonzero(m)) if np.any(m) else 0 for m in masks], np.int64)


# ---------------------------------------------------------------- the factories and PettingZoo's checkers


@tiny_group
def test_factories_make_the_parallel_and_aec_forms():
    """parallel_env is the ParallelEnv; raw_env PettingZoo's converter of it (which converts back to the same
    object); env adds AssertOutOfBoundsWrapper: a bad action fails at its seat's turn, where the raw form only
    refuses it when the game steps after the 8th seat."""
    from pettingzoo import AECEnv
    from pettingzoo.utils.conversions import aec_to_parallel
    from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

    par = pz.parallel_env(rules=TINY, flatten=True)
    assert type(par) is pz.AutoChessParallelEnv and par.flatten and par.config.max_rounds == TINY["max_rounds"]
    raw, aec = pz.raw_env(rules=TINY), pz.env(rules=TINY)
    assert isinstance(raw, OrderEnforcingWrapper) and isinstance(aec, AssertOutOfBoundsWrapper)
    for form in (raw, aec):
        assert isinstance(form, AECEnv) and type(form.unwrapped) is pz.AutoChessParallelEnv
        assert form.unwrapped.config == par.config and not form.unwrapped.flatten
        assert form.possible_agents == list(pz.AGENTS) and form.state_space == par.state_space
    assert aec_to_parallel(raw) is raw.unwrapped

    aec.reset(seed=0)
    with pytest.raises(AssertionError):
        aec.step(C.NUM_ACTIONS)
    raw.reset(seed=0)
    raw.step(C.NUM_ACTIONS)  # seat_0's action is kept until the last seat has acted
    for _ in range(C.NUM_PLAYERS - 2):
        raw.step(0)
    with pytest.raises(ValueError, match=r"seat_0: action must be an int in \[0, 258\)"):
        raw.step(0)


@tiny_group
def test_pettingzoo_aec_api_seed_and_state_tests_pass():
    """api_test on the AEC form (dict and flat observations), seed_test, and state_test (AEC and parallel)."""
    from pettingzoo.test import api_test, seed_test, state_test

    with _checker_warnings_fail(allowed=DICT_OBSERVATION_WARNINGS):
        api_test(pz.env(rules=TINY), num_cycles=1000)
    with _checker_warnings_fail():
        api_test(pz.env(rules=TINY, flatten=True), num_cycles=1000)
        seed_test(lambda: pz.env(rules=TINY), num_cycles=500)
        state_test(pz.env(rules=TINY), pz.parallel_env(rules=TINY), num_cycles=50)


# ---------------------------------------------------------------- state()


def _check_seat_blocks(state, game):
    """Each seat's block of ``state()`` against the GameState's fields read in numpy: life, gold, level,
    alive; its shop (present flags) and its bench and board (present flags, stars, species)."""
    players = game.players
    record = observation_lib.UNIT_FEATURES
    for p in range(C.NUM_PLAYERS):
        vec = state[p * OBS : (p + 1) * OBS]
        np.testing.assert_allclose(
            vec[[0, 1, 2, 9]],
            [players.life[p] / 100, players.gold[p] / 50, players.level[p] / C.MAX_LEVEL, players.alive[p]],
            rtol=1e-6,
            err_msg=f"seat {p}",
        )
        start, end = observation_lib.OBS_LAYOUT["shop"]
        np.testing.assert_array_equal(vec[start:end].reshape(-1, record)[:, 0], players.shop[p] >= 0)
        start, end = observation_lib.OBS_LAYOUT["slots"]
        slots = vec[start:end].reshape(-1, record)
        species = players.species[p]
        np.testing.assert_array_equal(slots[:, 0], species >= 0)
        np.testing.assert_allclose(slots[:, 1], players.stars[p] / 3, rtol=1e-6)
        np.testing.assert_array_equal(np.rint(slots[:, -1] * 28).astype(int) - 1, np.where(species >= 0, species, -1))


@tiny_group
def test_state_is_every_seat_and_the_next_pairing():
    """Over a whole game: state() lies in state_space (float32[4720]); seat p's block equals seat p's own
    observation and the GameState's fields; each one-hot pairing row names the seat that seat then fights
    (its last_opponent once the round's fight is over); once the game ended, state() is its last state's,
    and the seats placed at the end saw their blocks as their final observations."""
    env, rng = pz.parallel_env(rules=TINY), np.random.default_rng(1)
    assert env.state_space.shape == (pz.STATE_SIZE,) == (C.NUM_PLAYERS * (OBS + C.NUM_PLAYERS),)
    with pytest.raises(RuntimeError, match="before reset"):
        env.state()
    observations, _ = env.reset(seed=4)
    fights_checked = 0
    while env.agents:
        state, game = env.state(), env._state
        assert state.dtype == np.float32 and env.state_space.contains(state)
        for a in env.agents:
            p = pz.AGENTS.index(a)
            np.testing.assert_allclose(state[p * OBS : (p + 1) * OBS], observations[a]["observation"], atol=1e-6)
        _check_seat_blocks(state, game)
        pairing = state[C.NUM_PLAYERS * OBS :].reshape(C.NUM_PLAYERS, C.NUM_PLAYERS)
        assert set(np.unique(pairing)) <= {0.0, 1.0} and (pairing.sum(axis=1) <= 1).all()
        live = list(env.agents)
        actions = _legal(rng, [observations[a]["action_mask"] for a in live])
        observations, _, terminations, _, _ = env.step(dict(zip(live, actions.tolist(), strict=True)))
        after = env._final if env._final is not None else env._state
        if int(after.round) != int(game.round):  # the round's fight was fought
            for p, q in zip(*np.nonzero(pairing), strict=True):
                assert int(after.players.last_opponent[p]) == q, (p, q)
                fights_checked += 1
    assert fights_checked >= 4
    final = env.state()
    np.testing.assert_array_equal(final, np.asarray(pz.world_state(env._final, env.config)))
    _check_seat_blocks(final, env._final)
    for a in terminations:
        p = pz.AGENTS.index(a)
        np.testing.assert_allclose(final[p * OBS : (p + 1) * OBS], observations[a]["observation"], atol=1e-6)


# ---------------------------------------------------------------- flat observations


@tiny_group
def test_flat_observations_are_gymnasium_flatten_of_the_dict():
    """flatten=True gives gymnasium.spaces.flatten of the dict observation in flatten_space of the dict space;
    action_masks reads the mask back; bad arguments are refused."""
    flat_env, dict_env = pz.parallel_env(rules=TINY, flatten=True), pz.parallel_env(rules=TINY)
    space = dict_env.observation_space("seat_0")
    flat_space = flat_env.observation_space("seat_3")
    assert flat_space == spaces.flatten_space(space) and flat_space.shape == (FLAT,)
    assert flat_space.dtype == np.float32 and (flat_space.high[: C.NUM_ACTIONS] == 1).all()
    flat, _ = flat_env.reset(seed=2)
    dicts, _ = dict_env.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(6):
        for a in dicts:
            assert flat[a].dtype == np.float32 and flat_env.observation_space(a).contains(flat[a])
            np.testing.assert_array_equal(flat[a], spaces.flatten(space, dicts[a]))
            np.testing.assert_array_equal(pz.action_masks(flat[a]), dicts[a]["action_mask"] == 1)
        live = list(dict_env.agents)
        actions = dict(zip(live, _legal(rng, [dicts[a]["action_mask"] for a in live]).tolist(), strict=True))
        flat, *_ = flat_env.step(actions)
        dicts, *_ = dict_env.step(actions)
    with pytest.raises(ValueError, match="flatten=True needs obs='vector'"):
        pz.parallel_env(obs="pixels", flatten=True)
    with pytest.raises(ValueError, match=f"last axis must be {FLAT}"):
        pz.action_masks(np.zeros((2, OBS), np.float32))


# ---------------------------------------------------------------- SuperSuit's black_death route


class _BlackDeathVec:
    """A plain-Python copy of ``supersuit.pettingzoo_env_to_vec_env_v1(supersuit.black_death_v3(env))`` as
    SuperSuit 3.11 writes them: one slot per seat; the env is stepped with the actions of its live seats only; a
    seat not in the step's results gets a zero observation and a zero reward; every slot is done when every seat
    in the results is terminated AND truncated (3.11's operator: all() of no seats is True, so a game whose
    seats all terminated ends on the next step, which steps the env with no actions); then the env resets."""

    def __init__(self, env):
        self.env = env
        self.zeros = np.zeros(env.observation_space(pz.AGENTS[0]).shape, np.float32)

    def _stack(self, observations):
        return np.stack([observations.get(a, self.zeros) for a in pz.AGENTS])

    def reset(self, seed=None):
        observations, infos = self.env.reset(seed=seed)
        return self._stack(observations), [infos.get(a, {}) for a in pz.AGENTS]

    def step(self, actions):
        live = {a: actions[i] for i, a in enumerate(pz.AGENTS) if a in self.env.agents}
        observations, rewards, terminations, truncations, infos = self.env.step(live)
        done = all(terminations[a] and truncations[a] for a in terminations)
        rewards = np.array([rewards.get(a, 0.0) for a in pz.AGENTS], np.float32)
        infos = [infos.get(a, {}) for a in pz.AGENTS]
        stacked = self.reset()[0] if done else self._stack(observations)
        return stacked, rewards, np.full(C.NUM_PLAYERS, done), np.full(C.NUM_PLAYERS, done), infos


def _play_black_death_games(vec, space, games, rng):
    """Plays ``games`` games with random legal actions through a black-death VecEnv of the flat env
    (``reset(seed=)`` -> (obs float32[8, 840], infos); ``step(int[8])`` -> (obs, rewards[8], terminated[8],
    truncated[8], infos)) and checks: every observation lies in ``space``; every slot of a new game has a legal
    action; a seat placed (``rank`` in its info) before the last step has a zero observation, no legal action and
    zero rewards until the game ends; all 8 slots are done on the same step; the places are 1..8 once and each
    slot's return is its place's reward. Returns, per game, whether the done step came after the places (the
    episode ending one step late, with zero rewards)."""
    observations, _ = vec.reset(seed=0)
    late = []
    for _ in range(games):
        returns, ranks, gone = np.zeros(C.NUM_PLAYERS), {}, set()
        assert (pz.action_masks(observations).sum(axis=1) >= 1).all()
        while True:
            masks = pz.action_masks(observations)
            for i in range(C.NUM_PLAYERS):
                assert space.contains(observations[i])
                assert (i not in gone) or not (observations[i].any() or masks[i].any()), i
            observations, rewards, terminated, truncated, infos = vec.step(_legal(rng, masks))
            assert not rewards[sorted(gone)].any()
            returns += rewards
            gone = set(ranks)
            for i, info in enumerate(infos):
                if "rank" in info:
                    assert i not in ranks
                    ranks[i] = info["rank"]
            assert terminated.all() == terminated.any() and truncated.all() == truncated.any()
            if terminated.any() or truncated.any():
                late.append(not any("rank" in info for info in infos) and not rewards.any())
                break
        assert sorted(ranks.values()) == list(range(1, C.NUM_PLAYERS + 1))
        for i, rank in ranks.items():
            np.testing.assert_allclose(returns[i], PLACEMENT_REWARDS[rank - 1], rtol=0, atol=1e-6, err_msg=str(i))
    return late


@tiny_group
def test_black_death_semantics_without_supersuit():
    """Whole games through the plain-Python copy of SuperSuit 3.11's route: a knocked-out seat keeps a zero
    observation and zero reward until the game ends, which 3.11 reports one step late (the step that the env,
    finished, answers with five empty dicts)."""
    env = pz.parallel_env(rules=TINY, flatten=True)
    late = _play_black_death_games(_BlackDeathVec(env), env.observation_space("seat_0"), 3, np.random.default_rng(5))
    assert late == [True] * 3


# ---------------------------------------------------------------- opt-in: SuperSuit, Stable-Baselines3


@tiny_group
def test_black_death_semantics_through_supersuit():
    """The same games through SuperSuit's own black_death_v3 and pettingzoo_env_to_vec_env_v1."""
    ss = pytest.importorskip("supersuit")
    env = pz.parallel_env(rules=TINY, flatten=True)
    vec = ss.pettingzoo_env_to_vec_env_v1(ss.black_death_v3(env))
    assert vec.num_envs == C.NUM_PLAYERS and vec.observation_space == env.observation_space("seat_0")
    _play_black_death_games(vec, vec.observation_space, 3, np.random.default_rng(5))


def _doc_recipe() -> str:
    """The SuperSuit/SB3 code block of docs/interop.md's PettingZoo section."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## PettingZoo: the 8 seats") :]
    section = section[: section.index("\n## ", 1)]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "black_death_v3" in b]
    assert len(blocks) == 1, "docs/interop.md: one python block with the SuperSuit recipe"
    return blocks[0]


def _shrunk(recipe: str) -> str:
    """The recipe on the tiny rules for 3 updates of 16 slots x 64 steps, logging to ``recorder``; each
    replaced text must occur once."""
    for old, new in [
        ("parallel_env(flatten=True)", "parallel_env(flatten=True, rules=TINY)"),
        ("n_steps=256, batch_size=512,", "n_steps=64, batch_size=256, n_epochs=2,"),
        (
            "model.learn(total_timesteps=200_000)",
            "model.set_logger(Logger(folder=None, output_formats=[recorder]))\n"
            "model.learn(total_timesteps=3 * 16 * 64, log_interval=1)",
        ),
    ]:
        assert recipe.count(old) == 1, f"docs/interop.md recipe: {old!r}"
        recipe = recipe.replace(old, new)
    return recipe


@tiny_group
def test_docs_supersuit_recipe_trains_maskable_ppo():
    """The docs' recipe, shrunk: MaskablePPO trains 3 updates on 2 tiny games (3,072 steps): its losses are
    finite and change, monitored episodes have a placement reward as return, and predict picks legal actions."""
    pytest.importorskip("supersuit")
    pytest.importorskip("sb3_contrib")
    from stable_baselines3.common.logger import Logger

    from tests.sb3_logs import assert_losses_moved, log_recorder

    namespace = {"TINY": TINY, "Logger": Logger, "recorder": log_recorder()}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The `render_mode` attribute is not defined")  # SuperSuit's VecEnv
        exec(compile(_shrunk(_doc_recipe()), str(DOC), "exec"), namespace)
    model, recorder = namespace["model"], namespace["recorder"]
    assert_losses_moved(model, recorder, updates=3, timesteps=3 * 16 * 64)
    episode_returns = [r["rollout/ep_rew_mean"] for r in recorder.rows if "rollout/ep_rew_mean" in r]
    assert episode_returns and all(PLACEMENT_REWARDS.min() <= r <= PLACEMENT_REWARDS.max() for r in episode_returns)
    masks = pz.action_masks(namespace["observations"])
    actions = namespace["actions"]
    assert actions.shape == (16,) and all(masks[i, a] for i, a in enumerate(actions) if masks[i].any())


def test_a_second_parallel_env_of_a_configuration_compiles_nothing():
    """Equal games share their jitted reset and step (``jaxgame.AutoChessEnv`` is a static argument compared by
    value): a second ``parallel_env`` of the same rules runs its first reset and step at once (issue 69 item 3, as
    the Gymnasium and SB3 views do: tests/test_interop.py)."""
    import time

    def first_reset_and_step(env) -> float:
        start = time.perf_counter()
        observations, _ = env.reset(seed=3)
        env.step({a: int(np.flatnonzero(o["action_mask"])[0]) for a, o in observations.items()})
        return time.perf_counter() - start

    first_reset_and_step(pz.parallel_env(rules=TINY))  # compiles (or already compiled by an earlier test)
    second = pz.parallel_env(rules=TINY)
    assert second.game == pz.parallel_env(rules=TINY).game and second.game is not pz.parallel_env(rules=TINY).game
    assert first_reset_and_step(second) <= 1.0
