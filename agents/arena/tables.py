"""Games between any mix of trained policies and scripted bots, seat-rotated, in one batch.

A *lineup* names the player of each of a game's 8 seats by *participant*
index: ``0 .. K-1`` are the K policies (a network and its parameters),
``K + i`` is the scripted bot ``bot_names[i]`` of the runner (by default
``DEFAULT_BOTS``; any of ``PLAYER_BOTS``). Every lineup is played 8
times from the same game seed (same reset key, same bot and game randomness)
with the lineup rotated one seat further each time, so every participant
sits in every seat and the luck of the draw is shared: the *duplicate*
scheme of seat-rotation tournaments. All ``8 x num_games`` games run as one
batch in one jitted ``lax.while_loop`` that stops when every game has ended.

    run = make_table_runner(game, (net_a, net_b), num_games=4)
    ranks = run((params_a, params_b), lineups, key)   # lineups int32[4, 8] -> ranks int32[4, 8, 8]

``ranks[g, r, j]`` is the final rank (1 = first) of lineup position ``j`` of
game ``g`` in rotation ``r``, where it sat in seat ``(j + r) % 8``; 0 if the
game did not end within the game's step limit.

A recurrent policy (``agents.core.recurrent.is_recurrent``: ``network="gru"``)
plays as in training: the table keeps its carry for every game and seat in the
loop state (``initial_carries``: ``network.initial_carry([E, 8])``), steps it
with each seat's observation, and resets it at the seat's step after its
episode ended, a game's end or the seat's elimination
(``agents.envs.make.seat_done`` of the timestep the step acts on: what the
rollout's ``agents.core.rollout.Memory`` resets on). A feed-forward policy's
entry is None, so a table of feed-forward policies is the same program as
without carries.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from agents.core import distributions
from agents.core.recurrent import is_recurrent
from agents.envs.make import seat_done
from agents.policies.load import PLAYER_BOTS, TABLE_BOTS  # noqa: F401  (TABLE_BOTS: re-exported for evaluation.py)
from jaxgame import all_bots
from jaxgame import constants as C
from jaxgame.validation import as_key

#: The bots of a runner by default: the training evaluations' opponents (each bot a runner holds is computed at
#: every step, so the others join only when asked for).
DEFAULT_BOTS = ("random", "greedy")


def rotation_seats(num_games: int, shift: int = -1, rotations: int = C.NUM_PLAYERS) -> np.ndarray:
    """int32[num_games * rotations, 8]: env ``e`` is game ``e // rotations`` in rotation ``r = e % rotations``;
    entry ``[e, i]`` is ``(i + shift * r) % 8``: with ``shift=-1`` the lineup position playing seat ``i``, with
    ``shift=1`` the seat of lineup position ``i``."""
    r = np.arange(num_games * rotations) % rotations
    return ((np.arange(C.NUM_PLAYERS)[None, :] + shift * r[:, None]) % C.NUM_PLAYERS).astype(np.int32)


def draw_lineups(num_players: int, num_games: int, rng: np.random.Generator, seats: int = C.NUM_PLAYERS):
    """int[num_games, seats] player indices in [0, num_players): ``seats`` different players drawn at random
    when there are that many, else every player takes ``seats // num_players`` seats and the other seats
    go to different players drawn at random; seats shuffled."""
    if num_players < 1:
        raise ValueError(f"num_players must be >= 1, got {num_players}")
    out = np.empty((num_games, seats), np.int64)
    for g in range(num_games):
        if num_players >= seats:
            out[g] = rng.choice(num_players, seats, replace=False)
        else:
            base = np.repeat(np.arange(num_players), seats // num_players)
            extra = rng.choice(num_players, seats - base.size, replace=False)
            out[g] = rng.permutation(np.concatenate([base, extra]))
    return out


def table_keys(key) -> tuple[jax.Array, jax.Array]:
    """``(reset_key, loop_key)``: a table's ``key`` split into its games' resets (``per_game(reset_key)`` of
    ``make_seat_actions``) and the keys of its steps (``step_keys``)."""
    reset_key, loop_key = jax.random.split(key)
    return reset_key, loop_key


def step_keys(loop_key) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(loop_key, policy_key, bot_key)`` of one step of a table: the loop key carried to the next step, the
    policies' sampling key and the bots' key (``make_seat_actions``' ``actions``)."""
    loop_key, policy_key, bot_key = jax.random.split(loop_key, 3)
    return loop_key, policy_key, bot_key


def greedy_per_network(greedy_policy, num_networks: int) -> tuple[bool, ...]:
    """``greedy_policy`` (one bool for every policy, or one per network) as a tuple of ``num_networks`` bools;
    ``ValueError`` for a sequence of another length."""
    if isinstance(greedy_policy, (bool, np.bool_)):
        return (bool(greedy_policy),) * num_networks
    flags = tuple(bool(g) for g in greedy_policy)
    if len(flags) != num_networks:
        raise ValueError(
            f"greedy_policy: one bool for all policies or one per network ({num_networks}), got {len(flags)}"
        )
    return flags


