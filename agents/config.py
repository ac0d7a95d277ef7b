"""``TrainConfig``: every knob of a training run, validated at construction.

A config is a frozen, hashable dataclass, so it can be a static argument of
jitted functions. Fields split in two kinds:

- *shape* fields (``num_envs``, ``num_steps``, network sizes, the env, ...)
  fix the compiled program;
- *hyperparameters* (``HPARAM_FIELDS``: ``lr``, ``gamma``, ...) enter the
  program as traced float32 scalars (``TrainConfig.hparams()``), so a sweep can
  vmap over them without recompiling.

Every field is checked in ``__post_init__``; a bad value raises ``ValueError``
naming the field and the allowed range, before anything is compiled.
``TrainConfig.with_overrides({"lr": "1e-4", ...})`` parses command-line strings.
"""

from __future__ import annotations

import dataclasses
import typing

import jax.numpy as jnp
from flax import struct

from jaxgame.config import FLOAT_RULE_RANGES, INT_RULE_RANGES, GameConfig, check_float, check_int

ALGOS = ("ppo", "a2c")
OBS_KINDS = ("vector", "pixels")
NETWORKS = ("mlp", "cnn")
ACTIVATIONS = ("tanh", "relu")
SEAT_KINDS = ("self", "random", "greedy")
NUM_SEATS = 8

#: The game rules a training config may set (``jaxgame.config.GameConfig`` fields, same defaults and ranges).
RULE_FIELDS = ("max_rounds", "steps_per_round", "max_combat_ticks", "reward_win", "reward_life")
_GAME_DEFAULTS = GameConfig()

#: Fields that enter the compiled program as traced scalars (sweepable).
HPARAM_FIELDS = ("lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef", "max_grad_norm")


@struct.dataclass
class HParams:
    """Traced hyperparameters: float32[] scalars (or [S] under a vmapped sweep)."""

    lr: jnp.ndarray
    gamma: jnp.ndarray
    gae_lambda: jnp.ndarray
    clip_eps: jnp.ndarray
    ent_coef: jnp.ndarray
    vf_coef: jnp.ndarray
    max_grad_norm: jnp.ndarray


