"""Whole games of a lineup, recorded in one compiled program: each decision step's public state, every seat's
action, the policies' top actions with their probabilities and their value estimates, the final placements.

    record = record_game(["baseline:ppo_small-v1"] + ["expert"] * 7, seed=0)
    record["placements"]                       # the final rank of each seat, 1 = first
    agents.replays.format.write(record, "game.json")

The game is one game of the seat-rotated evaluation (``agents.arena.tables``) of the same seed: game ``game`` of
``num_games`` in rotation ``rotation`` of ``make_table_runner(...)(params, lineups, jax.random.key(seed))`` (by
default game 0 of 1, rotation 0: lineup position ``j`` in seat ``j``). The same reset key, bot keys and sampling
draws: the env is stepped alone, but its decisions are computed in a batch of the table's shape
(``make_seat_actions``' ``of_env``), so that a sampled action and every float result are the ones the table gives
it. The policies are the table's participants in the order ``evaluate`` seats them: position 0's policy first,
then the others by spec (sorted); so ``evaluate P --vs ... --games 1 --seed S`` plays the game of position 0 =
``P`` that ``record_game([P, ...], S)`` records (placements equal, tested).

One compiled program per lineup's participants (``GameRecorder``): a ``lax.scan`` over the game's most steps
(``max_rounds x steps_per_round + 1``, the table's limit) that stops stepping once the game has ended (a done flag;
the steps after it are padding, cut on the host). The full ``GameState`` of every step stays on the host
(``GameTrace.states``): what the record does not show (the pool, the random key, the seat order of the pairing
schedule) is hidden information (docs/observation.md, "What is public"), which the record leaves out.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from agents.arena.tables import initial_carries, make_seat_actions, rotation_seats, step_keys, table_keys
from agents.arena.tournament import participant_index, resolve_players, table_game
from agents.core import distributions
from agents.policies.load import parse_spec, rule_differences, table_networks
from agents.replays import fights as fights_lib
from agents.replays import format as replay_format
from agents.utils.progress import NoProgress, Progress
from agents.utils.versions import package_version
from jaxgame import constants as C
from jaxgame import game as game_lib
from jaxgame import species, synergy

#: The fields of a record's ``"state"`` (``public_state``): what every seat may know of every seat, per step.
STATE_FIELDS = (
    "round",
    "step_in_round",
    "life",
    "gold",
    "level",
    "xp",
    "streak",
    "alive",
    "rank",
    "species",
    "stars",
    "shop",
    "shop_locked",
    "turn_ended",
    "synergy",
    "last_opponent",
    "last_result",
)


@dataclasses.dataclass
class GameTrace:
    """One recorded game on the host (numpy). T: the steps played (the game's last step included).

    ``states``: a ``GameState`` whose leaves have a leading [T + 1] axis: the state each step's actions were
    chosen in, then the game's final state (before the auto-reset); its ``key`` as key data uint32[T + 1, 2].
    ``actions`` int32[T, 8]: each seat's action. ``fight`` bool[T]: the fights followed this step's actions.
    ``top_actions`` int32[T, 8, k] (-1 where fewer than k actions are legal), ``top_probs`` float32[T, 8, k]
    (sorted, highest first), ``value`` float32[T, 8]: each seat's policy's k most likely legal actions, their
    probabilities and its value estimate; meaningful only for the seats of ``policy_seats`` bool[8].
    ``placements`` int32[8]: each seat's final rank (1 = first; 0 for all when the game did not end within the
    step limit, as the table counts it). ``finished``: the game ended."""

    states: jaxgame.GameState
    actions: np.ndarray
    fight: np.ndarray
    top_actions: np.ndarray
    top_probs: np.ndarray
    value: np.ndarray
    policy_seats: np.ndarray
    placements: np.ndarray
    finished: bool

    @property
    def steps(self) -> int:
        return int(self.actions.shape[0])


def _key_data(state: jaxgame.GameState) -> jaxgame.GameState:
    return state.replace(key=jax.random.key_data(state.key))


class GameRecorder:
    """The compiled recording of games between the policies ``networks`` (participants ``0..K-1``) and the bots
    ``bot_names`` (participants ``K..``) at ``game``'s table, as ``make_table_runner(game, networks, num_games,
    greedy_policy, bot_names=bot_names)`` plays them. ``top_k``: the policies' most likely actions kept per step
    (1..NUM_ACTIONS). ``play`` records one game; every lineup of these participants shares the program. A recurrent
    policy's carries go through the game's steps as the table keeps them (``agents.arena.tables.initial_carries``,
    reset at a seat's elimination), so its game is the table's too."""

    def __init__(
        self,
        game: jaxgame.AutoChessEnv,
        networks,
        bot_names,
        greedy_policy: bool = False,
        top_k: int = 5,
        num_games: int = 1,
    ):
        for name, value, high in (("top_k", top_k, C.NUM_ACTIONS), ("num_games", num_games, 1 << 16)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise ValueError(f"{name} must be an int in [1, {high}], got {value!r}")
        self.game, self.networks, self.bot_names = game, tuple(networks), tuple(bot_names)
        self.greedy_policy, self.top_k, self.num_games = greedy_policy, top_k, num_games
        self.max_steps = game.config.max_rounds * game.config.steps_per_round + 1  # the table runner's limit
        self._run = jax.jit(self._program)

    def _program(self, params, player, key, env):
        """player int32[8] (each seat's participant), key: the table's key, env int32[]: the table's env index
        -> (rows: leaves [max_steps, ...], steps int32[], done bool[], rank int32[8], final state)."""
        game, num_policies = self.game, len(self.networks)
        venv = jaxgame.VecEnv(game, 1)
        seat_actions, per_game = make_seat_actions(self.networks, self.bot_names, self.greedy_policy, self.num_games)
        seats = jnp.arange(C.NUM_PLAYERS)
        reset_key, loop_key = table_keys(key)
        states, ts = jax.vmap(game.reset)(jax.lax.dynamic_slice_in_dim(per_game(reset_key), env, 1))
        player = player[None]

        def policy_view(logits, values, mask):
            """Each seat's policy's (top actions int32[8, k], their probabilities float32[8, k], value float32[8])."""
            if not num_policies:
                return (
                    jnp.full((C.NUM_PLAYERS, self.top_k), -1, jnp.int32),
                    jnp.zeros((C.NUM_PLAYERS, self.top_k), jnp.float32),
                    jnp.zeros(C.NUM_PLAYERS, jnp.float32),
                )
            own = jnp.clip(player[0], 0, num_policies - 1)  # a bot's seat: any policy's, not kept
            probs = jax.nn.softmax(distributions.mask_logits(logits[own, seats], mask), axis=-1)
            top_probs, top = jax.lax.top_k(probs, self.top_k)
            legal = jnp.take_along_axis(distributions.legal(mask), top, axis=-1)
            return jnp.where(legal, top, -1), jnp.where(legal, top_probs, 0.0), values[own, seats]

        def live(c):
            states, ts, key, _, _, t, _, carries = c
            key, policy_key, bot_key = step_keys(key)
            actions, logits, values, carries = seat_actions.of_env(
                env, params, carries, player, states, ts, policy_key, bot_key
            )
            top, top_probs, value = policy_view(logits[:, 0], values[:, 0], ts.action_mask[0])
            row = {
                "state": _key_data(jax.tree_util.tree_map(lambda x: x[0], states)),
                "action": actions[0],
                "fight": game_lib.fight_due(states, game.config)[0],
                "top_actions": top,
                "top_probs": top_probs,
                "value": value,
            }
            states, ts = venv.step(states, actions)
            final = _key_data(jax.tree_util.tree_map(lambda x: x[0], ts.info["final_state"]))
            return (states, ts, key, ts.done[0], ts.info["rank"][0], t + 1, final, carries), row

        init = (
            states,
            ts,
            loop_key,
            jnp.asarray(False),
            jnp.zeros(C.NUM_PLAYERS, jnp.int32),
            jnp.int32(0),
            _key_data(jax.tree_util.tree_map(lambda x: x[0], states)),
            initial_carries(self.networks, 1),  # the policies' carries of this env (None: feed-forward)
        )
        row_shape = jax.eval_shape(live, init)[1]

        def idle(c):  # after the game's end: nothing is stepped, the row is padding
            return c, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), row_shape)

        def body(c, _):
            return jax.lax.cond(c[3], idle, live, c)

        (_, _, _, done, rank, steps, final, _), rows = jax.lax.scan(body, init, None, length=self.max_steps)
        return rows, steps, done, jnp.where(done, rank, 0), final

    def play(self, params, lineup, key, game: int = 0, rotation: int = 0) -> GameTrace:
        """Record game ``game`` (0..num_games-1) in rotation ``rotation`` (0..7) of the table key ``key`` for
        ``lineup`` int[8] (participants by lineup position; rotation r seats position j at seat (j + r) % 8) and
        ``params`` (one parameter tree per policy)."""
        lineup = np.asarray(lineup)
        num_participants = len(self.networks) + len(self.bot_names)
        if (
            lineup.shape != (C.NUM_PLAYERS,)
            or not np.issubdtype(lineup.dtype, np.integer)
            or lineup.min() < 0
            or lineup.max() >= num_participants
        ):
            raise ValueError(
                f"lineup must be {C.NUM_PLAYERS} participants in 0..{num_participants - 1}, got {lineup.tolist()}"
            )
        for name, value, high in (("game", game, self.num_games - 1), ("rotation", rotation, C.NUM_PLAYERS - 1)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
                raise ValueError(f"{name} must be an int in [0, {high}], got {value!r}")
        params = tuple(params)
        if len(params) != len(self.networks):
            raise ValueError(
                f"params must hold {len(self.networks)} parameter tree(s), one per network; got {len(params)}"
            )
        player = lineup[rotation_seats(1)[rotation]]  # seat i: lineup position (i - rotation) % 8
        env = jnp.int32(game * C.NUM_PLAYERS + rotation)
        rows, steps, done, rank, final = jax.device_get(self._run(params, jnp.asarray(player, jnp.int32), key, env))
        t = int(steps)
        states = jax.tree_util.tree_map(
            lambda x, last: np.concatenate([x[:t], np.asarray(last)[None]]), rows["state"], final
        )
        return GameTrace(
            states=states,
            actions=rows["action"][:t],
            fight=rows["fight"][:t],
            top_actions=rows["top_actions"][:t],
            top_probs=rows["top_probs"][:t],
            value=rows["value"][:t],
            policy_seats=player < len(self.networks),
            placements=np.asarray(rank),
            finished=bool(done),
        )


def game_reset_key(seed: int, game: int = 0, num_games: int = 1) -> jax.Array:
    """The key game ``game`` of ``num_games`` is reset with at the table of key ``jax.random.key(seed)`` (every
    rotation's): ``env.reset(game_reset_key(...))`` and a record's actions replay its game."""
    reset_key, _ = table_keys(jax.random.key(seed))
    return jax.random.split(reset_key, num_games)[game]


@functools.lru_cache(maxsize=8)
def game_recorder(
    game: jaxgame.AutoChessEnv,
    networks: tuple,
    bot_names: tuple,
    greedy_policy: bool = False,
    top_k: int = 5,
    num_games: int = 1,
) -> GameRecorder:
    """A ``GameRecorder``, kept for the next game of the same participants (its program compiled once)."""
    return GameRecorder(game, networks, bot_names, greedy_policy, top_k, num_games)


def public_state(states: jaxgame.GameState) -> dict[str, np.ndarray]:
    """``STATE_FIELDS`` of ``states`` (numpy leaves with any leading axes L): what every seat may know
    (docs/observation.md, "What is public"; each seat's shop is its owner's). Shapes after L: ``round``,
    ``step_in_round`` []; per seat [8]: ``life``, ``gold``, ``level``, ``xp``, ``streak``, ``alive``, ``rank``,
    ``shop_locked``, ``turn_ended``, ``last_opponent``, ``last_result``; ``species`` and ``stars`` [8, 32] (bench
    slots 0..7, then the board cells 8..31), ``shop`` [8, 6], ``synergy`` [8, NUM_TYPES] (active levels 0..3 of the
    board's types). All int32 (flags 0/1)."""
    p = states.players
    board = np.asarray(p.species)[..., C.BENCH_SIZE :]
    levels = synergy.synergy_levels(synergy.type_counts(jnp.asarray(board)))
    fields = {"round": states.round, "step_in_round": states.step_in_round, "synergy": levels}
    fields.update({name: getattr(p, name) for name in STATE_FIELDS if name not in fields})
    return {name: np.asarray(fields[name]).astype(np.int32) for name in STATE_FIELDS}


def seat_players(players) -> list[str]:
    """``players`` (1 or 8 player specs) as the 8 lineup positions' specs; ``ValueError`` for another count and
    ``PolicyError`` (one line, the closest valid names) for an unknown player."""
    players = [str(p).strip() for p in ([players] if isinstance(players, str) else players)]
    if len(players) == 1:
        players = players * C.NUM_PLAYERS
    if len(players) != C.NUM_PLAYERS or not all(players):
        raise ValueError(f"players must name 1 or {C.NUM_PLAYERS} players, got {len(players)}")
    for player in dict.fromkeys(players):
        parse_spec(player)
    return players


def record_game(
    players,
    seed: int,
    rules: dict | None = None,
    deterministic: bool = False,
    top_k: int = 5,
    *,
    game: int = 0,
    num_games: int = 1,
    rotation: int = 0,
    fights: bool = True,
    progress: Progress | None = None,
) -> dict:
    """The record (``agents.replays.format``, docs/replays.md) of one game of ``players``: 1 player spec for all 8
    lineup positions or 8 (a bot, ``baseline:NAME``, ``RUN_DIR[:STEP]``), seed ``seed``: game ``game`` of
    ``num_games`` in rotation ``rotation`` of the seat-rotated evaluation with the table key
    ``jax.random.key(seed)`` (the module docstring). ``rules`` (``GameConfig`` fields): games of bots only (a
    policy plays the rules it trained with). ``deterministic``: the policies take their most likely legal action.
    ``top_k``: the policies' most likely legal actions kept per step. ``fights``: record every fight tick by tick
    (``agents.replays.fights``; else the record's ``"fights"`` is None). Raises ``ValueError`` (``PolicyError``
    among them) with one line."""
    progress = progress or NoProgress()
    trace, meta = play_game(
        players, seed, rules, deterministic, top_k, game=game, num_games=num_games, rotation=rotation, progress=progress
    )
    fought = None
    if fights:
        table = jaxgame.AutoChessEnv(jaxgame.GameConfig(**meta["rules"]))
        progress.status(f"recording the fights of {int(trace.fight.sum())} fight steps ...")
        fought = fights_lib.as_json_list(fights_lib.fights_of_game(table, trace.states, trace.actions))
    return to_record(trace, meta, fought)


def play_game(
    players,
    seed: int,
    rules: dict | None = None,
    deterministic: bool = False,
    top_k: int = 5,
    *,
    game: int = 0,
    num_games: int = 1,
    rotation: int = 0,
    progress: Progress | None = None,
) -> tuple[GameTrace, dict]:
    """``record_game``'s game as ``(GameTrace, meta)``: the full states on the host and the record's settings
    (``to_record`` turns them into the record)."""
    progress = progress or NoProgress()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")
    lineup = seat_players(players)
    first = [lineup[0]] if not isinstance(parse_spec(lineup[0]), str) else []
    policies, player_of = resolve_players(first + sorted(set(lineup) - set(first)))  # evaluate's participants
    table = table_game(policies, rules)
    for note in rule_differences(policies):
        progress.status(f"note: {note}")
    index, bot_names = participant_index(policies, player_of)
    recorder = game_recorder(table, table_networks(policies, table), bot_names, deterministic, top_k, num_games)
    progress.status(f"recording a game of {', '.join(dict.fromkeys(lineup))}: compiling ...")
    trace = recorder.play(
        tuple(p.params for p in policies),
        [index[player_of[p]] for p in lineup],
        jax.random.key(int(seed)),
        game,
        rotation,
    )
    seats = rotation_seats(1)[rotation]  # seat i: lineup position seats[i]
    meta = {
        "seed": int(seed),
        "game": game,
        "num_games": num_games,
        "rotation": rotation,
        "deterministic": bool(deterministic),
        "top_k": top_k,
        "lineup": lineup,
        "seats": [lineup[j] for j in seats],
        "names": [player_of[lineup[j]] for j in seats],
        "rules": dataclasses.asdict(table.config),
        "max_steps": recorder.max_steps,
    }
    return trace, meta


def to_record(trace: GameTrace, meta: dict, fights=None) -> dict:
    """The JSON-ready record of ``trace`` and ``play_game``'s ``meta`` (the layout: docs/replays.md): lists of
    ints, probabilities rounded down to 4 decimals (they sum to at most 1), values rounded to 4 decimals.
    ``fights``: the fights of the fight steps (``agents.replays.fights.as_json_list``), when recorded (else
    None)."""
    rules = dict(meta["rules"])
    rules["pve_rounds"] = list(rules["pve_rounds"])
    policy_seats = np.flatnonzero(trace.policy_seats)
    probs = np.floor(trace.top_probs[:, policy_seats].astype(np.float64) * 1e4) / 1e4
    return {
        "format": replay_format.FORMAT,
        "version": replay_format.VERSION,
        "jaxgame_version": package_version("jaxgame"),
        "settings": {
            key: meta[key] for key in ("seed", "game", "num_games", "rotation", "deterministic", "top_k", "max_steps")
        },
        "rules": rules,
        "lineup": list(meta["lineup"]),
        "players": {"seats": list(meta["seats"]), "names": list(meta["names"]), "policy_seats": policy_seats.tolist()},
        "steps": trace.steps,
        "finished": trace.finished,
        "placements": trace.placements.astype(int).tolist(),
        "tables": {
            "species": list(species.SPECIES_NAMES),
            "types": list(species.TYPE_NAMES),
            "species_types": species.SPECIES_TYPES.tolist(),
            "species_cost": species.SPECIES_COST.tolist(),
        },
        "state": {name: values.tolist() for name, values in public_state(trace.states).items()},
        "actions": trace.actions.astype(int).tolist(),
        "fight": trace.fight.astype(int).tolist(),
        "policy": {
            "top_actions": trace.top_actions[:, policy_seats].astype(int).tolist(),
            "top_probs": probs.tolist(),
            "value": np.round(trace.value[:, policy_seats].astype(np.float64), 4).tolist(),
        },
        "fights": fights,
    }


__all__ = [
    "STATE_FIELDS",
    "GameRecorder",
    "GameTrace",
    "game_recorder",
    "game_reset_key",
    "play_game",
    "public_state",
    "record_game",
    "seat_players",
    "to_record",
]