def initial_carries(networks, num_envs: int) -> tuple:
    """The policies' carries at the start of ``num_envs`` games, one entry per network: None for a feed-forward
    network, ``network.initial_carry((num_envs, 8))`` (float32[E, 8, H] zeros for the GRU) for a recurrent one
    (``agents.core.recurrent.is_recurrent``): every policy is stepped on every seat (``make_seat_actions``), so each
    keeps a carry for every game and seat."""
    return tuple(net.initial_carry((num_envs, C.NUM_PLAYERS)) if is_recurrent(net) else None for net in networks)


def make_seat_actions(
    networks, bot_names: tuple[str, ...], greedy_policy: bool, num_games: int, rotations: int = C.NUM_PLAYERS
):
    """``(actions, per_game)`` for games of participants (policies, then bots), shared by the table runner,
    ``agents.pipeline.recording`` and ``agents.replays.record``. Envs are ``num_games x rotations``, game-major.

    ``actions(params, carries, player, states, ts, policy_key, bot_key) -> (int32[E, 8], carries)``: ``player``
    int32[E, 8] names each seat's participant; every policy acts on every seat (sampled, or its most likely legal
    action with ``greedy_policy``: one bool for all, or one per network) and every bot on every seat (a seat-gated
    bot only on its own, ``jaxgame.all_bots.decision_masks``), with one bot key per game (shared by its rotations),
    and each seat sends its participant's action. ``carries``: the policies' carries before the step, one entry per
    network (``initial_carries(networks, E)`` at the games' start; None for a feed-forward network), returned
    stepped: a recurrent network runs ``apply(params, carry, observation, reset)`` on every seat, ``reset`` bool[E,
    8] the seats whose episode ``ts`` ended (``agents.envs.make.seat_done(ts)``: the game's end, the seat's
    elimination), so the carry restarts at the seat's next step as in training. ``ts`` is the timestep the step acts
    on (the last ``env.step``'s, or the reset's). ``per_game(key) -> keys[E]``: ``num_games`` keys, each repeated
    for the game's rotations.

    ``actions.with_every(params, carries, player, states, ts, policy_key, bot_key) -> (actions int32[E, 8], every
    int32[K + B, E, 8], carries)``: the same actions and carries, and every participant's action on every seat
    (policies, then bots): what a labeller that plays no seat would have sent (``agents.pipeline.recording``'s
    ``label``; a seat-gated bot's only on its own seats, so it labels nothing).

    ``actions.of_env(env, params, carries, player, states, ts, policy_key, bot_key) -> (actions int32[1, 8],
    logits float32[K, 1, 8, A], values float32[K, 1, 8], carries)``: the decisions of env ``env`` (an int32
    scalar, traced) of such a batch, given that env alone (``carries``, ``player``, ``states``, ``ts`` with a leading
    axis of 1: ``initial_carries(networks, 1)`` at the start), every policy's outputs on its seats and the env's
    stepped carries. The env is placed in a batch of the table's shape (zeros elsewhere), so that its sampling
    draws, bot keys and float results are the ones the whole table gives it; its cost is the table's."""
    networks = tuple(networks)
    num_envs = num_games * rotations
    greedy = greedy_per_network(greedy_policy, len(networks))
    any_recurrent = any(is_recurrent(net) for net in networks)

    def per_game(key):
        return jnp.repeat(jax.random.split(key, num_games), rotations, axis=0)

    def choose(key, logits, mask, is_greedy):
        return distributions.greedy(logits, mask) if is_greedy else distributions.sample(key, logits, mask)

    def resets(ts):
        """bool[E, 8]: the seats whose episode ``ts`` ended (their carries restart); None without a recurrent
        policy (a feed-forward table computes nothing more)."""
        return seat_done(ts) if any_recurrent else None

    def step_policies(params, carries, obs, reset):
        """Every policy on every seat: ``([(logits float32[E, 8, A], value float32[E, 8])] per network, carries)``,
        a recurrent network's carry stepped (reset first where ``reset``), a feed-forward one's entry None."""
        outputs, stepped = [], []
        for net, p, carry in zip(networks, params, carries, strict=True):
            if is_recurrent(net):
                carry, logits, value = net.apply(p, carry, obs, reset)
            else:
                logits, value = net.apply(p, obs)
            outputs.append((logits, value))
            stepped.append(carry)
        return outputs, tuple(stepped)

    def decide(params, carries, player, states, obs, mask, reset, policy_key, bot_key):
        """(actions int32[E, 8], logits float32[K, E, 8, A], values float32[K, E, 8], every int32[K + B, E, 8],
        carries)."""
        bot_keys = per_game(bot_key)
        outputs, carries = step_policies(params, carries, obs, reset)
        keys = jax.random.split(policy_key, len(networks))
        by_participant = [choose(k, logits, mask, g) for (logits, _), k, g in zip(outputs, keys, greedy)] + [
            jax.vmap(all_bots.BOTS[name])(
                bot_keys, states, all_bots.decision_masks(name, mask, player == len(networks) + i)
            )
            for i, name in enumerate(bot_names)
        ]
        every = jnp.stack(by_participant).astype(jnp.int32)
        actions = jnp.take_along_axis(every, player[None], axis=0)[0]
        return actions, [logits for logits, _ in outputs], [value for _, value in outputs], every, carries

    def actions(params, carries, player, states, ts, policy_key, bot_key):
        acts, _, _, _, carries = decide(
            params, carries, player, states, ts.observation, ts.action_mask, resets(ts), policy_key, bot_key
        )
        return acts, carries

    def with_every(params, carries, player, states, ts, policy_key, bot_key):
        acts, _, _, every, carries = decide(
            params, carries, player, states, ts.observation, ts.action_mask, resets(ts), policy_key, bot_key
        )
        return acts, every, carries

    def embed(env, x):
        """x [1, ...] -> [E, ...]: x at row ``env``, zeros elsewhere (typed keys through their key data)."""
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(embed(env, jax.random.key_data(x)), impl=jax.random.key_impl(x))
        return jax.lax.dynamic_update_slice_in_dim(jnp.zeros((num_envs, *x.shape[1:]), x.dtype), x, env, axis=0)

    def of_env(env, params, carries, player, states, ts, policy_key, bot_key):
        full = functools.partial(jax.tree_util.tree_map, functools.partial(embed, env))
        acts, logits, values, _, carries = decide(
            params,
            full(carries),
            full(player),
            full(states),
            full(ts.observation),
            full(ts.action_mask),
            full(resets(ts)),
            policy_key,
            bot_key,
        )

        def row(x):  # [E, ...] -> [1, ...]: env's row
            return jax.lax.dynamic_slice_in_dim(x, env, 1)

        def rows(xs, shape):  # K arrays [E, ...] -> [K, 1, ...]: env's row of each
            return jnp.stack([row(x) for x in xs]) if xs else jnp.zeros((0, 1, *shape), jnp.float32)

        return (
            rows([acts], ())[0],
            rows(logits, (C.NUM_PLAYERS, C.NUM_ACTIONS)),
            rows(values, (C.NUM_PLAYERS,)),
            jax.tree_util.tree_map(row, carries),
        )

    actions.of_env = of_env
    actions.with_every = with_every
    return actions, per_game