# name -> (low, high) for numbers; (choices,) for strings
_INT_RANGES = {
    "seed": (0, 2**31 - 1),
    "num_envs": (1, 1 << 20),
    "num_devices": (0, 1 << 16),
    "num_steps": (1, 1 << 16),
    "total_steps": (1, 1 << 50),
    "update_epochs": (1, 1000),
    "num_minibatches": (1, 1 << 20),
    "update_every": (1, 1 << 16),
    "updates_per_chunk": (1, 1 << 20),
    "eval_every": (0, 1 << 20),
    "eval_games": (1, 4096),
    "checkpoint_every": (0, 1 << 20),
    "keep_checkpoints": (1, 1000),
    "league_size": (0, 1024),
    "league_learner_seats": (1, NUM_SEATS - 1),
    "league_groups": (1, 1024),
    "snapshot_every": (1, 1 << 20),
    **{name: INT_RULE_RANGES[name] for name in RULE_FIELDS if name in INT_RULE_RANGES},
}
_FLOAT_RANGES = {
    "lr": (0.0, 1.0),
    "gamma": (0.0, 1.0),
    "gae_lambda": (0.0, 1.0),
    "clip_eps": (0.0, 10.0),
    "ent_coef": (0.0, 10.0),
    "vf_coef": (0.0, 100.0),
    "max_grad_norm": (0.0, 1e6),
    "league_pool_prob": (0.0, 1.0),
    **{name: FLOAT_RULE_RANGES[name] for name in RULE_FIELDS if name in FLOAT_RULE_RANGES},
}
LEAGUE_BOTS = ("random", "greedy")
LEAGUE_SAMPLING = ("uniform", "pfsp")
_CHOICES = {"algo": ALGOS, "obs": OBS_KINDS, "network": NETWORKS, "activation": ACTIVATIONS,
            "league_bot": LEAGUE_BOTS, "league_sampling": LEAGUE_SAMPLING, "best_by": ("placement", "rating")}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A training run. Defaults are a CPU-sized self-play PPO on the game.

    Attributes (ranges are inclusive):
      algo: "ppo" (rollout + clipped surrogate) or "a2c" (streaming TD(0), no rollout buffer).
      env: "autochess" or "gymnax:<EnvName>" (single agent, e.g. "gymnax:CartPole-v1").
      obs: "vector" or "pixels" (packed 2bpp frames; needs network="cnn"). Game only.
      opponents: who plays the 8 seats: "self" (all seats are the learner: shared-parameter
        self-play), "random" or "greedy" (seat 0 learns, 7 bots), or 8 comma-separated names
        from self/random/greedy. Only "self" seats are training data. Game only.
      seed: master seed in [0, 2^31 - 1]; every random stream derives from it (docs/training.md).
      num_envs: games (or gymnax envs) stepped together, in [1, 2^20] (all devices together).
      num_devices: data-parallel devices, in [0, 65536]: 0 = all of ``jax.devices()`` (every host's in a
        multi-host run), else the first that many; the envs are sharded over them (``agents.distributed``),
        so num_envs must divide by it. A run equals the one-device run up to float rounding, and a
        checkpoint resumes on any number of devices.
      num_steps: PPO rollout length T per update, in [1, 65536].
      total_steps: env steps of the whole run, all envs together (a game step moves all 8 seats).
      lr: Adam learning rate in [0, 1]; anneal_lr: linear decay to 0 over the run.
      gamma, gae_lambda: discount and GAE lambda in [0, 1].
      clip_eps: PPO ratio (and value) clip in [0, 10]; clip_value: PPO2 value clipping.
      ent_coef, vf_coef: entropy bonus in [0, 10] and value-loss weight in [0, 100].
      normalize_advantages: per-minibatch, over decision samples only.
      update_epochs, num_minibatches: PPO epochs over the rollout and minibatches per epoch;
        num_envs * num_steps * seats must divide by num_minibatches.
      max_grad_norm: global gradient-norm clip in [0, 1e6].
      network: "mlp" (vector obs) or "cnn" (pixels); hidden: layer widths; activation: tanh/relu;
        shared_torso: one torso for both heads.
      update_every: streaming A2C: env steps per parameter update, in [1, 65536].
      updates_per_chunk: updates per jitted chunk; logging/eval/checkpoints happen between chunks.
      eval_every: evaluate vs the bots every this many chunks (0 = never; game only).
      eval_games: game seeds per evaluation; each is played 8 times, the learner rotated over the seats.
      checkpoint_every: save every this many chunks (0 = only at the end); keep_checkpoints: last N kept.
      league_size: self-play league (``agents.league``; PPO on the game with opponents="self"): K pool
        slots of frozen snapshots, in [0, 1024]; 0 = no league (every seat is the learner).
      league_learner_seats: seats per game played by the learner (training data), in [1, 7]; each other
        seat is a pool snapshot with probability league_pool_prob in [0, 1], else the bot league_bot
        ("random" or "greedy"). Roles are drawn at every game start.
      league_groups: snapshots drawn per update, in [1, 1024]; the envs form that many equal groups, each
        playing one snapshot, so num_envs must divide by it. league_sampling: "uniform" over the filled
        slots or "pfsp" (by the learner's loss rate against each). snapshot_every: updates between snapshots.
        A league's evaluations also rate the learner against the pool and the bots (``eval/rating``).
      independent: one parameter set and optimizer state per seat, each trained only on its own seat's
        transitions (no parameter or data sharing); PPO on the game with opponents="self", no league.
      best_by: the checkpoint kept as best: "placement" (lowest eval/placement_vs_greedy) or "rating"
        (highest eval/rating; needs a league).
      max_rounds, steps_per_round, max_combat_ticks, reward_win, reward_life: game rules
        (``jaxgame.config.GameConfig``).
    """

    algo: str = "ppo"
    env: str = "autochess"
    obs: str = "vector"
    opponents: str = "self"
    seed: int = 0
    num_envs: int = 16
    num_devices: int = 0
    num_steps: int = 64
    total_steps: int = 200_000
    lr: float = 3e-4
    anneal_lr: bool = False
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    clip_value: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    normalize_advantages: bool = True
    update_epochs: int = 4
    num_minibatches: int = 4
    max_grad_norm: float = 0.5
    network: str = "mlp"
    hidden: tuple = (256, 256)
    activation: str = "tanh"
    shared_torso: bool = False
    update_every: int = 1
    updates_per_chunk: int = 10
    eval_every: int = 1
    eval_games: int = 8
    checkpoint_every: int = 1
    keep_checkpoints: int = 3
    league_size: int = 0
    league_learner_seats: int = 4
    league_pool_prob: float = 0.75
    league_bot: str = "greedy"
    league_groups: int = 2
    league_sampling: str = "uniform"
    snapshot_every: int = 10
    best_by: str = "placement"
    independent: bool = False
    max_rounds: int = _GAME_DEFAULTS.max_rounds
    steps_per_round: int = _GAME_DEFAULTS.steps_per_round
    max_combat_ticks: int = _GAME_DEFAULTS.max_combat_ticks
    reward_win: float = _GAME_DEFAULTS.reward_win
    reward_life: float = _GAME_DEFAULTS.reward_life

    def __post_init__(self):
        for name, (low, high) in _INT_RANGES.items():
            check_int("TrainConfig", name, getattr(self, name), low, high)
        for name, (low, high) in _FLOAT_RANGES.items():  # NaN fails the range test too
            check_float("TrainConfig", name, getattr(self, name), low, high)
        for name, choices in _CHOICES.items():
            if getattr(self, name) not in choices:
                raise ValueError(f"TrainConfig.{name} must be one of {choices}, got {getattr(self, name)!r}")
        for name in ("anneal_lr", "clip_value", "normalize_advantages", "shared_torso", "independent"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"TrainConfig.{name} must be a bool, got {getattr(self, name)!r}")
        hidden = self.hidden
        if (
            not isinstance(hidden, tuple)
            or not 1 <= len(hidden) <= 8
            or any(isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= 65536 for h in hidden)
        ):
            raise ValueError(f"TrainConfig.hidden must be a tuple of 1..8 ints in [1, 65536], got {hidden!r}")
        if not (self.env == "autochess" or self.env.startswith("gymnax:") and len(self.env) > len("gymnax:")):
            raise ValueError(f"TrainConfig.env must be 'autochess' or 'gymnax:<EnvName>', got {self.env!r}")
        _ = self.seat_kinds  # validates opponents
        if (self.obs == "pixels") != (self.network == "cnn"):
            raise ValueError(
                f"TrainConfig.network must be 'cnn' for obs='pixels' and 'mlp' for obs='vector', "
                f"got network={self.network!r} with obs={self.obs!r}"
            )
        if self.is_gymnax and (self.obs != "vector" or self.opponents != "self"):
            raise ValueError("TrainConfig.obs and .opponents are game options; gymnax envs need obs='vector', "
                             f"opponents='self' (got {self.obs!r}, {self.opponents!r})")
        if self.total_steps < self.steps_per_update:
            raise ValueError(
                f"TrainConfig.total_steps must be >= one update's env steps ({self.steps_per_update} = "
                f"num_envs x {'num_steps' if self.algo == 'ppo' else 'update_every'}), got {self.total_steps}"
            )
        if self.num_devices and self.num_envs % self.num_devices:
            raise ValueError(
                f"TrainConfig.num_devices must divide num_envs={self.num_envs} (each device steps an equal share "
                f"of the envs), or be 0 for all devices; got {self.num_devices}"
            )
        if self.league_size:
            if self.algo != "ppo" or self.is_gymnax or self.opponents != "self":
                raise ValueError(
                    "TrainConfig.league_size > 0 (a league) needs algo='ppo' on the game with opponents='self' "
                    f"(the league assigns the seats); got algo={self.algo!r}, env={self.env!r}, "
                    f"opponents={self.opponents!r}"
                )
            if self.num_envs % self.league_groups:
                raise ValueError(f"TrainConfig.league_groups must divide num_envs={self.num_envs} (equal groups of "
                                 f"envs, one snapshot each), got {self.league_groups}")
        if self.independent and (self.algo != "ppo" or self.is_gymnax or self.opponents != "self"
                                 or self.league_size):
            raise ValueError(
                "TrainConfig.independent (one learner per seat) needs algo='ppo' on the game with opponents='self' "
                f"and no league; got algo={self.algo!r}, env={self.env!r}, opponents={self.opponents!r}, "
                f"league_size={self.league_size}"
            )
        if self.best_by == "rating" and not (self.league_size and self.eval_every):
            raise ValueError("TrainConfig.best_by='rating' needs a league (league_size > 0) that evaluates "
                             f"(eval_every > 0); got league_size={self.league_size}, eval_every={self.eval_every}")
        batch = self.num_envs * self.num_steps * (1 if self.independent else self.num_seats)
        if self.algo == "ppo" and batch % self.num_minibatches:
            what = "num_envs x num_steps (one learner's samples)" if self.independent else "num_envs x num_steps x seats"
            raise ValueError(
                f"TrainConfig.num_minibatches must divide the rollout batch {what} = {batch}, got {self.num_minibatches}"
            )

    # ---- derived values ----
    @property
    def is_gymnax(self) -> bool:
        return self.env.startswith("gymnax:")

    @property
    def num_seats(self) -> int:
        """Seats per env: 8 for the game, 1 for a gymnax env."""
        return 1 if self.is_gymnax else NUM_SEATS

    @property
    def seat_kinds(self) -> tuple:
        """The 8 seats' players, e.g. ("self", "greedy", ...); ("self",) for a gymnax env."""
        if self.is_gymnax:
            return ("self",)
        names = tuple(s.strip() for s in self.opponents.split(","))
        if len(names) == 1 and names[0] in SEAT_KINDS:
            names = names * NUM_SEATS if names[0] == "self" else ("self",) + names * (NUM_SEATS - 1)
        if len(names) != NUM_SEATS or any(n not in SEAT_KINDS for n in names) or "self" not in names:
            raise ValueError(
                f"TrainConfig.opponents must be one of {SEAT_KINDS} or {NUM_SEATS} comma-separated names from "
                f"{SEAT_KINDS} with at least one 'self', got {self.opponents!r}"
            )
        return names

    @property
    def steps_per_update(self) -> int:
        """Env steps (all envs together) consumed by one update."""
        return self.num_envs * (self.num_steps if self.algo == "ppo" else self.update_every)

    @property
    def num_updates(self) -> int:
        return self.total_steps // self.steps_per_update

    @property
    def num_chunks(self) -> int:
        return -(-self.num_updates // self.updates_per_chunk)

    def rules(self) -> dict:
        """The ``GameConfig`` overrides of this run."""
        return {n: getattr(self, n) for n in RULE_FIELDS}

    def hparams(self) -> HParams:
        """The traced hyperparameters as float32[] arrays."""
        return HParams(**{n: jnp.float32(getattr(self, n)) for n in HPARAM_FIELDS})

    # ---- (de)serialisation ----
    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s) {unknown}; valid: {sorted(known)}")
        data = dict(data)
        if "hidden" in data:
            data["hidden"] = tuple(data["hidden"])
        return cls(**data)

    def with_overrides(self, overrides: dict) -> TrainConfig:
        """A copy with fields replaced; string values (from ``--set key=value``) are parsed by field type."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - set(fields))
        if unknown:
            raise ValueError(f"unknown config key(s) {unknown}; valid keys: {', '.join(sorted(fields))}")
        hints = typing.get_type_hints(type(self))
        parsed = {k: parse_value(k, hints[k], v) if isinstance(v, str) else v for k, v in overrides.items()}
        return dataclasses.replace(self, **parsed)


def parse_value(name: str, kind, text: str):
    """Parse one ``--set`` value by the field's type; errors name the field."""
    text = text.strip()
    try:
        if kind is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return lowered in ("true", "1", "yes")
        if kind is int:
            value = float(text)  # accepts 1e6
            if not value.is_integer():
                raise ValueError(text)
            return int(value)
        if kind is float:
            return float(text)
        if kind is tuple:
            return tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())
        return text
    except ValueError:
        kind_name = {bool: "a bool (true/false)", int: "an int", float: "a number", tuple: "comma-separated ints"}
        raise ValueError(f"TrainConfig.{name} must be {kind_name.get(kind, kind)}, got {text!r}") from None
