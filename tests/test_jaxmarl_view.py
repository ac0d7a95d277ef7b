"""The JaxMARL-style multi-agent view (agents.interop.jaxmarl_env): pure JAX, at VecEnv speed under vmap, ``step``
keyed as JaxMARL's ``MultiAgentEnv.step``, the world state of PettingZoo's ``state()``; JaxMARL's own wrappers
and a few IPPO updates where ``jaxmarl`` is installed, a copy of its ``LogWrapper`` in the default suite."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.interop.jaxmarl_env import STATE_SIZE, AutoChessMultiAgentEnv, WorldStateWrapper
from jaxgame import constants as C
from tests import tiny_games
from tests.jaxprs import cond_count
from tests.tiny_games import TINY, host_tree, tiny_env

# every test here steps the tiny game with env.step (test_env.py's loop compiles it too) and shares the view's
# reset program
tiny_group = pytest.mark.xdist_group(tiny_games.group)
JAXMARL_MISSING = "jaxmarl is not installed (pip install jaxmarl==0.2.0: its wrappers, checked against the view)"


def _marl(**kwargs) -> AutoChessMultiAgentEnv:
    return AutoChessMultiAgentEnv(rules=TINY, **kwargs)


@functools.cache
def _game():
    """A whole tiny game through the game's own step, random legal actions: (states, masks, actions, steps):
    states[t] before step t, masks[t] bool[8, 258] its legal actions, actions[t] int32[8], steps[t] the game's
    TimeStep of step t; the last step ends the game."""
    game, rng = tiny_env(), np.random.default_rng(0)
    state, ts = game.reset(jax.random.key(5))
    states, masks, actions, steps = [], [], [], []
    while not steps or not bool(steps[-1].done):
        masks.append(np.asarray(ts.action_mask))
        actions.append(np.array([rng.choice(np.flatnonzero(m)) for m in masks[-1]], np.int32))
        states.append(state)
        state, ts = game.step(state, actions[-1])
        steps.append(ts)
    return states, masks, actions, steps


def _by_agent(x) -> dict:
    return {f"seat_{i}": x[i] for i in range(C.NUM_PLAYERS)}


def _assert_trees_equal(a, b):
    """Leaf for leaf equal (typed PRNG keys by their key data), the same tree structure."""
    a, b = host_tree(a), host_tree(b)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)


def test_jaxmarl_view_keeps_vecenv_branches_under_vmap():
    """jax.vmap of the view's step has VecEnv's fight and reset conds and one more, its own reset from the
    step keys, a cond too (a select would reset every game on every step) (traced, not compiled)."""
    marl, num = _marl(), 4
    keys = jax.random.split(jax.random.key(0), num)
    _, states = jax.eval_shape(jax.vmap(marl.reset), keys)
    actions = {a: jax.ShapeDtypeStruct((num,), jnp.int32) for a in marl.agents}
    vec_conds = cond_count(
        jax.make_jaxpr(jaxgame.VecEnv(tiny_env(), num).step)(states, jax.ShapeDtypeStruct((num, 8), jnp.int32)).jaxpr
    )
    assert vec_conds >= 2
    assert cond_count(jax.make_jaxpr(jax.vmap(marl.step))(keys, states, actions).jaxpr) == vec_conds + 1


@tiny_group
def test_jaxmarl_view_is_the_game_step_by_step():
    """The dicts hold the game's own step, seat by seat, over fights, knock-outs and a game end (the view calls
    the jitted env.step: the same program as the game's); on the last step the finished game's rewards, ranks
    and final observations, and the new game ``reset(jax.random.split(key)[1])`` starts."""
    marl = _marl()
    states, masks, actions, steps = _game()
    obs, state = marl.reset(jax.random.key(5))
    _assert_trees_equal(state, states[0])
    agents, knocked_out = marl.agents, False
    for t, (chosen, ts) in enumerate(zip(actions, steps, strict=True)):
        np.testing.assert_array_equal(np.stack([marl.get_avail_actions(state)[a] for a in agents]), masks[t])
        key = jax.random.fold_in(jax.random.key(9), t)
        obs, state, rewards, dones, infos = marl.step(key, state, dict(zip(agents, chosen, strict=True)))
        for i, a in enumerate(agents):
            np.testing.assert_array_equal(rewards[a], ts.reward[i])
            assert bool(dones[a]) == bool(ts.done | ~ts.info["alive"][i])
        assert bool(dones["__all__"]) == bool(ts.done) == (t == len(steps) - 1)
        knocked_out |= any(bool(dones[a]) for a in agents) and not bool(ts.done)
        if not ts.done:
            _assert_trees_equal((obs, state), (_by_agent(ts.observation), states[t + 1]))
    assert knocked_out, "no seat was knocked out before the game ended"
    _assert_trees_equal(infos["final_observation"], steps[-1].info["final_observation"])
    np.testing.assert_array_equal(infos["rank"], steps[-1].info["rank"])
    assert sorted(np.asarray(infos["rank"]).tolist()) == list(range(1, 9))
    _assert_trees_equal((obs, state), marl.reset(jax.random.split(key)[1]))
    assert all(bool(marl.observation_space(a).contains(obs[a])) for a in agents)


@tiny_group
def test_step_uses_its_key_as_jaxmarl_does():
    """JaxMARL's contract: the same key, state and actions give the same result; on the step a game ends the new
    game is ``reset(jax.random.split(key)[1])``, another key starts another game, and the finished game's
    rewards, dones and infos do not depend on the key; ``step_env`` is the step without the reset; a step that
    does not end the game does not use the key; ``reset_state`` replaces the reset."""
    marl = _marl()
    states, _, actions, steps = _game()
    end, ending, first = states[-1], _by_agent(actions[-1]), _by_agent(actions[0])
    k1, k2 = jax.random.key(1), jax.random.key(2)
    out1, again, out2 = (marl.step(k, end, ending) for k in (k1, k1, k2))
    _assert_trees_equal(out1, again)
    assert bool(out1[3]["__all__"]) and bool(out2[3]["__all__"])
    for key, out in ((k1, out1), (k2, out2)):
        _assert_trees_equal(out[:2], marl.reset(jax.random.split(key)[1]))
    _assert_trees_equal(out1[2:], out2[2:])
    assert not np.array_equal(jax.random.key_data(out1[1].key), jax.random.key_data(out2[1].key))
    assert not all(np.array_equal(out1[0][a], out2[0][a]) for a in marl.agents), "two keys, one new game"

    obs_env, state_env, *rest = marl.step_env(k1, end, ending)
    _assert_trees_equal(
        (obs_env, state_env, *rest),
        (_by_agent(steps[-1].info["final_observation"]), steps[-1].info["final_state"], *out1[2:]),
    )
    assert bool(state_env.done)

    middle = marl.step(k1, states[0], first)
    _assert_trees_equal(middle, marl.step(k2, states[0], first))
    _assert_trees_equal(middle[:2], (_by_agent(steps[0].observation), states[1]))

    reset_obs, reset_state = marl.reset(jax.random.key(99))
    _assert_trees_equal(marl.step(k1, end, ending, reset_state), (reset_obs, reset_state, *out1[2:]))
    _assert_trees_equal(marl.step(k1, states[0], first, reset_state), middle)


@tiny_group
def test_vmapped_step_is_the_per_game_step():
    """jax.vmap of the view's step over a batch of three games, one on its last step, one on a fight step and one
    at its start, equals the per-game jitted step of each (one new game from its own key; the others go on)."""
    marl = _marl()
    states, _, actions, steps = _game()
    fight = next(t for t, ts in enumerate(steps) if int(ts.info["round"]) != int(states[t].round))
    picked = (len(steps) - 1, fight, 0)
    assert 0 < fight < len(steps) - 1
    keys = jax.random.split(jax.random.key(3), len(picked))
    batch = jax.tree.map(lambda *x: jnp.stack(x), *[states[t] for t in picked])
    chosen = _by_agent(jnp.asarray(np.stack([actions[t] for t in picked], axis=1)))
    batched = jax.vmap(marl.step)(keys, batch, chosen)
    np.testing.assert_array_equal(batched[3]["__all__"], [True, False, False])
    for i, t in enumerate(picked):
        _assert_trees_equal(
            jax.tree.map(lambda x, i=i: x[i], batched), marl.step(keys[i], states[t], _by_agent(actions[t]))
        )


@tiny_group
def test_world_state_is_pettingzoos_state():
    """get_world_state: float32[STATE_SIZE] in world_state_space, equal to PettingZoo's state() of the same game
    (the one both adapters start from seed 3), step by step and once it ended (the finished game's)."""
    pytest.importorskip("pettingzoo")
    from agents.interop import pettingzoo_env as pz

    marl, zoo = _marl(), pz.parallel_env(rules=TINY)
    zoo_obs, _ = zoo.reset(seed=3)  # the game of jax.random.key(first draw of np.random.default_rng(seed))
    obs, state = marl.reset(jax.random.key(int(np.random.default_rng(3).integers(2**31 - 1))))
    assert STATE_SIZE == pz.STATE_SIZE and marl.state_size == STATE_SIZE
    rng, t = np.random.default_rng(2), 0
    while zoo.agents:
        for a in zoo.agents:  # the same game
            np.testing.assert_array_equal(obs[a], zoo_obs[a]["observation"], err_msg=f"step {t}, {a}")
        world = marl.get_world_state(state)
        assert world.shape == (STATE_SIZE,) and world.dtype == jnp.float32
        assert bool(marl.world_state_space.contains(world))
        np.testing.assert_array_equal(world, zoo.state(), err_msg=f"step {t}")
        masks = marl.get_avail_actions(state)
        chosen = {a: np.int32(rng.choice(np.flatnonzero(masks[a]))) for a in marl.agents}
        finished_obs, finished, *_ = marl.step_env(jax.random.key(t), state, chosen)
        obs, state, *_ = marl.step(jax.random.key(t), state, chosen)
        zoo_obs, *_ = zoo.step({a: int(chosen[a]) for a in zoo.agents})
        t += 1
    np.testing.assert_array_equal(marl.get_world_state(finished), zoo.state())
    assert t > 4


@tiny_group
def test_world_state_wrapper_adds_mappos_world_state():
    """WorldStateWrapper: obs["world_state"] float32[8, STATE_SIZE + 8], row i get_world_state of the returned
    state (the new game's on the step a game ends, as the observations are) then seat i's one-hot; without
    agent ids float32[8, STATE_SIZE]; the agents' observations and the rest of the step unchanged."""
    marl = _marl()
    states, _, actions, _ = _game()
    wrapped, plain = WorldStateWrapper(marl), WorldStateWrapper(marl, agent_id=False)
    assert (wrapped.world_state_size(), plain.world_state_size()) == (STATE_SIZE + 8, STATE_SIZE)
    assert wrapped.agents == marl.agents and wrapped.name == marl.name  # the rest through the wrapper

    def check(world, state, agent_id=True):
        assert world.shape == (8, STATE_SIZE + 8 * agent_id) and world.dtype == jnp.float32
        np.testing.assert_array_equal(world[:, :STATE_SIZE], np.tile(marl.get_world_state(state), (8, 1)))
        np.testing.assert_array_equal(world[:, STATE_SIZE:], np.eye(8)[:, : 8 * agent_id])

    obs, state = wrapped.reset(jax.random.key(4))
    check(obs["world_state"], state)
    check(plain.world_state(states[-1]), states[-1], agent_id=False)
    key, ending = jax.random.key(6), _by_agent(actions[-1])
    out, bare = wrapped.step(key, states[-1], ending), marl.step(key, states[-1], ending)
    check(out[0]["world_state"], out[1])
    assert not np.array_equal(out[0]["world_state"][0, :STATE_SIZE], marl.get_world_state(states[-1]))
    _assert_trees_equal(({a: out[0][a] for a in marl.agents}, *out[1:]), bare)


class _LogWrapperStandIn:
    """jaxmarl 0.2.0's ``jaxmarl.wrappers.baselines.LogWrapper`` (and the ``LogEnvState`` and
    ``JaxMARLWrapper.stack_agent_values`` it uses), copied from FLAIROx/JaxMARL (Apache-2.0) without its
    ``jax.jit`` and with a dict for ``LogEnvState``: the parts the view must fit, checked without jaxmarl
    (``test_jaxmarl_wrappers_take_the_view`` checks this copy against the real one where jaxmarl is installed)."""

    def __init__(self, env, replace_info: bool = False):
        self._env, self.replace_info = env, replace_info

    def stack_agent_values(self, x):
        return jnp.stack([x[a] for a in self._env.agents])

    def reset(self, key):
        obs, env_state = self._env.reset(key)
        zeros = jnp.zeros((self._env.num_agents,))
        return obs, dict(
            env_state=env_state,
            episode_returns=zeros,
            episode_lengths=zeros,
            returned_episode_returns=zeros,
            returned_episode_lengths=zeros,
        )

    def step(self, key, state, action):
        obs, env_state, reward, done, info = self._env.step(key, state["env_state"], action)
        ep_done = done["__all__"]
        new_episode_return = state["episode_returns"] + self.stack_agent_values(reward)
        new_episode_length = state["episode_lengths"] + 1
        state = dict(
            env_state=env_state,
            episode_returns=new_episode_return * (1 - ep_done),
            episode_lengths=new_episode_length * (1 - ep_done),
            returned_episode_returns=state["returned_episode_returns"] * (1 - ep_done) + new_episode_return * ep_done,
            returned_episode_lengths=state["returned_episode_lengths"] * (1 - ep_done) + new_episode_length * ep_done,
        )
        if self.replace_info:
            info = {}
        info["returned_episode_returns"] = state["returned_episode_returns"]
        info["returned_episode_lengths"] = state["returned_episode_lengths"]
        info["returned_episode"] = jnp.full((self._env.num_agents,), ep_done)
        return obs, state, reward, done, info


def _logged_game(wrapper):
    """The recorded game through ``wrapper`` (a LogWrapper around the view) from its reset: the per-step outputs
    (wrapper state and info, host copies)."""
    _, state = wrapper.reset(jax.random.key(5))
    _, _, actions, _ = _game()
    out = []
    for t, chosen in enumerate(actions):
        _, state, _, _, info = wrapper.step(jax.random.fold_in(jax.random.key(9), t), state, _by_agent(chosen))
        log = (
            state
            if isinstance(state, dict)
            else {
                k: getattr(state, k)
                for k in ("episode_returns", "episode_lengths", "returned_episode_returns", "returned_episode_lengths")
            }
        )
        out.append(host_tree(({k: v for k, v in log.items() if k != "env_state"}, info)))
    return out


@tiny_group
def test_log_wrapper_copy_logs_the_views_games():
    """JaxMARL's LogWrapper logic (the copy above) on the view over a whole game: returns summed from the game's
    own rewards and the step count while it runs; on its last step the returned episode, every seat's whole
    return and length, and the running sums back to zero; the view's infos kept unless replace_info."""
    _, _, actions, steps = _game()
    logged = _logged_game(_LogWrapperStandIn(_marl()))
    returns = np.cumsum([np.asarray(ts.reward) for ts in steps], axis=0)
    for t, (log, info) in enumerate(logged[:-1]):
        np.testing.assert_allclose(log["episode_returns"], returns[t], rtol=1e-6)
        np.testing.assert_array_equal(log["episode_lengths"], t + 1)
        assert not info["returned_episode"].any() and "rank" in info
    log, info = logged[-1]
    assert info["returned_episode"].all() and info["returned_episode"].shape == (8,)
    np.testing.assert_allclose(info["returned_episode_returns"], returns[-1], rtol=1e-6)
    np.testing.assert_array_equal(info["returned_episode_lengths"], len(actions))
    np.testing.assert_array_equal(log["episode_returns"], 0)
    np.testing.assert_array_equal(log["episode_lengths"], 0)
    _, info = _logged_game(_LogWrapperStandIn(_marl(), replace_info=True))[-1]
    assert sorted(info) == ["returned_episode", "returned_episode_lengths", "returned_episode_returns"]


# ---------------------------------------------------------------- opt-in: the jaxmarl package itself


@tiny_group
def test_jaxmarl_wrappers_take_the_view():
    """jaxmarl's own LogWrapper (jitted) logs the recorded game exactly as the copy above does; CTRolloutManager
    (its Q-learning baselines') batches the view with jaxmarl's spaces (with_jaxmarl_spaces) and adds its global
    state, every seat's observation concatenated, and global reward."""
    baselines = pytest.importorskip("jaxmarl.wrappers.baselines", reason=JAXMARL_MISSING)
    from agents.interop.jaxmarl_env import with_jaxmarl_spaces

    marl = _marl()
    copied, real = _logged_game(_LogWrapperStandIn(marl)), _logged_game(baselines.LogWrapper(marl))
    for (log, info), (real_log, real_info) in zip(copied, real, strict=True):
        np.testing.assert_array_equal(info.pop("final_observation"), real_info.pop("final_observation"))
        _assert_trees_equal((log, info), (real_log, real_info))

    manager = baselines.CTRolloutManager(with_jaxmarl_spaces(marl), batch_size=2, preprocess_obs=False)
    obs, states = manager.batch_reset(jax.random.key(0))
    assert obs["__all__"].shape == (2, 8 * marl.game.obs_size)
    np.testing.assert_array_equal(obs["__all__"][:, : marl.game.obs_size], obs["seat_0"])
    chosen = {a: jnp.zeros(2, jnp.int32) for a in marl.agents}
    obs, states, rewards, dones, _ = manager.batch_step(jax.random.key(1), states, chosen)
    assert rewards["__all__"].shape == (2,) and dones["__all__"].shape == (2,)
    assert obs["__all__"].shape == (2, 8 * marl.game.obs_size)


@tiny_group
def test_a_few_ippo_updates_through_jaxmarls_log_wrapper():
    """Two IPPO updates the way JaxMARL's baselines/IPPO/ippo_ff_hanabi.py makes them (LogWrapper, vmapped
    env.step under lax.scan, agents batchified, the legal-action mask on the logits, GAE, clipped PPO loss) on
    2 tiny games x 24 steps, under one jit on the CPU: finite losses, parameters that moved, only legal actions
    sampled, and games that ended (and were logged) on the way."""
    baselines = pytest.importorskip("jaxmarl.wrappers.baselines", reason=JAXMARL_MISSING)
    pytest.importorskip("optax")
    metrics, moved = _ippo(baselines.LogWrapper(_marl(), replace_info=True))
    assert np.isfinite(metrics["loss"]).all() and moved > 0
    assert metrics["legal"].all(), "a masked policy sampled an illegal action"
    ended = metrics["returned_episode"]
    assert ended.any(), "no game ended in 2 x 24 steps of tiny games"
    assert (metrics["returned_episode_lengths"][ended] >= 2).all()


def _ippo(env, num_envs: int = 2, num_steps: int = 24, updates: int = 2, epochs: int = 2, minibatches: int = 2):
    """(metrics of every step and update, how far the parameters moved): a compact IPPO-FF after JaxMARL's
    baselines/IPPO/ippo_ff_hanabi.py (FLAIROx/JaxMARL, Apache-2.0): a shared MLP actor-critic over the agents,
    logits of illegal actions pushed to -1e10."""
    import flax.linen as nn
    import optax

    agents, num_actors, obs_size = env.agents, env.num_agents * num_envs, env.observation_space("seat_0").shape[0]

    class ActorCritic(nn.Module):
        @nn.compact
        def __call__(self, obs, avail):
            hidden = nn.relu(nn.Dense(64)(obs))
            logits = nn.Dense(C.NUM_ACTIONS)(hidden) - (1 - avail) * 1e10
            return jax.nn.log_softmax(logits), nn.Dense(1)(hidden)[..., 0]

    def batchify(x):  # {agent: [E, ...]} -> [A * E, ...], agent-major as the baseline's
        return jnp.stack([x[a] for a in agents]).reshape((num_actors, -1))

    network, tx = ActorCritic(), optax.chain(optax.clip_by_global_norm(0.5), optax.adam(3e-4, eps=1e-5))

    def train(key):
        key, init_key, reset_key = jax.random.split(key, 3)
        params = network.init(init_key, jnp.zeros((1, obs_size)), jnp.ones((1, C.NUM_ACTIONS)))
        opt_state = tx.init(params)
        obs, env_state = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))

        def env_step(carry, _):
            params, env_state, obs, key = carry
            key, sample_key, step_key = jax.random.split(key, 3)
            avail = batchify(jax.vmap(env.get_avail_actions)(env_state.env_state)).astype(jnp.float32)
            logp, value = network.apply(params, batchify(obs), avail)
            action = jax.random.categorical(sample_key, logp)
            env_act = {a: x for a, x in zip(agents, action.reshape(len(agents), num_envs), strict=True)}
            obs, env_state, reward, done, info = jax.vmap(env.step)(
                jax.random.split(step_key, num_envs), env_state, env_act
            )
            info = jax.tree.map(lambda x: x.reshape(num_actors), info)
            legal = jnp.take_along_axis(avail, action[:, None], axis=1)[:, 0] > 0
            transition = (
                batchify(done)[:, 0],
                action,
                value,
                batchify(reward)[:, 0],
                jnp.take_along_axis(logp, action[:, None], axis=1)[:, 0],
                batchify(obs),
                avail,
            )
            return (params, env_state, obs, key), (transition, info, legal)

        def update(carry, _):
            params, opt_state, env_state, obs, key = carry
            (params, env_state, last_obs, key), (traj, info, legal) = jax.lax.scan(
                env_step, (params, env_state, obs, key), None, num_steps
            )
            done, action, value, reward, logp_old, traj_obs, avail = traj
            last_avail = jnp.ones((num_actors, C.NUM_ACTIONS))
            _, last_value = network.apply(params, batchify(last_obs), last_avail)

            def gae(carry, t):
                advantage, next_value = carry
                delta = reward[t] + 0.99 * next_value * (1 - done[t]) - value[t]
                advantage = delta + 0.99 * 0.95 * (1 - done[t]) * advantage
                return (advantage, value[t]), advantage

            _, advantages = jax.lax.scan(
                gae, (jnp.zeros_like(last_value), last_value), jnp.arange(num_steps), reverse=True
            )
            targets = advantages + value

            def loss_fn(params, batch):
                obs, avail, action, logp_old, value_old, advantage, target = batch
                logp, value = network.apply(params, obs, avail)
                logp = jnp.take_along_axis(logp, action[:, None], axis=1)[:, 0]
                clipped_value = value_old + jnp.clip(value - value_old, -0.2, 0.2)
                value_loss = 0.5 * jnp.maximum((value - target) ** 2, (clipped_value - target) ** 2).mean()
                ratio = jnp.exp(logp - logp_old)
                advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                actor_loss = -jnp.minimum(ratio * advantage, jnp.clip(ratio, 0.8, 1.2) * advantage).mean()
                return actor_loss + 0.5 * value_loss

            def epoch(carry, _):
                params, opt_state, key = carry
                key, perm_key = jax.random.split(key)
                flat = jax.tree.map(
                    lambda x: x.reshape((num_steps * num_actors, *x.shape[2:])),
                    (traj_obs, avail, action, logp_old, value, advantages, targets),
                )
                order = jax.random.permutation(perm_key, num_steps * num_actors).reshape(minibatches, -1)

                def minibatch(carry, idx):
                    params, opt_state = carry
                    loss, grads = jax.value_and_grad(loss_fn)(params, jax.tree.map(lambda x: x[idx], flat))
                    updates, opt_state = tx.update(grads, opt_state)
                    return (optax.apply_updates(params, updates), opt_state), loss

                (params, opt_state), losses = jax.lax.scan(minibatch, (params, opt_state), order)
                return (params, opt_state, key), losses

            (params, opt_state, key), losses = jax.lax.scan(epoch, (params, opt_state, key), None, epochs)
            metrics = {**info, "loss": losses, "legal": legal}
            return (params, opt_state, env_state, last_obs, key), metrics

        start = params
        (params, *_), metrics = jax.lax.scan(update, (params, opt_state, env_state, obs, key), None, updates)
        moved = sum(jnp.abs(a - b).sum() for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(start), strict=True))
        return metrics, moved

    metrics, moved = jax.jit(train)(jax.random.key(0))
    return jax.device_get(metrics), float(moved)


@tiny_group
def test_a_second_view_of_a_configuration_compiles_nothing():
    """Equal views share their jitted programs (the view is a static argument compared by value): a second
    ``AutoChessMultiAgentEnv`` of the same rules runs its first reset and step at once (issue 69 item 3)."""
    import time

    def first_reset_and_step(env) -> float:
        start = time.perf_counter()
        obs, state = env.reset(jax.random.key(0))
        actions = {a: jnp.int32(0) for a in env.agents}
        jax.block_until_ready(env.step(jax.random.key(1), state, actions))
        return time.perf_counter() - start

    first_reset_and_step(_marl())  # compiles (or already compiled by an earlier test)
    second = _marl()
    assert second == _marl() and hash(second) == hash(_marl())
    assert first_reset_and_step(second) <= 1.0
