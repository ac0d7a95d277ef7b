"""agents.envs.api: every adapter keeps the trainers' batched-env contract, and check_env catches broken envs."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("gymnax")

from agents.config import TrainConfig
from agents.envs.api import RULES, BatchedEnv, check_env
from agents.envs.gymnax_env import GymnaxVecEnv
from agents.envs.make import AutoChessTask, LeagueTask, learner_seats, make_env

# short games: an episode ends every 9 steps, so check_env's 24 steps see episode ends
SMALL = {"num_envs": 2, "max_rounds": 3, "steps_per_round": 3, "max_combat_ticks": 50}
GAME = pytest.mark.xdist_group("env_api")  # one worker compiles the game's programs


@pytest.mark.parametrize(
    "config, kind",
    [
        pytest.param(TrainConfig.from_fields(**SMALL, opponents="random"), AutoChessTask, marks=GAME, id="autochess"),
        pytest.param(
            TrainConfig.from_fields(**SMALL, num_steps=8, league_size=2, league_groups=2, league_bot="random"),
            LeagueTask,
            marks=GAME,
            id="league",
        ),
        pytest.param(TrainConfig.from_fields(env="gymnax:CartPole-v1", num_envs=2), GymnaxVecEnv, id="gymnax"),
    ],
)
def test_every_adapter_keeps_the_contract(config, kind):
    env = make_env(config)
    assert isinstance(env, kind) and isinstance(env, BatchedEnv)
    assert check_env(env)["episodes"] > 0  # the rules about done steps ran
    np.testing.assert_array_equal(learner_seats(env), env.learner_seats)


# ---- broken envs: CartPole (cheap to compile) with one thing wrong ----
MISSING = object()


class Broken:
    """``GymnaxVecEnv("CartPole-v1", 2)`` with ``fix`` applied to every TimeStep and attributes overridden."""

    def __init__(self, label, fix=lambda ts: ts, reset_fix=None, step_out=None, reset_out=None, **attrs):
        self.label = label
        self.env = GymnaxVecEnv("CartPole-v1", 2)
        self.fix, self.reset_fix = fix, reset_fix or fix
        self.step_out, self.reset_out = step_out or (lambda *out: out), reset_out or (lambda *out: out)
        for name in ("num_envs", "num_players", "num_actions", "obs_shape", "learner_seats"):
            value = attrs.get(name, getattr(self.env, name))
            if value is not MISSING:
                setattr(self, name, value)
        if "all_actions_legal" in attrs:
            self.all_actions_legal = attrs["all_actions_legal"]

    def __repr__(self):
        return f"Broken({self.label})"

    def reset(self, key):
        state, ts = self.env.reset(key)
        return self.reset_out(state, self.reset_fix(ts))

    def step(self, state, actions):
        state, ts = self.env.step(state, actions)
        return self.step_out(state, self.fix(ts))


def info(ts, **changes):
    """``ts`` with info keys changed (MISSING deletes one)."""
    new = {**ts.info, **changes}
    return ts.replace(info={k: v for k, v in new.items() if v is not MISSING})


def noisy_reward(ts):
    noise = jax.pure_callback(
        lambda: np.random.default_rng().random(ts.reward.shape, np.float32),
        jax.ShapeDtypeStruct(ts.reward.shape, jnp.float32),
    )
    return ts.replace(reward=ts.reward + noise)


BROKEN = {
    "protocol": (Broken("no learner_seats", learner_seats=MISSING), "missing: learner_seats"),
    "sizes": (Broken("bool num_envs", num_envs=True), "num_envs = True"),
    "obs_shape": (Broken("list obs_shape", obs_shape=[4]), "obs_shape = [4]"),
    "learner_seats": (Broken("no learner", learner_seats=np.zeros(1, bool)), "bool[1] [False]"),
    "reset.trace": (Broken("reset returns a TimeStep", reset_out=lambda state, ts: ts), "returned a TimeStep"),
    "step.trace": (Broken("step fails", step_out=lambda state, ts: state.no_such_field), "raised AttributeError"),
    "step.state": (
        Broken(
            "state changes dtype",
            step_out=lambda state, ts: (
                state.replace(env_state=jax.tree_util.tree_map(lambda x: x.astype(jnp.float16), state.env_state)),
                ts,
            ),
        ),
        "became float16[2]",
    ),
    "timestep": (Broken("info list", lambda ts: ts.replace(info=list(ts.info.values()))), "info is a list"),
    "observation": (
        Broken("short obs", lambda ts: ts.replace(observation=ts.observation[..., :2])),
        "float32[2, 1, 2], expected [2, 1, *(4,)]",
    ),
    "action_mask": (
        Broken("int8 mask", lambda ts: ts.replace(action_mask=ts.action_mask.astype(jnp.int8))),
        "action_mask is int8[2, 1, 2]",
    ),
    "reward": (
        Broken("reward [N]", lambda ts: ts.replace(reward=ts.reward[:, 0])),
        "reward is float32[2], expected float32[2, 1]",
    ),
    "done": (Broken("int done", lambda ts: ts.replace(done=ts.done.astype(jnp.int32))), "done is int32[2]"),
    "seat_done": (Broken("no seat_done", lambda ts: info(ts, seat_done=MISSING)), "info has only"),
    "rank": (Broken("float rank", lambda ts: info(ts, rank=jnp.zeros((2, 1)))), 'info["rank"] is float32[2, 1]'),
    "roles": (Broken("float roles", lambda ts: info(ts, roles=jnp.zeros((2, 1)))), 'info["roles"] is float32[2, 1]'),
    "legal_action": (
        Broken("empty mask row", lambda ts: ts.replace(action_mask=ts.action_mask.at[1, 0].set(False))),
        "the first at reset, env 1, seat 0",
    ),
    "all_actions_legal": (
        Broken(
            "declared legal, one masked",
            lambda ts: ts.replace(action_mask=ts.action_mask.at[1, 0, 1].set(False)),
            all_actions_legal=True,
        ),
        "1 masked (env, seat, action) entries, the first at reset, env 1, seat 0, action 1",
    ),
    "reset.done": (Broken("done at reset", reset_fix=lambda ts: ts.replace(done=jnp.ones(2, bool))), "done = [True"),
    "finite": (
        Broken("nan reward", lambda ts: ts.replace(reward=ts.reward.at[0, 0].set(jnp.nan)), lambda ts: ts),
        "step: reward has 24 non-finite values",
    ),
    "seat_done.done": (
        Broken("seat_done never", lambda ts: info(ts, seat_done=jnp.zeros((2, 1), bool))),
        "done but seat_done = [False]",
    ),
    "rank.values": (
        Broken("never ranked", lambda ts: info(ts, rank=jnp.zeros((2, 1), jnp.int32))),
        "done but seat 0 has rank 0",
    ),
    "determinism": (Broken("noisy reward", noisy_reward), "differs between runs"),
}


@pytest.mark.parametrize("rule", list(BROKEN))
def test_check_env_names_the_env_and_the_broken_rule(rule):
    env, detail = BROKEN[rule]
    pattern = rf"check_env\({re.escape(repr(env))}\): \[{re.escape(rule)}\] {re.escape(RULES[rule])}; .*"
    with pytest.raises(AssertionError, match=pattern + re.escape(detail)):
        check_env(env)


def test_every_rule_has_a_broken_env():
    assert set(BROKEN) == set(RULES)


def test_a_pytree_observation_passes_with_a_matching_obs_shape():
    def two(ts):
        return ts.replace(observation={"a": ts.observation, "b": ts.observation.astype(jnp.uint8)})

    check_env(Broken("dict obs", two, obs_shape={"a": (4,), "b": (4,)}), num_steps=2)
    with pytest.raises(AssertionError, match=r"\[observation\].*structure"):
        check_env(Broken("dict obs, tuple obs_shape", two), num_steps=2)