def check_bot_names(bot_names) -> tuple[str, ...]:
    """``bot_names`` as a tuple; ``ValueError`` unless they are distinct names from ``PLAYER_BOTS``."""
    bot_names = tuple(bot_names)
    if any(b not in PLAYER_BOTS for b in bot_names) or len(set(bot_names)) != len(bot_names):
        raise ValueError(f"bot_names must be distinct names from {PLAYER_BOTS}, got {bot_names!r}")
    return bot_names


#: how many table runners ``make_table_runner`` keeps (each holds its compiled programs)
MAX_CACHED_RUNNERS = 8
_RUNNERS: collections.OrderedDict = collections.OrderedDict()


def make_table_runner(
    game: jaxgame.AutoChessEnv,
    networks,
    num_games: int,
    greedy_policy: bool = False,
    sync_axes: tuple[str, ...] = (),
    bot_names: tuple[str, ...] = DEFAULT_BOTS,
    compiler_options: Mapping | None = None,
):
    """``run(params, lineups, key) -> int32[num_games, 8, 8]`` (see the module docstring). Calls with equal
    arguments (the game and the networks compare by value: the env and flax modules are dataclasses, a recurrent
    network compares its flax module; the compiler options by their items) return the same runner, so its program
    compiles once per process: the checkpoints of a learning curve, a rating repeated for its determinism, an
    evaluation run twice (the last ``MAX_CACHED_RUNNERS`` are kept).

    ``networks``: the K policies' networks (``apply(params, obs) -> (logits, value)``, or a recurrent one's
    ``apply(params, carry, obs, reset) -> (carry, logits, value)``: the table keeps its carries, see the module
    docstring; the same network object may appear more than once); ``params``: a tuple of their K parameter
    trees. ``greedy_policy``: the policies take their most likely legal action instead of sampling (one bool for
    all, or one per network). ``sync_axes``: vmapped axes around ``run`` (a sweep's) that share the game's branches.
    ``bot_names``: the scripted bots after the policies (participant ``K + i`` is ``bot_names[i]``), distinct
    names from ``PLAYER_BOTS``. ``compiler_options``: XLA options the program compiles with (a mapping such as
    ``{"xla_backend_optimization_level": 2}``, as ``jax.jit(..., compiler_options=...)`` and
    ``.lower(...).compile(compiler_options=...)`` take them), over those of the process's ``XLA_FLAGS``; None
    (the default) compiles with the process's. ``run.jitted`` takes the same arguments without the host-side
    checks (for use inside another jitted function, whose own compilation then applies).
    """
    if isinstance(num_games, bool) or not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive int, got {num_games!r}")
    greedy = greedy_policy if isinstance(greedy_policy, bool) else tuple(greedy_policy)
    options = None if compiler_options is None else tuple(sorted(dict(compiler_options).items()))
    key = (game, tuple(networks), num_games, greedy, tuple(sync_axes), tuple(bot_names), options)
    build = functools.partial(
        _build_table_runner, game, networks, num_games, greedy_policy, sync_axes, bot_names, compiler_options
    )
    try:
        cached = _RUNNERS.get(key)
    except TypeError:  # a network (or an option's value) that cannot be hashed: a runner of its own
        return build()
    if cached is None:
        cached = _RUNNERS[key] = build()
        while len(_RUNNERS) > MAX_CACHED_RUNNERS:
            _RUNNERS.popitem(last=False)
    _RUNNERS.move_to_end(key)
    return cached


