"""Record games for behaviour cloning: seat-rotated games of bots and policies, played on device, written as a
dataset (``agents.storage.datasets``) of the chosen lineup positions' steps.

    recorder = make_recorder(game, networks=(), num_games=8, positions=(0,), bot_names=("expert", "greedy"))
    for shard in record_shards(recorder, params=(), lineup=[1, 2, 2, 2, 2, 2, 2, 2], games=64, seed=0):
        ...                                         # or write_dataset(out_dir, record_shards(...), meta)

A *lineup* names the player of each of the 8 lineup positions by participant index (policies first, then
``bot_names``, as in ``agents.arena.tables``). Each game seed is played ``rotations`` times from the same reset and bot
keys, the lineup rotated one seat further each time (rotation ``r`` seats position ``j`` at seat ``(j + r) % 8``):
with 8 rotations every player sits in every seat. A lineup of one player plays the same game in every rotation
(the bots' randomness is per game), so it takes ``rotations=1``.

One sample per step of a recorded position while its seat is still in the game (from the game's first step to the
step that knocks it out or ends the game). Fields (``FIELDS``; N samples, grouped by game, rotation, position, and
in step order within each):

    obs          float32[N, obs_size] (vector), float32[N, obs_size + ORACLE_SIZE] (oracle: the vector, then the
                 hidden information, ``jaxgame.observation.oracle_block``) or uint8[N, 72, 20] (pixels, packed 2bpp,
                 as the env gives them)
    mask         bool[N, A]     the legal actions
    action       int16[N]       the action the seat's player sent; with a labeller (``label``), the labeller's action
                                in that state: DAgger's data, a teacher labelling the states another player reaches
    reward       float32[N]     the seat's reward on that step (the placement reward on its last)
    outcome      float32[N]     the seat's rewards from that step to its last, summed (undiscounted return-to-go)
    placement    int8[N]        the seat's final rank in the game (1 = first)
    decision     bool[N]        more than one action was legal
    game         int32[N]       the game seed's index in the recording (0..games-1): split by this, not by step
    rotation     int8[N]
    position     int8[N]        the lineup position (its player is ``meta["players"][position]``)
    seat         int8[N]
    step         int16[N]       the step's index in the game (0 = the first decision)

With a labeller, one more field (``LABELLED_FIELDS``):

    played       int16[N]       the action the seat's player sent (``action`` is the labeller's)

Games are played ``num_games`` seeds at a time (one compiled program, ``segment_steps`` steps per call, stopped
when every game of the batch has ended); each batch is one shard. Batch ``b`` uses ``fold_in(key(seed), b)``:
the same seed, lineup and batch size record the same dataset.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

import jaxgame
from agents.arena.tables import check_bot_names, initial_carries, make_seat_actions, rotation_seats
from agents.arena.tournament import participant_index, resolve_players, table_game
from agents.policies.load import check_same_observations, parse_spec, table_networks
from agents.storage.datasets import check_new_directory, write_dataset
from agents.storage.outputs import check_writable
from agents.utils import memory
from agents.utils.progress import NoProgress, Progress
from jaxgame import all_bots
from jaxgame import constants as C

FIELDS = (
    "obs",
    "mask",
    "action",
    "reward",
    "outcome",
    "placement",
    "decision",
    "game",
    "rotation",
    "position",
    "seat",
    "step",
)
#: The observation kinds a game of bots records (``jaxgame.env.OBS_KINDS`` but "both": a dataset field is one array).
RECORDED_OBS = ("vector", "pixels", "oracle")
#: the fields a labelled recording adds (``make_recorder(label=...)``)
LABELLED_FIELDS = ("played",)


@struct.dataclass
class Tables:
    """The recorder's carry between segments: a batch of ``E = num_games x rotations`` games."""

    states: object
    ts: object
    player: jax.Array  # int32[E, 8]: each seat's participant
    playing: jax.Array  # bool[E, 8]: the seat is still in the game
    finished: jax.Array  # bool[E]: the game has ended (its states are already a fresh game's)
    rank: jax.Array  # int32[E, 8]: the final ranks by seat, once finished
    t: jax.Array  # int32[]: steps played
    key: jax.Array
    carries: tuple  # the policies' carries, one entry per network (``agents.arena.tables.initial_carries``)


