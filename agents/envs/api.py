"""The batched-env contract of the trainers (``agents.algorithms.ppo``, ``agents.algorithms.a2c``), as code.

``BatchedEnv`` is the interface every env the trainers step must have; ``check_env(env)`` checks that an
env keeps it (shapes, dtypes, masks, terminals, determinism) in one cheap compiled run, and raises an
``AssertionError`` naming the env and the broken rule otherwise. The adapters in ``agents.envs.make``
(``AutoChessTask``, ``LeagueTask``) and ``agents.envs.gymnax_env.GymnaxVecEnv`` all pass it
(tests/test_env_api.py); run it on your own adapter before training on it::

    from agents.envs.api import check_env
    from agents.envs.gymnax_env import GymnaxVecEnv
    check_env(GymnaxVecEnv("CartPole-v1", num_envs=2))   # returns None, or raises AssertionError
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np


@runtime_checkable
class BatchedEnv(Protocol):
    """N envs stepped together, P seats each, A discrete actions per seat, all seats acting at once.

    Attributes:
      num_envs: int N >= 1 (the trainers require ``env.num_envs == config.run.num_envs``).
      num_players: int P >= 1, the seats per env.
      num_actions: int A >= 1 (sizes the policy head).
      obs_shape: one seat's observation shape, a tuple of ints; or, for a pytree observation (the game's
        ``obs="both"``: ``{"vector": (582,), "pixels": (72, 20)}``), the same pytree with a shape tuple
        in place of each leaf.
      learner_seats: numpy bool[P], at least one True: the seats whose steps are training data (the
        others, e.g. scripted bots, act but are not learned from). A league (``LeagueTask``) marks all
        seats and says per game which seat is the learner's in ``state.roles``.

    Optional attribute:
      all_actions_legal: bool, default False: the env promises that ``action_mask`` is all True on every step
        for every seat (e.g. gymnax envs). With A >= 2 and every seat a learner seat, every sample is then a
        decision, and PPO leaves the masking, the decision weights and the carried open decisions out of its
        compiled program (a faster program, the same result).

    Methods (pure and traceable: the trainers call them inside ``jax.jit`` / ``lax.scan``):
      reset(key) -> (state, TimeStep): N fresh episodes from one PRNG key (``jax.random.key``).
      step(state, actions) -> (state, TimeStep): ``actions`` int32[N, P], one per seat (the env may
        replace the actions of seats it plays itself). Auto-resets: on the step where ``done[n]`` is
        True, ``reward`` and ``info`` belong to env n's finished episode while ``observation``,
        ``action_mask`` and the returned state already belong to its fresh one. The returned state has
        the structure, shapes and dtypes of the state passed in (it is a ``lax.scan`` carry); it is any
        pytree, and its leaves with a leading [N] axis are sharded over the devices.

    The TimeStep (``jaxgame.env.TimeStep`` or anything with these fields, a pytree):
      observation: [N, P, *obs_shape], a numeric dtype (float32 vectors; the game's packed pixels are
        uint8); a pytree observation has those leading dims on every leaf. The policy's input.
      action_mask: bool[N, P, A], the legal actions; every (env, seat) has at least one. Actions are
        sampled from it; a seat with exactly one legal action is not deciding (its step has no weight
        in the loss), so a seat that should learn needs A >= 2.
      reward: float32[N, P], finite: each seat's reward for this step.
      done: bool[N]: env n's episode ended on this step (episode statistics; the trackers reset).
      info: a dict with
        info["seat_done"] (REQUIRED) bool[N, P]: seat p's episode is over as of this step, so nothing
          is bootstrapped past it (``Transition.terminal``). True for every seat where ``done``; it may
          be True earlier and stay True until ``done`` (the game's eliminated seats).
        info["rank"] (OPTIONAL) int32[N, P]: placements (1 = best, 0 = not placed yet), in 1..P for
          every seat where ``done``; read for ``train/placement`` when present. The game's adapters
          report it; a league needs it.
        info["roles"] (OPTIONAL, leagues only) int32[N, P]: the roles (``agents.league.pool.ROLE_*``) the
          step's games were played with, with ``state.roles`` those of the games in play and
          ``state.game`` int32[N] each env's count of games started (+1 on every ``done``); the league's
          players (``agents.league.pool``) read these, and ``info["rank"]``, when ``config.league.league_size > 0``.
      Other info keys are free (the game's ``final_observation``, ``life``, ...; gymnax's
      ``terminated`` / ``truncated``).
    """

    num_envs: int
    num_players: int
    num_actions: int
    obs_shape: Any
    learner_seats: np.ndarray

    def reset(self, key: jax.Array) -> tuple[Any, Any]: ...

    def step(self, state: Any, actions: jax.Array) -> tuple[Any, Any]: ...


MEMBERS = ("num_envs", "num_players", "num_actions", "obs_shape", "learner_seats", "reset", "step")
TIMESTEP_FIELDS = ("observation", "action_mask", "reward", "done", "info")

#: The rules ``check_env`` checks, by name (the name appears in its error messages).
RULES = {
    "protocol": "the env must have every member of BatchedEnv: " + ", ".join(MEMBERS),
    "sizes": "num_envs, num_players and num_actions must be ints >= 1",
    "obs_shape": "obs_shape must be a tuple of ints >= 0, or a pytree of such tuples",
    "learner_seats": "learner_seats must be a numpy bool array of shape [num_players] with at least one True",
    "reset.trace": "reset(key) must trace under jax.jit and return a (state, TimeStep) pair",
    "step.trace": "step(state, int32[N, P] actions) must trace under jax.jit and return a (state, TimeStep) pair",
    "step.state": "step must return a state with the structure, shapes and dtypes of the state passed in",
    "timestep": "a TimeStep must have the fields " + ", ".join(TIMESTEP_FIELDS) + " with info a dict",
    "observation": "observation must be [N, P, *obs_shape] (leaf by leaf for a pytree) of a numeric dtype",
    "action_mask": "action_mask must be bool[N, P, A]",
    "reward": "reward must be float32[N, P]",
    "done": "done must be bool[N]",
    "seat_done": 'info["seat_done"] must be present, bool[N, P]',
    "rank": 'info["rank"], when present, must be int32[N, P]',
    "roles": 'info["roles"], when present, must be int32[N, P]',
    "reset.done": 'reset must start every episode: done and info["seat_done"] all False',
    "legal_action": "every (env, seat) row of action_mask must have at least one legal action",
    "all_actions_legal": "an env that declares all_actions_legal = True must have every action_mask all True",
    "finite": "reward and the float leaves of observation must be finite",
    "seat_done.done": 'done[n] must imply info["seat_done"][n, :] all True',
    "rank.values": 'info["rank"] must lie in [0, P], and in [1, P] for every seat where done',
    "determinism": "the same key and actions must give the same reset and trajectory",
}


def _fail(name: str, rule: str, detail: str):
    raise AssertionError(f"check_env({name}): [{rule}] {RULES[rule]}; {detail}")


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_shape(x) -> bool:
    return isinstance(x, tuple) and all(_is_int(d) and d >= 0 for d in x)


def _fmt(x) -> str:
    return f"{np.dtype(x.dtype).name}{list(x.shape)}"


def _check_timestep(name, where, ts, env, obs_shape):
    """Fields, shapes and dtypes of a TimeStep (abstract values from ``jax.eval_shape``)."""
    n, p, a = env.num_envs, env.num_players, env.num_actions
    missing = [f for f in TIMESTEP_FIELDS if not hasattr(ts, f)]
    if missing:
        _fail(name, "timestep", f"{where} TimeStep ({type(ts).__name__}) lacks {', '.join(missing)}")
    if not isinstance(ts.info, dict):
        _fail(name, "timestep", f"{where} info is a {type(ts.info).__name__}")

    shapes, shape_def = jax.tree_util.tree_flatten(obs_shape, is_leaf=lambda x: isinstance(x, tuple))
    leaves, obs_def = jax.tree_util.tree_flatten(ts.observation)
    if obs_def != shape_def:
        _fail(name, "observation", f"{where} observation has the structure {obs_def}, obs_shape {shape_def}")
    for shape, leaf in zip(shapes, leaves):
        if tuple(leaf.shape) != (n, p, *shape) or not jnp.issubdtype(leaf.dtype, jnp.number):
            _fail(name, "observation", f"{where} observation leaf is {_fmt(leaf)}, expected [{n}, {p}, *{shape}]")

    def expect(rule, x, dtype, shape, what):
        if not hasattr(x, "shape") or tuple(x.shape) != shape or x.dtype != dtype:
            got = _fmt(x) if hasattr(x, "shape") else type(x).__name__
            _fail(name, rule, f"{where} {what} is {got}, expected {np.dtype(dtype).name}{list(shape)}")

    expect("action_mask", ts.action_mask, jnp.bool_, (n, p, a), "action_mask")
    expect("reward", ts.reward, jnp.float32, (n, p), "reward")
    expect("done", ts.done, jnp.bool_, (n,), "done")
    if "seat_done" not in ts.info:
        _fail(name, "seat_done", f"{where} info has only {sorted(ts.info)}")
    expect("seat_done", ts.info["seat_done"], jnp.bool_, (n, p), 'info["seat_done"]')
    for key in ("rank", "roles"):
        if key in ts.info:
            expect(key, ts.info[key], jnp.int32, (n, p), f'info["{key}"]')


def _key_data(tree):
    """Typed PRNG keys -> their raw data, so every leaf can be returned and compared."""

    def one(x):
        return jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x

    return jax.tree_util.tree_map(one, tree)


def check_env(env, key=None, num_steps: int = 24) -> dict:
    """Check that ``env`` keeps the ``BatchedEnv`` contract; raise ``AssertionError`` if it does not.

    The message reads ``check_env(<repr of env>): [<rule>] <the rule>; <what was found>``. The rules
    (``RULES``), in the order they are checked:

    - protocol: ``isinstance(env, BatchedEnv)``: every attribute and method is there.
    - sizes: ``num_envs``, ``num_players``, ``num_actions`` are ints >= 1 (not bools).
    - obs_shape: a tuple of ints >= 0, or a pytree (e.g. dict) of such tuples.
    - learner_seats: a numpy ``ndarray``, dtype bool, shape [P], at least one True.
    - reset.trace, step.trace: ``reset(key)`` and ``step(state, int32[N, P])`` trace (``jax.eval_shape``,
      as under ``jax.jit``) and each returns a 2-tuple (state, TimeStep).
    - step.state: the state ``step`` returns has the structure, shapes and dtypes of its input (a scan carry).
    - timestep: the TimeStep has ``observation``, ``action_mask``, ``reward``, ``done``, ``info``; info is a dict.
    - observation: [N, P, *obs_shape] leaf by leaf (same pytree structure as ``obs_shape``), numeric dtype.
    - action_mask: bool[N, P, A]; reward: float32[N, P]; done: bool[N].
    - seat_done: ``info["seat_done"]`` is present and bool[N, P].
    - rank, roles: ``info["rank"]`` / ``info["roles"]``, where present, are int32[N, P].
      (The shape rules hold for the TimeStep of ``reset`` and of ``step``.)

    Then ONE compiled program (``jax.jit``: reset, then ``num_steps`` steps in a ``lax.scan`` with
    actions drawn uniformly from each seat's legal actions) is run twice with the same key:

    - reset.done: the reset TimeStep's ``done`` and ``info["seat_done"]`` are all False.
    - legal_action: every (env, seat) row of every ``action_mask`` (reset and each step) has a legal action.
    - all_actions_legal: an env with ``all_actions_legal = True`` has every ``action_mask`` all True.
    - finite: every reward and every float observation leaf is finite.
    - seat_done.done: on every step, ``done[n]`` implies ``info["seat_done"][n, :]`` all True.
    - rank.values: ``info["rank"]``, where present, lies in [0, P], and in [1, P] for the seats where ``done``.
    - determinism: both runs give bit-identical reset and step TimeSteps and final states.

    ``key``: a PRNG key or an int seed (default 0). ``num_steps``: steps of the random-policy trajectory
    (default 24: a few episode ends of the small test games and of CartPole). Not checked: ``jax.vmap``
    over the env, and any info key other than those above.

    Returns ``{"episodes": int}``, the episode ends (``done``) the trajectory saw: the rules about
    ``done`` steps were checked on that many (none when 0; raise ``num_steps`` then).

    Example::

        agents.check_env(MyBatchedEnv(num_envs=4))   # AssertionError naming the first broken rule, else {"episodes": n}
    """
    try:
        name = repr(env)
    except Exception:  # noqa: BLE001 (a broken __repr__ must not hide the report)
        name = type(env).__name__
    _check_members(name, env)
    if key is None:
        key = 0
    key = jax.random.key(key) if _is_int(key) else key
    reset_key, act_key = jax.random.split(key)
    _check_traces(name, env, reset_key)
    first, second = (jax.device_get(r) for r in _random_runs(env, reset_key, act_key, num_steps))
    _check_trajectory(name, env, *first[:2])
    _check_determinism(name, first, second)
    return {"episodes": int(first[1].done.sum())}


def _check_members(name: str, env) -> None:
    """The rules protocol, sizes, obs_shape and learner_seats."""
    if not isinstance(env, BatchedEnv):
        missing = [m for m in MEMBERS if not hasattr(env, m)]
        _fail(name, "protocol", f"missing: {', '.join(missing)}")
    for attr in ("num_envs", "num_players", "num_actions"):
        value = getattr(env, attr)
        if not _is_int(value) or value < 1:
            _fail(name, "sizes", f"{attr} = {value!r}")
    p = int(env.num_players)
    shape_leaves = jax.tree_util.tree_leaves(env.obs_shape, is_leaf=lambda x: isinstance(x, tuple))
    if not shape_leaves or not all(_is_shape(s) for s in shape_leaves):
        _fail(name, "obs_shape", f"obs_shape = {env.obs_shape!r}")
    seats = env.learner_seats
    if not (isinstance(seats, np.ndarray) and seats.dtype == np.bool_ and seats.shape == (p,) and seats.any()):
        got = f"{seats.dtype}{list(seats.shape)} {seats.tolist()}" if isinstance(seats, np.ndarray) else repr(seats)
        _fail(name, "learner_seats", f"learner_seats = {got}")


def _check_traces(name: str, env, reset_key) -> None:
    """Shapes and dtypes, abstractly (tracing only, no compile): reset.trace, step.trace, step.state and the
    TimeStep rules."""

    def pair(rule, fn, *args):
        try:
            out = jax.eval_shape(fn, *args)
        except Exception as error:  # noqa: BLE001 (reported as the broken rule)
            _fail(name, rule, f"raised {type(error).__name__}: {error}")
        if not (isinstance(out, tuple) and len(out) == 2):
            _fail(name, rule, f"returned a {type(out).__name__}")
        return out

    state, ts = pair("reset.trace", env.reset, reset_key)
    _check_timestep(name, "reset's", ts, env, env.obs_shape)
    actions = jax.ShapeDtypeStruct((int(env.num_envs), int(env.num_players)), jnp.int32)
    next_state, step_ts = pair("step.trace", env.step, state, actions)
    _check_timestep(name, "step's", step_ts, env, env.obs_shape)
    before, after = jax.tree_util.tree_structure(state), jax.tree_util.tree_structure(next_state)
    if before != after:
        _fail(name, "step.state", f"structure {before} became {after}")
    for x, y in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(next_state)):
        if x.shape != y.shape or x.dtype != y.dtype:
            _fail(name, "step.state", f"a leaf {_fmt(x)} became {_fmt(y)}")


def _random_runs(env, reset_key, act_key, num_steps: int) -> tuple:
    """ONE compiled program (reset, then ``num_steps`` steps of a uniformly random legal policy), run twice with
    the same keys: two ``(reset TimeStep, step TimeSteps [T, ...], final state)`` with keys as their data."""

    @jax.jit
    def run(reset_key, act_key):
        state, ts0 = env.reset(reset_key)

        def body(carry, k):
            state, mask = carry
            logits = jnp.where(mask, 0.0, -jnp.inf)
            actions = jax.random.categorical(k, logits).astype(jnp.int32)
            state, ts = env.step(state, actions)
            return (state, ts.action_mask), ts

        (state, _), tss = jax.lax.scan(body, (state, ts0.action_mask), jax.random.split(act_key, num_steps))
        return _key_data((ts0, tss, state))

    return run(reset_key, act_key), run(reset_key, act_key)


def _first_at(where: str, t: int) -> str:
    return "reset" if where == "reset" else f"step {t}"


def _check_masks(name: str, env, ts0, tss) -> None:
    """The rules legal_action and all_actions_legal."""
    for where, mask in (("reset", ts0.action_mask[None]), ("step", tss.action_mask)):
        empty = np.argwhere(~mask.any(-1))
        if len(empty):
            t, e, s = empty[0].tolist()
            _fail(
                name, "legal_action", f"{len(empty)} empty rows, the first at {_first_at(where, t)}, env {e}, seat {s}"
            )
    if getattr(env, "all_actions_legal", False) is True:
        for where, mask in (("reset", ts0.action_mask[None]), ("step", tss.action_mask)):
            illegal = np.argwhere(~mask)
            if len(illegal):
                t, e, s, a = illegal[0].tolist()
                _fail(
                    name,
                    "all_actions_legal",
                    f"{len(illegal)} masked (env, seat, action) entries, the first at "
                    f"{_first_at(where, t)}, env {e}, seat {s}, action {a}",
                )


def _check_trajectory(name: str, env, ts0, tss) -> None:
    """The rules reset.done, legal_action, all_actions_legal, finite, seat_done.done and rank.values on the random
    trajectory's TimeSteps."""
    p = int(env.num_players)
    if ts0.done.any() or ts0.info["seat_done"].any():
        _fail(name, "reset.done", f"done = {ts0.done.tolist()}, seat_done = {ts0.info['seat_done'].tolist()}")
    _check_masks(name, env, ts0, tss)
    for where, ts in (("reset", ts0), ("step", tss)):
        floats = [x for x in jax.tree_util.tree_leaves(ts.observation) if np.issubdtype(x.dtype, np.floating)]
        for what, x in (("reward", ts.reward), *(("observation", x) for x in floats)):
            if not np.isfinite(x).all():
                _fail(name, "finite", f"{where}: {what} has {int((~np.isfinite(x)).sum())} non-finite values")
    broken = np.argwhere(tss.done & ~tss.info["seat_done"].all(-1))
    if len(broken):
        t, e = broken[0].tolist()
        _fail(name, "seat_done.done", f"step {t}, env {e}: done but seat_done = {tss.info['seat_done'][t, e].tolist()}")
    if "rank" in tss.info:
        for where, ts in (("reset", ts0), ("step", tss)):
            rank = ts.info["rank"]
            if rank.min() < 0 or rank.max() > p:
                _fail(name, "rank.values", f"{where}: ranks from {rank.min()} to {rank.max()}")
        unranked = np.argwhere(tss.done[..., None] & (tss.info["rank"] < 1))
        if len(unranked):
            t, e, s = unranked[0].tolist()
            _fail(name, "rank.values", f"step {t}, env {e}: done but seat {s} has rank {tss.info['rank'][t, e, s]}")


def _check_determinism(name: str, first, second) -> None:
    """The rule determinism: both runs bit-identical."""
    leaves1, def1 = jax.tree_util.tree_flatten(first)
    leaves2, def2 = jax.tree_util.tree_flatten(second)
    if def1 != def2:
        _fail(name, "determinism", "the two runs returned different structures")
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(first)[0]]
    for path, x, y in zip(paths, leaves1, leaves2):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
            _fail(name, "determinism", f"(reset TimeStep, step TimeSteps, final state){path} differs between runs")


__all__ = ["RULES", "BatchedEnv", "check_env"]