def _build_table_runner(game, networks, num_games, greedy_policy, sync_axes, bot_names, compiler_options=None):
    """``make_table_runner`` without the cache."""
    bot_names = check_bot_names(bot_names)
    networks = tuple(networks)
    num_policies = len(networks)
    num_participants = num_policies + len(bot_names)
    seats = C.NUM_PLAYERS
    num_envs = num_games * seats
    venv = jaxgame.VecEnv(game, num_envs, sync_axes)
    position = jnp.asarray(rotation_seats(num_games))  # [E, 8]: the lineup position playing each seat
    seat_of_position = jnp.asarray(rotation_seats(num_games, shift=1))  # [E, 8]: the seat of each position
    max_steps = game.config.max_rounds * game.config.steps_per_round + 1

    seat_actions, per_game = make_seat_actions(networks, bot_names, greedy_policy, num_games)

    @functools.partial(jax.jit, compiler_options=None if compiler_options is None else dict(compiler_options))
    def run(params, lineups, key):
        player = jnp.take_along_axis(jnp.repeat(lineups, seats, axis=0), position, axis=1)  # [E, 8] participant
        reset_key, loop_key = table_keys(key)
        states, ts = jax.vmap(game.reset)(per_game(reset_key))

        def cond(carry):
            _, _, finished, _, t, _, _ = carry
            return ~finished.all() & (t < max_steps)

        def body(carry):
            states, ts, finished, rank, t, key, carries = carry
            key, policy_key, bot_key = step_keys(key)
            actions, carries = seat_actions(params, carries, player, states, ts, policy_key, bot_key)
            states, ts = venv.step(states, actions)
            new = ts.done & ~finished
            return states, ts, finished | new, jnp.where(new[:, None], ts.info["rank"], rank), t + 1, key, carries

        zeros = (jnp.zeros(num_envs, bool), jnp.zeros((num_envs, seats), jnp.int32), jnp.int32(0))
        init = (states, ts, *zeros, loop_key, initial_carries(networks, num_envs))  # carries: None if feed-forward
        _, _, finished, rank, _, _, _ = jax.lax.while_loop(cond, body, init)
        rank = jnp.where(finished[:, None], rank, 0)
        by_position = jnp.take_along_axis(rank, seat_of_position, axis=1)
        return by_position.reshape(num_games, seats, seats)

    def checked_run(params, lineups, key):
        params = tuple(params)
        if len(params) != num_policies:
            raise ValueError(f"params must hold {num_policies} parameter tree(s), one per network; got {len(params)}")
        lineups = np.asarray(lineups)
        if lineups.shape != (num_games, seats) or not np.issubdtype(lineups.dtype, np.integer):
            raise ValueError(
                f"lineups must be ints of shape ({num_games}, {seats}), got {lineups.dtype} {lineups.shape}"
            )
        if lineups.min() < 0 or lineups.max() >= num_participants:
            raise ValueError(
                f"lineups must name participants 0..{num_participants - 1} ({num_policies} policies, "
                f"then the bots {bot_names}); got values {lineups.min()}..{lineups.max()}"
            )
        return run(params, jnp.asarray(lineups, jnp.int32), as_key(key, "table key"))

    checked_run.jitted = run
    checked_run.num_games = num_games
    checked_run.num_policies = num_policies
    return checked_run