class Recorder:
    """The compiled parts of a recording (``make_recorder``)."""

    def __init__(self, game, networks, num_games, positions, bot_names, rotations, greedy_policy, segment_steps, label):
        self.game, self.num_games, self.rotations = game, num_games, rotations
        self.positions, self.bot_names, self.label = positions, bot_names, label
        self.num_policies = len(networks)
        self.num_participants = self.num_policies + len(bot_names)
        self.max_steps = game.config.max_rounds * game.config.steps_per_round + 1
        self.segment_steps = segment_steps = min(segment_steps, self.max_steps)
        num_envs = num_games * rotations
        venv = jaxgame.VecEnv(game, num_envs)
        position_of_seat = jnp.asarray(rotation_seats(num_games, -1, rotations))  # [E, 8]
        #: int[E, R]: the seat of each recorded position in each env
        self.recorded_seats = rotation_seats(num_games, 1, rotations)[:, list(positions)]
        recorded = jnp.asarray(self.recorded_seats)
        seat_actions, per_game = make_seat_actions(networks, bot_names, greedy_policy, num_games, rotations)

        def at_recorded(x):  # [E, 8, ...] -> [E, R, ...]
            index = recorded.reshape(recorded.shape + (1,) * (x.ndim - 2))
            return jnp.take_along_axis(x, index, axis=1)

        def start(params, lineups, key):
            player = jnp.take_along_axis(jnp.repeat(lineups, rotations, axis=0), position_of_seat, axis=1)
            reset_key, loop_key = jax.random.split(key)
            states, ts = jax.vmap(game.reset)(per_game(reset_key))
            return Tables(
                states,
                ts,
                player,
                jnp.ones((num_envs, C.NUM_PLAYERS), bool),
                jnp.zeros(num_envs, bool),
                jnp.zeros((num_envs, C.NUM_PLAYERS), jnp.int32),
                jnp.int32(0),
                loop_key,
                initial_carries(networks, num_envs),  # None for a feed-forward policy
            )

        def segment(params, tables: Tables):
            """``segment_steps`` steps -> (tables, rows): rows' leaves [S, E, R, ...]."""

            def body(c: Tables, _):
                key, policy_key, bot_key = jax.random.split(c.key, 3)
                actions, every, carries = seat_actions.with_every(
                    params, c.carries, c.player, c.states, c.ts, policy_key, bot_key
                )
                states, ts = venv.step(c.states, actions)
                live = c.playing & ~c.finished[:, None] & (c.t < self.max_steps)
                row = {
                    "obs": jax.tree_util.tree_map(at_recorded, c.ts.observation),
                    "mask": at_recorded(c.ts.action_mask),
                    "action": at_recorded(actions if label is None else every[label]),
                    "reward": at_recorded(ts.reward),
                    "live": at_recorded(live),
                }
                if label is not None:
                    row["played"] = at_recorded(actions)
                new = ts.done & ~c.finished
                c = c.replace(
                    states=states,
                    ts=ts,
                    playing=c.playing & ts.info["alive"],
                    finished=c.finished | new,
                    rank=jnp.where(new[:, None], ts.info["rank"], c.rank),
                    t=c.t + 1,
                    key=key,
                    carries=carries,
                )
                return c, row

            return jax.lax.scan(body, tables, None, length=segment_steps)

        self.start = jax.jit(start)
        self.segment = jax.jit(segment)

    def play(self, params, lineups, key) -> tuple[dict, np.ndarray]:
        """One batch: ``lineups`` int[num_games, 8] -> (rows, rank): rows' leaves [T, E, R, ...] (host numpy) with
        ``live`` bool[T, E, R] marking the recorded steps, rank int32[E, 8] by seat (0: the game did not end)."""
        tables = self.start(params, jnp.asarray(lineups, jnp.int32), key)
        segments = []
        while True:
            tables, rows = self.segment(params, tables)
            segments.append(jax.device_get(rows))
            finished, t = jax.device_get((tables.finished, tables.t))
            if finished.all() or t >= self.max_steps:
                break
        rows = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *segments)
        rank = np.where(finished[:, None], np.asarray(tables.rank), 0)
        return rows, rank


def make_recorder(
    game: jaxgame.AutoChessEnv,
    networks,
    num_games: int,
    positions,
    bot_names,
    rotations: int = C.NUM_PLAYERS,
    greedy_policy: bool = False,
    segment_steps: int = 48,
    label: int | None = None,
) -> Recorder:
    """A ``Recorder`` of ``num_games`` game seeds at a time, each in ``rotations`` rotations (1..8).

    ``networks``: the policies' networks (participants ``0..K-1``); ``bot_names``: the bots after them (distinct
    names from ``agents.arena.tables.TABLE_BOTS``); ``positions``: the lineup positions recorded (distinct, in 0..7);
    ``greedy_policy``: policies take their most likely legal action instead of sampling; ``label``: a participant
    index whose action in each recorded state is stored as ``action`` (the seat's own goes to ``played``; it need
    not sit in the lineup), or None: the seat's own action."""
    for name, value, low, high in (
        ("num_games", num_games, 1, 1 << 16),
        ("rotations", rotations, 1, C.NUM_PLAYERS),
        ("segment_steps", segment_steps, 1, 1 << 16),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    positions = tuple(int(p) for p in positions)
    if not positions or len(set(positions)) != len(positions) or not all(0 <= p < C.NUM_PLAYERS for p in positions):
        raise ValueError(f"positions must be distinct lineup positions in 0..{C.NUM_PLAYERS - 1}, got {positions!r}")
    bot_names = check_bot_names(bot_names)
    networks = tuple(networks)
    participants = len(networks) + len(bot_names)
    if label is not None and (isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < participants):
        raise ValueError(f"label must be a participant index in 0..{participants - 1} or None, got {label!r}")
    labeller = None if label is None or label < len(networks) else bot_names[label - len(networks)]
    if labeller in all_bots.SEAT_GATED:
        raise ValueError(
            f"the {labeller} bot decides only for the seats it plays, so it cannot label another "
            "player's states; record its own games instead"
        )
    return Recorder(game, networks, num_games, positions, bot_names, rotations, greedy_policy, segment_steps, label)


def samples(recorder: Recorder, rows: dict, rank: np.ndarray, first_game: int) -> dict[str, np.ndarray]:
    """The recorded samples of one batch (``Recorder.play``'s output) as ``FIELDS`` arrays, grouped by env
    (game, rotation), then position, then step; ``first_game``: the batch's first game index."""
    live = np.moveaxis(rows["live"], 0, -1)  # [E, R, T]
    num_envs, num_positions, num_steps = live.shape

    def grouped(x):  # [T, E, R, ...] -> [E, R, T, ...] -> the live samples
        return np.moveaxis(x, 0, 2)[live]

    reward = np.moveaxis(rows["reward"], 0, -1) * live
    outcome = np.flip(np.cumsum(np.flip(reward, -1), -1), -1)  # the seat's rewards from each step on
    env = np.arange(num_envs)[:, None, None]
    seat = recorder.recorded_seats[:, :, None]
    broadcast = np.zeros(live.shape, np.int64)
    mask = grouped(rows["mask"])
    labelled = {"played": grouped(rows["played"]).astype(np.int16)} if "played" in rows else {}
    return {
        "obs": jax.tree_util.tree_map(grouped, rows["obs"]),
        "mask": mask,
        "action": grouped(rows["action"]).astype(np.int16),
        "reward": grouped(rows["reward"]).astype(np.float32),
        "outcome": outcome[live].astype(np.float32),
        "placement": (rank[env, seat] + broadcast)[live].astype(np.int8),
        "decision": mask.sum(-1) > 1,
        "game": (first_game + env // recorder.rotations + broadcast)[live].astype(np.int32),
        "rotation": (env % recorder.rotations + broadcast)[live].astype(np.int8),
        "position": (np.asarray(recorder.positions)[None, :, None] + broadcast)[live].astype(np.int8),
        "seat": (seat + broadcast)[live].astype(np.int8),
        "step": (np.arange(num_steps)[None, None, :] + broadcast)[live].astype(np.int16),
        **labelled,
    }


def record_shards(recorder: Recorder, params, lineup, games: int, seed: int, on_batch=None):
    """An iterator of one ``FIELDS`` dict a batch of ``recorder.num_games`` game seeds until ``games`` are recorded
    (a last, smaller batch plays a full batch and keeps its first games). ``lineup``: int[8] participants;
    ``params``: the policies' parameter trees (a tuple, one per network); ``on_batch(games_done)`` after each batch.
    The arguments are checked when it is called (``ValueError``), before any game is played."""
    lineup = np.asarray(lineup)
    if lineup.shape != (C.NUM_PLAYERS,) or not np.issubdtype(lineup.dtype, np.integer):
        raise ValueError(f"lineup must be {C.NUM_PLAYERS} ints, got {lineup!r}")
    if lineup.min() < 0 or lineup.max() >= recorder.num_participants:
        raise ValueError(
            f"lineup must name participants 0..{recorder.num_participants - 1} ({recorder.num_policies}"
            f" policies, then the bots {recorder.bot_names}); got {lineup.tolist()}"
        )
    if len(tuple(params)) != recorder.num_policies:
        raise ValueError(f"params must hold {recorder.num_policies} parameter tree(s), got {len(tuple(params))}")
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    return _batches(
        recorder, tuple(params), np.tile(lineup, (recorder.num_games, 1)), games, jax.random.key(seed), on_batch
    )


def _batches(recorder: Recorder, params, lineups, games: int, key, on_batch):
    for batch, first in enumerate(range(0, games, recorder.num_games)):
        rows, rank = recorder.play(params, lineups, jax.random.fold_in(key, batch))
        shard = samples(recorder, rows, rank, first)
        keep = shard["game"] < games
        if not keep.all():
            shard = {name: values[keep] for name, values in shard.items()}
        yield shard
        if on_batch is not None:
            on_batch(min(first + recorder.num_games, games))


def _check_batch_fits(game, recorder, batch_games: int, rotations: int) -> None:
    """``MemoryError`` (with the estimate) when a batch of ``batch_games`` x ``rotations`` games and their recorded
    steps cannot fit on the device."""
    state, ts = jax.eval_shape(game.reset, jax.random.key(0))
    per_env_step = memory.tree_bytes((ts.observation, ts.action_mask)) // C.NUM_PLAYERS * len(recorder.positions)
    num_envs = batch_games * rotations
    memory.check_fits(
        f"batch_games={batch_games} (x {rotations} rotations)",
        num_envs * (memory.tree_bytes((state, ts)) + 2 * recorder.max_steps * per_env_step),
    )


def _counted(shards, placements: dict, decisions: list):
    """``shards`` passed through, each game's placement per recorded position and the decisions counted (and,
    in a labelled recording, the decisions where the player sent the label)."""
    for shard in shards:
        first = shard["step"] == 0  # one per game, rotation and position
        for p in placements:
            placements[p].extend(shard["placement"][first & (shard["position"] == p)].tolist())
        decisions[0] += int(shard["decision"].sum())
        if "played" in shard:
            decisions[1] += int((shard["decision"] & (shard["played"] == shard["action"])).sum())
        yield shard


def record(
    players,
    out_dir,
    games: int,
    positions=(0,),
    seed: int = 0,
    rotations: int | None = None,
    batch_games: int = 8,
    rules: dict | None = None,
    obs: str = "vector",
    greedy_policy: bool = False,
    progress: Progress | None = None,
    label: str | None = None,
) -> dict:
    """Record ``games`` game seeds of ``players`` into the dataset directory ``out_dir``; returns a summary: the
    directory, the samples (and decisions among them), shards, bytes, games, rotations, the recorded positions'
    mean placements (``"POSITION:PLAYER"``; 0 counts a game that did not end) and the seconds.

    ``players``: 8 player specs, one per lineup position, or one for all 8: a bot (``TABLE_BOTS``),
    ``baseline:NAME`` or ``RUN_DIR[:STEP]`` (``agents.policies.load``). ``positions``: the lineup positions recorded.
    ``rotations``: 1..8 (default: 8, or 1 when every position has the same player: its rotations would be the
    same game). ``batch_games``: game seeds played at once (one shard each). ``rules`` (``GameConfig`` fields)
    and ``obs`` ("vector", "pixels" or "oracle": the vector followed by the hidden information, to clone from what
    the recorded players may not see) apply to games of bots only: policies play with the rules and observations
    they trained with. ``label``: a player spec (as in ``players``; it need not play) whose action in each recorded
    state is stored as the sample's ``action``, the seat's own as ``played`` (DAgger: ``players`` puts a clone in
    the recorded position, ``label`` its teacher); the summary then adds ``label_agreement``, the share of the
    recorded decisions where the player sent the label. The manifest's meta holds the players, the recorded
    positions, the rules, the observation kind, the seed, the sizes and the labeller (None: none). ``out_dir``
    must be new or empty (checked first). Raises ``ValueError`` (``PolicyError``, ``DatasetError`` among them)
    with a one-line message, ``MemoryError`` when a batch cannot fit.
    """
    progress = progress or NoProgress()
    players = [str(p).strip() for p in players]
    if len(players) == 1:
        players = players * C.NUM_PLAYERS
    if len(players) != C.NUM_PLAYERS:
        raise ValueError(f"players must name 1 or {C.NUM_PLAYERS} players, got {len(players)}")
    if rotations is None:
        rotations = C.NUM_PLAYERS if len(set(players)) > 1 else 1
    label = None if label is None else str(label).strip()
    named = dict.fromkeys(players + ([label] if label is not None else []))  # the labeller need not play
    for player in named:  # every player named (PolicyError: the closest valid names) ...
        parse_spec(player)
    out_dir = Path(out_dir)
    check_new_directory(out_dir)  # ... and the output new and writable, before anything is compiled or played
    check_writable(out_dir, "dir")
    policies, player_of = resolve_players(named)
    if not policies and obs not in RECORDED_OBS:  # a dataset field is one array: not "both"
        raise ValueError(f"obs must be one of {RECORDED_OBS}, got {obs!r}")
    check_same_observations(policies)  # likewise: no table of vector and pixel policies ("both")
    game = table_game(policies, rules, obs)
    index, bot_names = participant_index(policies, player_of)
    lineup = [index[player_of[p]] for p in players]
    recorder = make_recorder(
        game,
        list(table_networks(policies, game)),  # each network as it is (one observation kind)
        batch_games,
        positions,
        bot_names,
        rotations,
        greedy_policy,
        label=None if label is None else index[player_of[label]],
    )
    _check_batch_fits(game, recorder, batch_games, rotations)
    meta = {
        "players": players,
        "player_names": [player_of[p] for p in players],
        "positions": list(recorder.positions),
        "recorded": [players[p] for p in recorder.positions],
        "rules": dataclasses.asdict(game.config),
        "obs": game.obs_kind,
        "games": games,
        "rotations": rotations,
        "seed": seed,
        "batch_games": batch_games,
        "greedy_policy": greedy_policy,
        "label": label,
    }
    progress.status(
        f"recording {games} games of {', '.join(players)} (positions {list(recorder.positions)}, "
        f"{rotations} rotation(s) each) into {out_dir}: compiling ..."
    )
    start = time.perf_counter()
    progress.start(games, 0, unit="games")
    done = [0]

    def on_batch(games_done):
        progress.chunk(games_done - done[0], "")
        done[0] = games_done

    placements = {p: [] for p in recorder.positions}
    decisions = [0, 0]
    counted = functools.partial(_counted, placements=placements, decisions=decisions)
    try:
        params = tuple(p.params for p in policies)
        manifest = write_dataset(out_dir, counted(record_shards(recorder, params, lineup, games, seed, on_batch)), meta)
    finally:
        progress.close()
    agreement = (
        {} if label is None else {"label": label, "label_agreement": round(decisions[1] / max(decisions[0], 1), 4)}
    )
    return {
        "out": str(out_dir),
        "samples": manifest["num_samples"],
        "decisions": decisions[0],
        "shards": len(manifest["shards"]),
        "bytes": sum(shard["bytes"] for shard in manifest["shards"]),
        "games": games,
        "rotations": rotations,
        "mean_placement": {f"{p}:{players[p]}": round(float(np.mean(placements[p])), 3) for p in placements},
        **agreement,
        "seconds": round(time.perf_counter() - start, 2),
    }


__all__ = [
    "FIELDS",
    "LABELLED_FIELDS",
    "RECORDED_OBS",
    "Recorder",
    "Tables",
    "make_recorder",
    "record",
    "record_shards",
    "samples",
]
