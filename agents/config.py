"""``TrainConfig``: every knob of a training run, in groups by concern, validated at construction.

A config is a frozen, hashable dataclass of frozen groups (``TrainConfig.run``, ``.task``, ``.game``, ``.net``,
``.hparams``, ``.optim``, ``.loss``, ``.ppo``, ``.a2c``, ``.bc``, ``.distill``, ``.league``, ``.log``), so it can be
a static argument of jitted functions and an ``lru_cache`` key. Code reads a field through its group
(``config.hparams.lr``). Every field also has a unique *short name* (``lr``, ``num_envs``) for where a person types
it: ``--set lr=1e-4``, ``TrainConfig.from_fields(lr=1e-4)``, ``config.with_overrides({"lr": 1e-4})``. Fields split in
two kinds:

- *shape* fields (``num_envs``, ``num_steps``, network sizes, the env, ...)
  fix the compiled program;
- the *hyperparameters* (the ``hparams`` group, ``HPARAM_FIELDS``: ``lr``, ``gamma``, ...) enter the
  program as traced float32 scalars (``config.hparams.traced()``), so a sweep can
  vmap over them without recompiling.

Each group checks its own fields in its ``__post_init__`` (a bad value raises ``ValueError`` naming
``TrainConfig.<group>.<field>`` and the allowed range); ``TrainConfig.__post_init__`` checks the rules between
groups; both before anything is compiled. ``config.with_overrides({"lr": 1e-4, "hparams.clip_eps": 0.1})`` replaces
fields by short or dotted name, ``config.with_sets({"hparams.lr": "3e-4"})`` parses the values from text first (what
the CLIs' ``--set NAME=VALUE`` does); an unknown name is a ``ValueError`` that suggests the closest ones.
``to_dict()`` writes the nested form, ``from_dict()`` reads it and the forms of configs written earlier (flat, before
the groups; the hyperparameters in their earlier groups; the two booleans ``lr_schedule`` replaced).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import inspect
import textwrap
import typing
from collections.abc import Mapping

import jax.numpy as jnp
from flax import struct

from agents import config_names
from agents.config_names import FIELD_LIST_HINT  # noqa: F401  (re-exported: the CLIs replace it)
from agents.core.networks import NETWORK_KINDS as NETWORKS
from agents.core.networks import PIXEL_NETWORKS, RECURRENT_NETWORKS, VECTOR_ONLY_NETWORKS
from jaxgame.config import FLOAT_RULE_RANGES, INT_RULE_RANGES, GameConfig, check_float, check_int

ALGOS = ("ppo", "a2c", "bc")
OBS_KINDS = ("vector", "pixels", "oracle")
ACTIVATIONS = ("tanh", "relu")
#: what of the vector observation the network reads (``NetConfig.view``)
VIEWS = ("all", "frame")
SEAT_KINDS = ("self", "random", "greedy", "expert")
NUM_SEATS = 8

#: The game rules a training config may set (``jaxgame.config.GameConfig`` fields, same defaults and ranges).
RULE_FIELDS = ("max_rounds", "steps_per_round", "max_combat_ticks", "reward_win", "reward_life")
_GAME_DEFAULTS = GameConfig()

#: characters a Weights & Biases project name may not hold
WANDB_FORBIDDEN = ("/", "\\", "#", "?", "%", ":")
LEAGUE_BOTS = ("random", "greedy", "expert")
LEAGUE_SAMPLING = ("uniform", "pfsp")
#: the bots a clone may learn from; ``expert_public`` decides on public information only (docs/observation.md)
BC_TEACHERS = (*LEAGUE_BOTS, "expert_public")
SHUFFLES = ("global", "local")
#: how the learning rate decays over the run (``OptimConfig.lr_schedule``)
LR_SCHEDULES = ("constant", "linear", "cosine")
#: the two booleans ``lr_schedule`` replaced -> the schedule each meant when true; configs written before it (run
#: directories, the shipped baselines' files) are read through them, and a run's identity is still hashed with them
LEGACY_LR_FLAGS = {flag: text.partition("=")[2] for flag, text in config_names.RENAMED.items()}
#: group -> the hyperparameters it held before the ``hparams`` group (a nested config written then still loads)
HPARAMS_MOVED_FROM = {
    "optim": ("lr", "max_grad_norm"),
    "loss": ("gamma", "ent_coef", "vf_coef"),
    "ppo": ("gae_lambda", "clip_eps"),
}
BEST_BY = ("placement", "rating", "validation")

#: The config fields that name a frozen policy a run reads (``agents.algorithms.distill``;
#: ``agents.policies.frozen.load_references``).
REFERENCE_ROLES = ("teacher", "anchor")
_POLICY_NAME = 'a saved policy\'s name (RUN_DIR[:STEP] or baseline:NAME) or ""'


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


# ---------------------------------------------------------------- the groups


class _Group:
    """What every group shares: ``__post_init__`` checks each field by its declared type and the class tables
    (``RANGES``: name -> (low, high) of an int or float field; ``CHOICES``: name -> the allowed strings;
    ``STRINGS``: name -> what a free string field holds); a subclass adds its own rules after it."""

    NAME = ""  # the group's name in TrainConfig (its messages say TrainConfig.NAME.field)
    RANGES: typing.ClassVar[dict] = {}
    CHOICES: typing.ClassVar[dict] = {}
    STRINGS: typing.ClassVar[dict] = {}

    def __post_init__(self):
        self._check_fields()

    def _fail(self, name: str, message: str) -> typing.NoReturn:
        raise ValueError(f"TrainConfig.{self.NAME}.{name} {message}")

    def _check_fields(self) -> None:
        owner = f"TrainConfig.{self.NAME}"
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "bool":
                if not isinstance(value, bool):
                    self._fail(f.name, f"must be a bool, got {value!r}")
            elif f.type == "int":
                check_int(owner, f.name, value, *self.RANGES[f.name])
            elif f.type == "float":  # NaN fails the range test too
                check_float(owner, f.name, value, *self.RANGES[f.name])
            elif f.name in self.CHOICES:
                if not isinstance(value, str) or value not in self.CHOICES[f.name]:
                    self._fail(f.name, f"must be one of {self.CHOICES[f.name]}, got {value!r}")
            elif f.name in self.STRINGS and not isinstance(value, str):
                self._fail(f.name, f"must be {self.STRINGS[f.name]}, got {value!r}")

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """``{field: its doc}`` in declaration order: the string literal after each field, as one line."""
        return dict(_field_docs(cls))

    def to_dict(self) -> dict:
        """``{field: value}``, tuples as lists (JSON's form)."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in dataclasses.fields(self)
        }

    @classmethod
    def coerce(cls, value):
        """``value`` as this group: itself, or built from a dict of its fields (``from_dict``)."""
        return value if isinstance(value, cls) else cls.from_dict(value)

    @classmethod
    def from_dict(cls, data: Mapping):
        """The group from ``{field: value}`` (lists for tuple fields; missing fields take their defaults); an
        unknown name is a ``ValueError`` with the closest ones."""
        if not isinstance(data, Mapping):
            raise ValueError(f"TrainConfig.{cls.NAME} must be {cls.__name__} or a dict of its fields, got {data!r}")
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        unknown = [k for k in data if k not in types]
        if unknown:
            raise ValueError(
                "; ".join(f"TrainConfig.{cls.NAME} has no field {k!r}{_did_you_mean(k, types)}" for k in unknown)
            )
        return cls(**{k: tuple(v) if types[k] == "tuple" and isinstance(v, list) else v for k, v in data.items()})


@dataclasses.dataclass(frozen=True)
class RunConfig(_Group):
    """The run: its algorithm, seed, size, devices, length, starting parameters and chunks."""

    NAME = "run"
    RANGES = {
        "seed": (0, 2**31 - 1),
        "num_envs": (1, 1 << 20),
        "num_devices": (0, 1 << 16),
        "total_steps": (1, 1 << 50),
        "updates_per_chunk": (1, 1 << 20),
        "stop_at_update": (0, 1 << 40),
    }
    CHOICES = {"algo": ALGOS}
    STRINGS = {"init_from": _POLICY_NAME}

    algo: str = "ppo"
    """"ppo" (rollout + clipped surrogate), "a2c" (streaming TD(0), no rollout buffer; with network="gru" windows of
    update_every steps, agents.algorithms.a2c_windows) or "bc" (behaviour cloning
    of the bot bc_teacher on games generated inside the compiled program: PPO's rollouts with the teacher acting in
    the "self" seats, its actions' cross-entropy over the legal actions and the value's error to the GAE targets;
    agents.algorithms.bc; game only)"""
    seed: int = 0
    """master seed in [0, 2^31 - 1]; every random stream derives from it (docs/training.md)"""
    num_envs: int = 16
    """games (or gymnax envs) stepped together, all devices together, in [1, 2^20]"""
    num_devices: int = 0
    """data-parallel devices in [0, 2^16]: 0 = all of jax.devices() (every host's in a multi-host run), else the
    first that many; must divide num_envs, which are sharded over them (agents.utils.distributed). A run equals the
    one-device run up to float rounding, and a checkpoint resumes on any number of devices"""
    total_steps: int = 200_000
    """env steps of the whole run, all envs together (a game step moves all 8 seats), in [1, 2^50]; at least one
    update's: num_envs x num_steps (PPO) or num_envs x update_every (A2C)"""
    init_from: str = ""
    """start from a saved policy's parameters: "RUN_DIR" (its latest good checkpoint), "RUN_DIR:STEP" or
    "baseline:NAME"; only the parameters carry over (a fresh optimizer, update count, envs and league pool; warm
    the learning rate up again with warmup_updates); its network must be this run's, and a policy of obs="vector"
    may start an obs="oracle" run (the oracle inputs' weights start at 0); agents.policies.frozen. "" = fresh
    parameters"""
    updates_per_chunk: int = 10
    """updates per jitted chunk, in [1, 2^20]; logging, evaluation and checkpoints happen between chunks"""
    stop_at_update: int = 0
    """end the run after this many updates (with its evaluation and checkpoint), in [0, 2^40] and at most the run's
    updates; its schedules (learning rate, KL decays) stay those of total_steps', so the run is the first updates
    of the whole one (to measure how fast a long schedule starts). 0 = run all of total_steps"""
    fast_compile: bool = False
    """compile the run's programs (its init, chunk and evaluation) for a short run on a CPU: XLA's backend
    optimisation off and its older fusion emitters (jaxgame.xla_flags.FAST_COMPILE_OPTIONS), about half the compile
    time for programs that run 3-7x slower; options the process's XLA_FLAGS name win; no effect on other backends.
    Float results may differ in the last bits, so it may change on --resume. The smoke preset sets it"""

    def __post_init__(self):
        super().__post_init__()
        if self.num_devices and self.num_envs % self.num_devices:
            self._fail(
                "num_devices",
                f"must divide num_envs={self.num_envs} (each device steps an equal share of "
                f"the envs), or be 0 for all devices; got {self.num_devices}",
            )


@dataclasses.dataclass(frozen=True)
class TaskConfig(_Group):
    """What is played: the environment, the observation the learner reads and who plays the 8 seats."""

    NAME = "task"
    STRINGS = {
        "env": '"autochess" or "gymnax:<EnvName>"',
        "opponents": f"one of {SEAT_KINDS} or {NUM_SEATS} comma-separated names from them",
    }
    CHOICES = {"obs": OBS_KINDS}

    env: str = "autochess"
    """"autochess" or "gymnax:<EnvName>" (single agent, e.g. "gymnax:CartPole-v1")"""
    obs: str = "vector"
    """"vector", "pixels" (packed 2bpp frames; needs network="cnn", "tiles" or "tile_ids") or "oracle" (the vector
    followed by what a seat may not know: the other seats' shops, benches, boards, gold, xp and the next PvP opponent,
    jaxgame.observation.oracle_block; for an oracle teacher); game only: a gymnax env needs "vector\""""
    opponents: str = "self"
    """who plays the 8 seats: "self" (every seat is the learner: shared-parameter self-play), "random", "greedy" or
    "expert" (seat 0 learns, 7 bots), or 8 comma-separated names from self/random/greedy/expert with at least one
    "self"; only "self" seats are training data; game only: a gymnax env needs "self\""""

    def __post_init__(self):
        super().__post_init__()
        if not (self.env == "autochess" or self.env.startswith("gymnax:") and len(self.env) > len("gymnax:")):
            self._fail("env", f"must be 'autochess' or 'gymnax:<EnvName>', got {self.env!r}")
        _ = self.seat_kinds  # validates opponents
        if self.is_gymnax and (self.obs != "vector" or self.opponents != "self"):
            self._fail(
                "obs",
                "and .opponents are game options; gymnax envs need obs='vector', opponents='self' "
                f"(got {self.obs!r}, {self.opponents!r})",
            )

    @property
    def is_gymnax(self) -> bool:
        return self.env.startswith("gymnax:")

    @property
    def seat_kinds(self) -> tuple:
        """The 8 seats' players, e.g. ("self", "greedy", ...); ("self",) for a gymnax env."""
        if self.is_gymnax:
            return ("self",)
        names = tuple(s.strip() for s in self.opponents.split(","))
        if len(names) == 1 and names[0] in SEAT_KINDS:
            names = names * NUM_SEATS if names[0] == "self" else ("self",) + names * (NUM_SEATS - 1)
        if len(names) != NUM_SEATS or any(n not in SEAT_KINDS for n in names) or "self" not in names:
            self._fail(
                "opponents",
                f"must be one of {SEAT_KINDS} or {NUM_SEATS} comma-separated names from "
                f"{SEAT_KINDS} with at least one 'self', got {self.opponents!r}",
            )
        return names


@dataclasses.dataclass(frozen=True)
class RulesConfig(_Group):
    """The game's rules (``jaxgame.config.GameConfig`` fields: same defaults and ranges); ``TrainConfig.rules()``
    returns them as ``GameConfig`` overrides."""

    NAME = "game"
    RANGES = {
        **{n: INT_RULE_RANGES[n] for n in RULE_FIELDS if n in INT_RULE_RANGES},
        **{n: FLOAT_RULE_RANGES[n] for n in RULE_FIELDS if n in FLOAT_RULE_RANGES},
    }

    max_rounds: int = _GAME_DEFAULTS.max_rounds
    """round cap, in [1, 200]; at its end the survivors are ranked by life, then level"""
    steps_per_round: int = _GAME_DEFAULTS.steps_per_round
    """decision steps in each shop phase (the fights run at the end of the last one), in [1, 64]"""
    max_combat_ticks: int = _GAME_DEFAULTS.max_combat_ticks
    """100 ms combat ticks before a fight is a draw, in [1, 2000]"""
    reward_win: float = _GAME_DEFAULTS.reward_win
    """shaping reward for each fight won (PvP or PvE), in [-10, 10]"""
    reward_life: float = _GAME_DEFAULTS.reward_life
    """shaping reward per life point lost (use a negative value to penalise), in [-1, 1]"""


@dataclasses.dataclass(frozen=True)
class NetConfig(_Group):
    """The policy-value network and who owns its parameters."""

    NAME = "net"
    CHOICES = {"network": NETWORKS, "activation": ACTIVATIONS, "view": VIEWS}

    network: str = "mlp"
    """"mlp" (needs obs="vector" or "oracle"), "entity" (the game's vector observation read as units, each action
    scored from the units it names; obs="vector" only; agents.core.entity_network); for obs="pixels": "cnn" (three
    strided convolutions, accelerator-sized), "tiles" (one embedding per 8x8 tile of the frame, about an eighth of
    the cnn's work: CPU-sized) or "tile_ids" (the tiles network plus each tile's index in the renderer's atlas, found
    by an exact lookup: learns the game without learning to see; agents.core.tile_ids); "gru" (recurrent: an MLP torso
    of hidden, a GRU of hidden[-1] units whose hidden state is carried from step to step per env and seat and reset
    where a seat's episode ends, then the two heads; agents.core.recurrent; docs/training.md, "Recurrent policies").
    "gru" needs obs="vector" (the game's or a gymnax env's) and view="all", trains with algo="ppo" (num_minibatches
    dividing num_envs x learner seats: its minibatches are whole sequences) or algo="a2c" (windows of update_every
    steps, agents.algorithms.a2c_windows; n_step 1, target_tau 1), not with a league, independent learners, a
    teacher, an anchor or several devices; the tables carry its hidden state (evaluations, the ladder, replays)"""
    hidden: tuple = (256, 256)
    """hidden layer widths: a tuple of 1 to 8 ints, each in [1, 2^16] (network="gru": the last is the GRU's
    width)"""
    activation: str = "tanh"
    """"tanh" or "relu\""""
    shared_torso: bool = False
    """one torso for both the policy and the value head"""
    independent: bool = False
    """one parameter set and optimizer state per seat, each trained only on its own seat's transitions (no
    parameter or data sharing); needs algo="ppo" on the game with opponents="self" and no league"""
    view: str = "all"
    """what of the game's vector observation the network reads: "all", or "frame": only what the seat's rendered
    frame shows (jaxgame.observation.frame_view: no pool, of the opponents only the last one's life, level and
    board size), a diagnostic of what ppo_pixels' frames leave out; "frame" needs obs="vector\""""

    def __post_init__(self):
        super().__post_init__()
        hidden = self.hidden
        if (
            not isinstance(hidden, tuple)
            or not 1 <= len(hidden) <= 8
            or any(isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= 65536 for h in hidden)
        ):
            self._fail("hidden", f"must be a tuple of 1..8 ints in [1, 65536], got {hidden!r}")


@dataclasses.dataclass(frozen=True)
class HParamsConfig(_Group):
    """The traced hyperparameters: they enter the compiled program as float32 scalars (``traced()``), so a sweep
    vmaps over them in one compile (``agents.run.sweep``); every other field fixes the program."""

    NAME = "hparams"
    RANGES = {
        "lr": (0.0, 1.0),
        "gamma": (0.0, 1.0),
        "gae_lambda": (0.0, 1.0),
        "clip_eps": (0.0, 10.0),
        "ent_coef": (0.0, 10.0),
        "vf_coef": (0.0, 100.0),
        "max_grad_norm": (0.0, 1e6),
    }

    lr: float = 3e-4
    """Adam learning rate in [0, 1], the peak of optim.lr_schedule"""
    gamma: float = 0.995
    """discount of the returns in [0, 1]"""
    gae_lambda: float = 0.95
    """GAE lambda in [0, 1] (PPO)"""
    clip_eps: float = 0.2
    """PPO ratio (and value) clip in [0, 10]"""
    ent_coef: float = 0.01
    """entropy bonus coefficient in [0, 10]"""
    vf_coef: float = 0.5
    """value-loss weight in [0, 100]"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip in [0, 1e6]"""

    def traced(self) -> HParams:
        """The fields as ``HParams`` of float32[] arrays."""
        return HParams(**{f.name: jnp.float32(getattr(self, f.name)) for f in dataclasses.fields(self)})


#: the fields that enter the compiled program as traced scalars (sweepable): ``HParamsConfig``'s
HPARAM_FIELDS = tuple(f.name for f in dataclasses.fields(HParamsConfig))


@dataclasses.dataclass(frozen=True)
class OptimConfig(_Group):
    """The optimizer every algorithm steps: Adam(W), its learning-rate schedule and the gradient clip."""

    NAME = "optim"
    RANGES = {"warmup_updates": (0, 1 << 20), "weight_decay": (0.0, 1.0)}
    CHOICES = {"lr_schedule": LR_SCHEDULES}

    lr_schedule: str = "constant"
    """the learning rate over the run: "constant", "linear" (decays linearly to 0 at the run's last update) or
    "cosine" (decays along a half cosine to 0); an optax schedule of the update number"""
    warmup_updates: int = 0
    """warm the learning rate up linearly over the first this many updates, in [0, 2^20], fewer than the run's:
    update u (from 0) uses lr x min((u + 1) / warmup_updates, 1) (times the decay); 0 = none"""
    weight_decay: float = 0.0
    """decoupled weight decay (AdamW's) in [0, 1]: each optimizer step also subtracts lr x weight_decay x the
    parameter; 0 = plain Adam"""

    @classmethod
    def from_dict(cls, data: Mapping):
        return super().from_dict(legacy_lr_flags(data, "TrainConfig.optim") if isinstance(data, Mapping) else data)


@dataclasses.dataclass(frozen=True)
class LossConfig(_Group):
    """The actor-critic loss PPO and A2C share, beyond its weights (``hparams``): advantage normalisation."""

    NAME = "loss"

    normalize_advantages: bool = True
    """normalise the advantages per minibatch, over decision samples only"""


@dataclasses.dataclass(frozen=True)
class PPOConfig(_Group):
    """PPO's rollouts and update (behaviour cloning on generated games, algo="bc", uses them too)."""

    NAME = "ppo"
    RANGES = {"num_steps": (1, 1 << 16), "update_epochs": (1, 1000), "num_minibatches": (1, 1 << 20)}
    CHOICES = {"shuffle": SHUFFLES}

    num_steps: int = 64
    """PPO rollout length T per update, in [1, 2^16]"""
    update_epochs: int = 4
    """PPO epochs over each rollout, in [1, 1000]"""
    num_minibatches: int = 4
    """PPO minibatches per epoch, in [1, 2^20]; must divide the rollout batch num_envs x num_steps x the seats
    trained on (all 8 in self-play and a league, the "self" seats with bot opponents: trained_seats; num_envs x
    num_steps, one learner's samples, with independent=True); with network="gru" it must divide num_envs x the seats
    trained on, the (env, seat) sequences a recurrent update's minibatches hold whole"""
    shuffle: str = "global"
    """how PPO's minibatches are drawn on several devices: "global" (the whole rollout is permuted, as on one
    device: a run on D devices equals the one-device run, but every device holds the gathered rollout) or "local"
    (each device permutes and minibatches its own share of the envs under shard_map and the gradients are averaged
    over the devices: per-device memory stays flat as devices are added; num_minibatches must then divide each
    device's share of the batch). The same program on one device"""
    clip_value: bool = True
    """PPO2 value clipping (by hparams.clip_eps)"""


@dataclasses.dataclass(frozen=True)
class A2CConfig(_Group):
    """Streaming A2C (algo="a2c"): TD(0) or n-step targets, no rollout buffer (a recurrent network's A2C keeps
    windows of update_every steps: agents.algorithms.a2c_windows)."""

    NAME = "a2c"
    RANGES = {"update_every": (1, 1 << 16), "target_tau": (0.0, 1.0), "n_step": (1, 64)}

    update_every: int = 1
    """env steps per parameter update, in [1, 2^16] (network="gru": the window the GRU is re-run over, its
    truncated back-propagation through time)"""
    n_step: int = 1
    """decisions per TD target, in [1, 64]: a decision's target sums the seat's rewards up to its n-th next decision
    and bootstraps from V there (1 = TD(0)); each seat keeps n open decisions and every env step takes the gradient
    of all n slots (n times TD(0)'s gradient work)"""
    target_tau: float = 1.0
    """the slow target critic's rate in [0, 1], above 0: the TD targets bootstrap from V(s') of target parameters
    that move this fraction of the way to the learned ones after each update (Polyak averaging; the runner saves
    them); 1 = no target network (V(s') of the update's own parameters)"""

    def __post_init__(self):
        super().__post_init__()
        if self.target_tau <= 0.0:
            self._fail("target_tau", f"must be above 0: a rate of 0 would never move the target, got {self.target_tau}")


@dataclasses.dataclass(frozen=True)
class BCConfig(_Group):
    """Behaviour cloning (algo="bc"; agents.algorithms.bc): of a bot on generated games, or of a recorded
    dataset."""

    NAME = "bc"
    RANGES = {
        "bc_teacher_prob": (0.0, 1.0),
        "bc_batch_size": (1, 1 << 20),
        "bc_val_fraction": (0.0, 0.9),
        "bc_patience": (0, 1 << 20),
    }
    CHOICES = {"bc_teacher": BC_TEACHERS}
    STRINGS = {"bc_dataset": 'a directory path string (or "")'}

    bc_teacher: str = "expert"
    """the bot whose actions the policy learns in the "self" seats: "random", "greedy", "expert" (reads the hidden
    pool) or "expert_public" (the expert's rules on public information only)"""
    bc_teacher_prob: float = 1.0
    """probability in [0, 1] that a "self" seat's step sends the teacher's action, else the policy's own sample; the
    label is the teacher's action either way: 1 = behaviour cloning on the teacher's games, below 1 = DAgger-style
    data, the teacher labelling the states the policy's own moves lead to"""
    bc_dataset: str = ""
    """a dataset directory written by python -m experiments.record to clone instead of generating games ("" = games
    generated inside the program, by bc_teacher); its observation kind, action count and rules must be the run's.
    Each update is then one optimizer step on bc_batch_size samples drawn uniformly (with replacement) from its
    training games, total_steps counts the samples drawn (env_steps in the logs), and every chunk ends with a
    validation on its held-out games (val/cross_entropy, val/accuracy, val/value_loss, and val/accuracy_<kind>,
    val/share_<kind> per kind of the teacher's action: end, buy, reroll, xp, lock, sell, place, recall); one
    device. A relative path is read from the working directory. Several directories separated by commas are cloned
    as one dataset, each recording's games kept apart (DAgger: the teacher's games, then labelled recordings of the
    clone's; agents.algorithms.bc.DatasetCloning)"""
    bc_batch_size: int = 256
    """samples per optimizer step of a bc_dataset run, in [1, 2^20]"""
    bc_val_fraction: float = 0.1
    """share of a bc_dataset's games (whole games, drawn with the seed) held out for validation, in [0, 0.9]; 0 = no
    validation"""
    bc_patience: int = 0
    """early stopping of a bc_dataset run: it ends (with a checkpoint and the final evaluation) after this many
    validations in a row, one a chunk, without a lower validation cross-entropy, in [0, 2^20]; 0 = never"""

    def __post_init__(self):
        super().__post_init__()
        if self.bc_dataset:
            dirs = self.dataset_dirs
            if not all(dirs) or len(set(dirs)) != len(dirs):
                self._fail(
                    "bc_dataset",
                    "must be one directory or distinct comma-separated directories, none empty; "
                    f"got {self.bc_dataset!r}",
                )
        if self.bc_patience and not self.validates:
            self._fail(
                "bc_patience",
                "(early stopping on the validation cross-entropy) needs a bc_dataset run "
                f"with bc_val_fraction > 0; got bc_dataset={self.bc_dataset!r}, "
                f"bc_val_fraction={self.bc_val_fraction}",
            )

    @property
    def dataset_dirs(self) -> tuple[str, ...]:
        """bc_dataset's directories, in order (none without a bc_dataset)."""
        return tuple(d.strip() for d in self.bc_dataset.split(",")) if self.bc_dataset else ()

    @property
    def validates(self) -> bool:
        """A bc_dataset run that holds games out for validation."""
        return bool(self.bc_dataset) and self.bc_val_fraction > 0


@dataclasses.dataclass(frozen=True)
class DistillConfig(_Group):
    """Distillation of a teacher and a KL anchor (PPO on the game; agents.algorithms.distill)."""

    NAME = "distill"
    RANGES = {
        "teacher_kl": (0.0, 100.0),
        "teacher_kl_updates": (0, 1 << 20),
        "teacher_temperature": (0.01, 100.0),
        "oracle_dropout_updates": (0, 1 << 20),
        "anchor_kl": (0.0, 100.0),
        "anchor_kl_updates": (0, 1 << 20),
    }
    STRINGS = {"teacher": _POLICY_NAME, "anchor": _POLICY_NAME}

    teacher: str = ""
    """a frozen policy the learner distils, RUN_DIR[:STEP] or baseline:NAME: each PPO minibatch loss adds
    teacher_kl(u) x KL(student || teacher) over the legal actions of its decisions, both policies at
    teacher_temperature. With a teacher the training env steps oracle observations and the learner (obs="vector")
    reads their public part only; a teacher of obs="oracle" sees all of it (the hidden information), a vector
    teacher the public part. Needs algo="ppo", obs="vector", network="mlp", no league, no independent learners.
    "" = none"""
    teacher_kl: float = 1.0
    """lambda_kl at update 0, in [0, 100]"""
    teacher_kl_updates: int = 0
    """lambda_kl decays linearly to 0 over this many updates, in [0, 2^20]: teacher_kl x max(1 - u / this, 0) at
    update u; 0 = constant"""
    teacher_temperature: float = 1.0
    """the fixed temperature T of both policies in the KL (logits / T), in [0.01, 100]"""
    oracle_dropout_updates: int = 0
    """feature dropout of an oracle teacher's hidden-information block: each of its features is kept with
    probability max(1 - u / this, 0) at update u (not rescaled; dropped = 0), so the teacher sees all of it at the
    start and none of it from this update on, in [0, 2^20]; 0 = never dropped"""
    anchor: str = ""
    """a frozen policy (RUN_DIR[:STEP] or baseline:NAME, obs="vector") the learner is held near: each PPO minibatch
    loss adds anchor_kl(u) x KL(student || anchor) at temperature 1 (e.g. the BC policy, or the previous phase's);
    in a league it also plays the league_anchor_share of the games; "" = none"""
    anchor_kl: float = 0.1
    """the anchor's KL coefficient at update 0, in [0, 100]; 0 (no KL term) only for an anchor that plays league
    games"""
    anchor_kl_updates: int = 0
    """it decays linearly to 0 over this many updates, in [0, 2^20]; 0 = constant"""

    def __post_init__(self):
        super().__post_init__()
        if self.oracle_dropout_updates and not (self.teacher or self.anchor):
            self._fail("oracle_dropout_updates", "fades an oracle teacher's inputs: set teacher")
        if self.teacher and self.teacher_kl <= 0:
            self._fail("teacher_kl", f"must be > 0 with a teacher, got {self.teacher_kl}")


@dataclasses.dataclass(frozen=True)
class LeagueConfig(_Group):
    """The self-play league of frozen snapshots (agents.league.pool); league_size=0: none."""

    NAME = "league"
    RANGES = {
        "league_size": (0, 1024),
        "league_learner_seats": (1, NUM_SEATS - 1),
        "league_pool_prob": (0.0, 1.0),
        "league_self_share": (0.0, 1.0),
        "league_anchor_share": (0.0, 1.0),
        "league_groups": (1, 1024),
        "snapshot_every": (1, 1 << 20),
    }
    CHOICES = {"league_bot": LEAGUE_BOTS, "league_sampling": LEAGUE_SAMPLING}

    league_size: int = 0
    """a self-play league of K pool slots of frozen snapshots, in [0, 1024]; 0 = no league (every seat is the
    learner); K > 0 needs algo="ppo" on the game with opponents="self". Its evaluations also rate the learner
    against the pool and the bots (eval/rating)"""
    league_learner_seats: int = 4
    """seats per game played by the learner (training data), in [1, 7]; the roles are drawn at every game start"""
    league_pool_prob: float = 0.75
    """probability in [0, 1] that each other seat is a pool snapshot, else the bot league_bot"""
    league_self_share: float = 0.0
    """the share of games, in [0, 1], in which all 8 seats are the learner's (pure self-play); the other games have
    league_learner_seats learner seats and the rest drawn as league_pool_prob says"""
    league_anchor_share: float = 0.0
    """the share of games, in [0, 1] (at most 1 - league_self_share), whose pool seats play the frozen anchor (the
    policy anchor names; its network must be this run's) instead of a snapshot; the design's mix is
    league_self_share=0.5, league_anchor_share=0.2, league_pool_prob=1 (50% self-play, 30% snapshots, 20% anchor)"""
    league_bot: str = "greedy"
    """the bot in the other seats that are not snapshots: "random", "greedy" or "expert\""""
    league_groups: int = 2
    """G in [1, 1024], must divide num_envs: every game plays one snapshot, drawn at its start; a step's pool
    forward pass runs on batches of num_envs / G envs that play the same snapshot, G + min(league_size, num_envs)
    - 1 batches (at most num_envs): a larger G wastes less on half-empty batches but gathers more parameters"""
    league_sampling: str = "uniform"
    """how snapshots are drawn: "uniform" over the filled slots or "pfsp" (by the learner's loss rate vs each)"""
    snapshot_every: int = 10
    """updates between snapshots, in [1, 2^20]"""

    def __post_init__(self):
        super().__post_init__()
        if not self.league_size and (self.league_self_share or self.league_anchor_share):
            self._fail("league_self_share", "and league_anchor_share mix a league's games: set league_size > 0")
        if self.league_self_share + self.league_anchor_share > 1.0:
            self._fail(
                "league_self_share",
                f"+ league_anchor_share must be at most 1, got {self.league_self_share} + {self.league_anchor_share}",
            )
        if self.league_anchor_share and not self.league_pool_prob:
            self._fail(
                "league_anchor_share",
                "needs league_pool_prob > 0: with league_pool_prob=0 no seat is a pool "
                "seat, so the anchor would play no game",
            )


@dataclasses.dataclass(frozen=True)
class LogConfig(_Group):
    """What a run writes between chunks: evaluations, checkpoints and W&B scalars."""

    NAME = "log"
    RANGES = {
        "eval_every": (0, 1 << 20),
        "eval_games": (1, 4096),
        "eval_ladder": (0, 4096),
        "checkpoint_every": (0, 1 << 20),
        "keep_checkpoints": (1, 1000),
    }
    CHOICES = {"best_by": BEST_BY}
    STRINGS = {"wandb_project": "a W&B project name"}

    eval_every: int = 1
    """evaluate vs the bots every this many chunks, in [0, 2^20] (0 = never; game only)"""
    eval_games: int = 8
    """game seeds per evaluation, in [1, 4096]; each is played 8 times, the learner rotated over the seats"""
    eval_ladder: int = 0
    """at each evaluation also rate the policy on the ladder (agents.arena.ladder) on this many game seeds, each
    played 8 times, in [0, 4096] (0 = never; else at least 2): eval/ladder_points and its 95% interval
    (eval/ladder_low, eval/ladder_high), a learning curve on the ladder's scale (expert = 1000). The same games at
    every evaluation (the ladder's seed, 9002); one shared game policy (not independent learners); on 2 CPU cores
    about 1.5 s a game seed after the first evaluation's compile"""
    checkpoint_every: int = 1
    """save a checkpoint every this many chunks, in [0, 2^20] (0 = only at the end)"""
    keep_checkpoints: int = 3
    """the last this many checkpoints are kept, in [1, 1000]"""
    best_by: str = "placement"
    """the checkpoint kept as best: "placement" (lowest eval/placement_vs_greedy), "rating" (highest
    eval/rating; needs a league, league_size > 0, that evaluates, eval_every > 0) or "validation" (lowest
    val/cross_entropy; needs a bc_dataset run with bc_val_fraction > 0)"""
    wandb_project: str = ""
    """also log the scalars to this Weights & Biases project (process 0 only, the names of tensorboard, plotted
    against env_steps; needs the wandb package, pip install "jaxgame[wandb]"; WANDB_MODE=offline needs no account;
    agents.run.wandb_log); "" = no W&B. At most 128 characters, none of / \\ # ? % :"""

    def __post_init__(self):
        super().__post_init__()
        if len(self.wandb_project) > 128 or any(c in self.wandb_project for c in WANDB_FORBIDDEN):
            self._fail(
                "wandb_project",
                f"must be a W&B project name: at most 128 characters, none of "
                f'{" ".join(WANDB_FORBIDDEN)} (or "" for no W&B), got {self.wandb_project!r}',
            )


# ---------------------------------------------------------------- the config


class _UnknownFields(ValueError):
    """A config name that is no field (``TrainConfig.from_fields`` answers it as a ``TypeError``)."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A training run. Defaults are a CPU-sized self-play PPO on the game.

    The fields are groups by concern; every field of a group is documented where it is declared, by the string
    literal after it (``TrainConfig.field_docs()`` returns them by dotted name, one line each). Ranges are inclusive.

    Build with groups (or dicts of their fields): ``TrainConfig(hparams=HParamsConfig(lr=1e-4))``; or, at a prompt,
    by the fields' short (``lr``) or dotted (``hparams.lr``) names: ``TrainConfig.from_fields(num_envs=8, lr=1e-4)``.
    Fields are read through their groups (``config.hparams.lr``); ``with_overrides`` and ``with_sets`` (``--set``'s
    text) replace them by short or dotted name. Each group checks its own fields when it is built;
    ``__post_init__`` checks the rules between groups. A bad value raises ``ValueError`` naming the field
    (``TrainConfig.hparams.lr``) and what it allows.

    Example::

        config = agents.TrainConfig.from_fields(num_envs=32, lr=1e-4)  # or TrainConfig(run=RunConfig(num_envs=32))
        config = config.with_sets({"hparams.lr": "3e-4", "hidden": "128,128"})  # parsed as --set parses them
        config.hparams.lr, config.to_dict()["hparams"]["lr"]  # 0.0003 both ways
    """

    run: RunConfig = RunConfig()
    """the algorithm, seed, size, devices and length of the run"""
    task: TaskConfig = TaskConfig()
    """what is played: the env, the observation and the seats' players"""
    game: RulesConfig = RulesConfig()
    """the game's rules"""
    net: NetConfig = NetConfig()
    """the network"""
    hparams: HParamsConfig = HParamsConfig()
    """the traced hyperparameters (a sweep varies them in one compile)"""
    optim: OptimConfig = OptimConfig()
    """the optimizer's learning-rate schedule and weight decay"""
    loss: LossConfig = LossConfig()
    """the actor-critic loss (PPO and A2C)"""
    ppo: PPOConfig = PPOConfig()
    """PPO's rollouts and update"""
    a2c: A2CConfig = A2CConfig()
    """streaming A2C"""
    bc: BCConfig = BCConfig()
    """behaviour cloning"""
    distill: DistillConfig = DistillConfig()
    """a teacher to distil and an anchor to stay near"""
    league: LeagueConfig = LeagueConfig()
    """the self-play league"""
    log: LogConfig = LogConfig()
    """evaluations, checkpoints and W&B"""

    @classmethod
    def from_fields(cls, **fields) -> TrainConfig:
        """The default config with ``fields`` replaced: groups, dicts of a group's fields, or fields by their short
        (``lr=1e-4``) or dotted (``**{"hparams.lr": 1e-4}``) names, which override the groups' fields. The form for
        a person at a prompt: ``TrainConfig.from_fields(num_envs=8, lr=1e-4)``. An unknown name is a ``TypeError``
        that suggests the closest ones."""
        try:
            return cls().with_overrides(fields)
        except _UnknownFields as err:
            raise TypeError(f"TrainConfig.from_fields() got {err}") from None

    # ---- the rules between groups (each group checks its own fields) ----
    def __post_init__(self):
        for name, kind in GROUPS.items():  # a group given as a dict of its fields is built here
            object.__setattr__(self, name, kind.coerce(getattr(self, name)))
        self._check_network_reads_obs()
        self._check_recurrent()
        self._check_references()
        self._check_league()
        self._check_independent()
        self._check_run_length()
        self._check_bc()
        self._check_best_by()
        self._check_eval_ladder()
        self._check_minibatches()

    def _check_network_reads_obs(self):
        if (self.task.obs == "pixels") != (self.net.network in PIXEL_NETWORKS):
            raise ValueError(
                f"TrainConfig.net.network must be {' or '.join(map(repr, PIXEL_NETWORKS))} for obs='pixels' and "
                f"'mlp', 'entity' or 'gru' for obs='vector', 'mlp' for 'oracle', got network={self.net.network!r} with "
                f"obs={self.task.obs!r}"
            )
        if self.net.view == "frame" and (self.task.obs != "vector" or self.is_gymnax):
            raise ValueError(
                f"TrainConfig.net.view='frame' cuts the game's vector observation: it needs "
                f"env='autochess' and obs='vector', got env={self.task.env!r}, obs={self.task.obs!r}"
            )
        if self.net.network in VECTOR_ONLY_NETWORKS and (self.task.obs != "vector" or self.is_gymnax):
            raise ValueError(
                f"TrainConfig.net.network={self.net.network!r} reads the game's vector observation: it "
                f"needs env='autochess' and obs='vector', got env={self.task.env!r}, obs={self.task.obs!r}"
            )

    def _check_recurrent(self):
        """A recurrent network (``network="gru"``, ``agents.core.recurrent``): PPO's own play on the vector
        observation, on one device, its minibatches whole (env, seat) sequences."""
        network = self.net.network
        if network not in RECURRENT_NETWORKS:
            return
        what = f"TrainConfig.net.network={network!r} (a recurrent network)"
        if self.task.obs != "vector" or self.net.view != "all":
            raise ValueError(
                f"{what} reads the whole vector observation: it needs obs='vector' and view='all', got "
                f"obs={self.task.obs!r}, view={self.net.view!r}"
            )
        if self.run.algo not in ("ppo", "a2c"):
            raise ValueError(
                f"TrainConfig.run.algo must be 'ppo' or 'a2c' with {what}: behaviour cloning is not "
                f"recurrent yet; got algo={self.run.algo!r}"
            )
        if self.run.algo == "a2c" and (self.a2c.n_step != 1 or self.a2c.target_tau != 1.0):
            raise ValueError(
                f"TrainConfig.a2c.n_step must be 1 and a2c.target_tau 1 with {what}: its A2C trains windows of "
                f"update_every steps with TD(0) targets (agents.algorithms.a2c_windows); got n_step="
                f"{self.a2c.n_step}, target_tau={self.a2c.target_tau}"
            )
        refused = {
            "net.independent": self.net.independent,
            "league.league_size": self.league.league_size,
            "distill.teacher": self.distill.teacher,
            "distill.anchor": self.distill.anchor,
        }
        for name, value in refused.items():
            if value:
                raise ValueError(
                    f"TrainConfig.{name} is not supported with {what} yet (independent learners, leagues, teachers "
                    f"and anchors play feed-forward policies); got {name.split('.')[1]}={value!r}"
                )
        if self.run.num_devices > 1 or self.ppo.shuffle != "global":
            raise ValueError(
                f"TrainConfig.run.num_devices must be 0 or 1 and ppo.shuffle 'global' with {what}: it trains on "
                f"one device for now; got num_devices={self.run.num_devices}, shuffle={self.ppo.shuffle!r}"
            )

    def _check_references(self):
        """A teacher or an anchor: a KL term in PPO's loss on the game's vector observation."""
        if not (self.distill.teacher or self.distill.anchor):
            return
        what = "teacher" if self.distill.teacher else "anchor"
        if self.run.algo != "ppo" or self.is_gymnax or self.task.obs != "vector" or self.net.independent:
            raise ValueError(
                f"TrainConfig.distill.{what} (a KL term in PPO's loss) needs algo='ppo' on the game with "
                f"obs='vector' and no independent learners; got algo={self.run.algo!r}, env={self.task.env!r}, "
                f"obs={self.task.obs!r}, independent={self.net.independent}"
            )
        if self.distill.teacher and self.league.league_size:
            raise ValueError(
                "TrainConfig.distill.teacher: a league run cannot distil a teacher (its pool plays on "
                "the public observation); use anchor to hold a league near a policy"
            )
        if self.distill.anchor and self.distill.anchor_kl <= 0 and not self.league.league_anchor_share:
            raise ValueError(
                f"TrainConfig.distill.anchor_kl must be > 0 with an anchor that plays no league games "
                f"(league_anchor_share=0), got {self.distill.anchor_kl}"
            )

    def _check_league(self):
        if self.league.league_anchor_share and not self.distill.anchor:
            raise ValueError(
                "TrainConfig.league.league_anchor_share: the anchor's games need a frozen policy: set anchor"
            )
        if not self.league.league_size:
            return
        if self.run.algo != "ppo" or self.is_gymnax or self.task.opponents != "self":
            raise ValueError(
                "TrainConfig.league.league_size > 0 (a league) needs algo='ppo' on the game with opponents='self' "
                f"(the league assigns the seats); got algo={self.run.algo!r}, env={self.task.env!r}, "
                f"opponents={self.task.opponents!r}"
            )
        if self.run.num_envs % self.league.league_groups:
            raise ValueError(
                f"TrainConfig.league.league_groups must divide num_envs={self.run.num_envs} (the pool's "
                f"forward pass runs on batches of num_envs / league_groups envs), "
                f"got {self.league.league_groups}"
            )

    def _check_independent(self):
        if self.net.independent and (
            self.run.algo != "ppo" or self.is_gymnax or self.task.opponents != "self" or self.league.league_size
        ):
            raise ValueError(
                "TrainConfig.net.independent (one learner per seat) needs algo='ppo' on the game with "
                f"opponents='self' and no league; got algo={self.run.algo!r}, env={self.task.env!r}, "
                f"opponents={self.task.opponents!r}, league_size={self.league.league_size}"
            )

    def _check_run_length(self):
        """At least one update, and a warmup shorter than the run."""
        if self.run.total_steps < self.steps_per_update:
            raise ValueError(
                f"TrainConfig.run.total_steps must be >= one update's env steps ({self.steps_per_update} = "
                f"{'bc_batch_size' if self.bc.bc_dataset else 'num_envs x '}"
                f"{'' if self.bc.bc_dataset else 'num_steps' if self.has_rollout else 'update_every'}), "
                f"got {self.run.total_steps}"
            )
        if self.run.stop_at_update > self.num_updates:
            raise ValueError(
                f"TrainConfig.run.stop_at_update must be in [0, {self.num_updates}] (the run's updates; "
                f"0 = all), got {self.run.stop_at_update}"
            )
        if self.optim.warmup_updates and self.optim.warmup_updates >= self.num_updates:
            raise ValueError(
                f"TrainConfig.optim.warmup_updates must be fewer than the run's {self.num_updates} "
                f"updates, got {self.optim.warmup_updates}"
            )

    def _check_bc(self):
        if self.run.algo == "bc" and self.is_gymnax:
            raise ValueError(f"TrainConfig.run.algo='bc' clones a bot of the game; env={self.task.env!r} has none")
        if self.bc.bc_dataset and self.run.algo != "bc":
            raise ValueError(
                f"TrainConfig.bc.bc_dataset is behaviour cloning's (algo='bc'); got algo={self.run.algo!r}"
            )
        if self.bc.bc_dataset and self.run.num_devices > 1:
            raise ValueError(
                f"TrainConfig.bc.bc_dataset runs train on one device: num_devices must be 0 or 1, got "
                f"{self.run.num_devices}"
            )

    def _check_best_by(self):
        if self.log.best_by == "validation" and not self.bc.validates:
            raise ValueError(
                "TrainConfig.log.best_by='validation' needs a bc_dataset run with bc_val_fraction > 0; "
                f"got bc_dataset={self.bc.bc_dataset!r}, bc_val_fraction={self.bc.bc_val_fraction}"
            )
        if self.log.best_by == "rating" and not (self.league.league_size and self.log.eval_every):
            raise ValueError(
                "TrainConfig.log.best_by='rating' needs a league (league_size > 0) that evaluates "
                f"(eval_every > 0); got league_size={self.league.league_size}, eval_every={self.log.eval_every}"
            )

    def _check_eval_ladder(self):
        if not self.log.eval_ladder:
            return
        if self.log.eval_ladder < 2:
            raise ValueError(
                f"TrainConfig.log.eval_ladder must be 0 or at least 2 (an interval needs a spread), got "
                f"{self.log.eval_ladder}"
            )
        if self.is_gymnax or self.net.independent or not self.log.eval_every:
            raise ValueError(
                "TrainConfig.log.eval_ladder rates one shared game policy at each evaluation: it needs "
                f"the game, independent=False and eval_every > 0; got env={self.task.env!r}, "
                f"independent={self.net.independent}, eval_every={self.log.eval_every}"
            )

    def _check_minibatches(self):
        if self.ppo.shuffle != "global" and self.run.algo != "ppo":
            raise ValueError(
                f"TrainConfig.ppo.shuffle={self.ppo.shuffle!r} is PPO's (algo='ppo'); algo={self.run.algo!r} "
                "needs shuffle='global', the default"
            )
        if (
            self.net.network in RECURRENT_NETWORKS
            and self.has_rollout
            and self.ppo_sequences % self.ppo.num_minibatches
        ):
            raise ValueError(
                f"TrainConfig.ppo.num_minibatches must divide the (env, seat) sequences of a recurrent network's "
                f"update (its minibatches are whole sequences), num_envs x learner seats = {self.ppo_sequences}, "
                f"got {self.ppo.num_minibatches}"
            )
        batch = self.ppo_batch
        if self.has_rollout and batch % self.ppo.num_minibatches:
            what = (
                "num_envs x num_steps (one learner's samples)"
                if self.net.independent
                else "num_envs x num_steps x learner seats"
            )
            raise ValueError(
                f"TrainConfig.ppo.num_minibatches must divide the rollout batch {what} = {batch}, "
                f"got {self.ppo.num_minibatches}"
            )

    # ---- derived values ----
    @property
    def env_obs(self) -> str:
        """The observation the training env steps: "oracle" for a run with a teacher (the learner reads its public
        part; agents.algorithms.distill), else ``obs``."""
        return "oracle" if self.distill.teacher else self.task.obs

    @property
    def is_gymnax(self) -> bool:
        return self.task.is_gymnax

    @property
    def a2c_windows(self) -> bool:
        """A2C with a recurrent network: windows of update_every steps (``agents.algorithms.a2c_windows``)."""
        return self.run.algo == "a2c" and self.net.network in RECURRENT_NETWORKS

    @property
    def has_rollout(self) -> bool:
        """PPO's rollouts and minibatches: "ppo" and "bc" on generated games (not a bc_dataset run)."""
        return self.run.algo in ("ppo", "bc") and not self.bc.bc_dataset

    @property
    def num_seats(self) -> int:
        """Seats per env: 8 for the game, 1 for a gymnax env."""
        return 1 if self.is_gymnax else NUM_SEATS

    @property
    def trained_seats(self) -> int:
        """Seats per env whose samples a PPO update trains on: the "self" seats (with bot opponents the bots'
        seats carry no training data and are left out of the update; self-play and a league, which needs
        opponents="self", train on every seat)."""
        return sum(kind == "self" for kind in self.seat_kinds)

    @property
    def ppo_batch(self) -> int:
        """Samples a PPO update minibatches, all devices together: num_envs x num_steps x trained_seats (one
        learner's num_envs x num_steps with independent=True)."""
        return self.run.num_envs * self.ppo.num_steps * (1 if self.net.independent else self.trained_seats)

    @property
    def ppo_sequences(self) -> int:
        """The (env, seat) sequences a recurrent network's PPO update minibatches: num_envs x trained_seats."""
        return self.run.num_envs * self.trained_seats

    @property
    def seat_kinds(self) -> tuple:
        """The 8 seats' players, e.g. ("self", "greedy", ...); ("self",) for a gymnax env."""
        return self.task.seat_kinds

    @property
    def steps_per_update(self) -> int:
        """Env steps (all envs together) consumed by one update; a bc_dataset run's samples drawn."""
        if self.bc.bc_dataset:
            return self.bc.bc_batch_size
        return self.run.num_envs * (self.ppo.num_steps if self.has_rollout else self.a2c.update_every)

    @property
    def last_update(self) -> int:
        """The update the run ends at: stop_at_update, or num_updates when it is 0."""
        return self.run.stop_at_update or self.num_updates

    @property
    def num_updates(self) -> int:
        return self.run.total_steps // self.steps_per_update

    @property
    def num_chunks(self) -> int:
        return -(-self.num_updates // self.run.updates_per_chunk)

    def rules(self) -> dict:
        """The ``GameConfig`` overrides of this run."""
        return {n: getattr(self.game, n) for n in RULE_FIELDS}

    # ---- the fields by name ----
    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """``{"group.field": its doc}`` in declaration order: the string literal after each field, as one line."""
        return {f"{group}.{name}": doc for group, kind in GROUPS.items() for name, doc in _field_docs(kind)}

    @classmethod
    def field_types(cls) -> dict:
        """short name -> the field's type (``bool``, ``int``, ``float``, ``str`` or ``tuple``)."""
        return dict(_field_types())

    @staticmethod
    def field_path(name: str) -> str:
        """The dotted name (``"hparams.lr"``) of a field named short (``"lr"``) or dotted; a ``ValueError`` suggests
        the closest names for an unknown one."""
        path = _field_path(name)
        if path is None:
            raise ValueError(_unknown_message([name]))
        return ".".join(path)

    def get(self, name: str):
        """A field's value by its short (``"teacher"``) or dotted (``"distill.teacher"``) name: for code that holds a
        field's name as data; a ``ValueError`` suggests the closest names for an unknown one."""
        group, field = self.field_path(name).split(".")
        return getattr(getattr(self, group), field)

    def with_overrides(self, overrides: Mapping) -> TrainConfig:
        """A copy with the fields of ``overrides`` (short or dotted name -> a value of the field's type, or a group
        name -> a group or a dict of its fields) replaced and validated; a field named by its short or dotted name
        overrides its group given beside it; an unknown name is a ``ValueError`` that suggests the closest ones.
        ``with_sets`` parses the values from text first."""
        unknown = [k for k in overrides if k not in GROUPS and _field_path(k) is None]
        if unknown:
            raise _UnknownFields(_unknown_message(unknown))
        groups = {name: getattr(self, name) for name in GROUPS}
        changes: dict[str, dict] = {}
        for key, value in overrides.items():
            if key in GROUPS:
                groups[key] = GROUPS[key].coerce(value)
                continue
            group, name = _field_path(key)
            if name in changes.setdefault(group, {}):
                raise ValueError(f"TrainConfig.{group}.{name} is set twice, by its short and its dotted name")
            changes[group][name] = value
        for group, fields in changes.items():
            groups[group] = dataclasses.replace(groups[group], **fields)
        return dataclasses.replace(self, **groups)

    def with_sets(self, sets: Mapping[str, str]) -> TrainConfig:
        """A copy with ``{name: text}`` (``--set NAME=VALUE``'s form: ``{"lr": "3e-4", "hparams.clip_eps": "0.1"}``)
        parsed by each field's type (``parse_sets``) and applied; a ``ValueError`` names the field (an unknown name
        with the closest ones, unparsable text, or a value out of its range)."""
        return self.with_overrides(parse_sets(sets))

    # ---- (de)serialisation ----
    def to_dict(self) -> dict:
        """``{group: {field: value}}`` (JSON's form: tuples as lists); ``from_dict`` reads it back."""
        return {f.name: getattr(self, f.name).to_dict() for f in dataclasses.fields(self)}

    def to_flat_dict(self, dotted: bool = False) -> dict:
        """``{short name: value}`` (or ``{"group.field": value}`` with ``dotted``) in declaration order, tuples as
        lists: the form ``to_dict`` wrote before the groups (a run directory's identity is hashed from it)."""
        return {
            (f"{group}.{name}" if dotted else name): value
            for group, fields in self.to_dict().items()
            for name, value in fields.items()
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> TrainConfig:
        """The config of ``to_dict``'s nested form, or of the flat ``{short name: value}`` form every config written
        before the groups has (both may mix; missing fields take their defaults), ``anneal_lr`` / ``cosine_lr`` read
        as the ``lr_schedule`` they meant, the hyperparameters read from the groups that held them before ``hparams``
        (``HPARAMS_MOVED_FROM``); an unknown name is a ``ValueError`` that suggests the closest ones."""
        data = legacy_lr_flags(data, "TrainConfig.from_dict")
        for group, names in HPARAMS_MOVED_FROM.items():
            old = data.get(group)
            if isinstance(old, Mapping) and any(n in old for n in names):
                data[group] = {k: v for k, v in old.items() if k not in names}
                data["hparams"] = {**{n: old[n] for n in names if n in old}, **data.get("hparams", {})}
        unknown = [k for k in data if k not in GROUPS and _field_path(k) is None]
        if unknown:
            raise ValueError(f"TrainConfig.from_dict: {_unknown_message(unknown)}")
        types = cls.field_types()
        fields = {}
        for key, value in data.items():
            if key in GROUPS:
                fields[key] = GROUPS[key].from_dict(value)
            else:
                kind = types[_field_path(key)[1]]
                fields[key] = tuple(value) if kind is tuple and isinstance(value, list) else value
        return cls().with_overrides(fields)


#: group name -> its class, in TrainConfig's order
GROUPS: dict[str, type] = {f.name: type(f.default) for f in dataclasses.fields(TrainConfig)}
#: short name -> its group's name
FIELD_GROUPS: dict[str, str] = {f.name: group for group, kind in GROUPS.items() for f in dataclasses.fields(kind)}


@functools.cache
def _field_types() -> dict:
    """short name -> type of every field, once."""
    return {f.name: typing.get_type_hints(kind)[f.name] for kind in GROUPS.values() for f in dataclasses.fields(kind)}


def _field_path(key: str) -> tuple[str, str] | None:
    """(group, field) of a short (``"lr"``) or dotted (``"hparams.lr"``) field name; None for an unknown one."""
    return config_names.field_path(key, FIELD_GROUPS)


def _did_you_mean(key: str, names) -> str:
    close = difflib.get_close_matches(key.lower(), list(names), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _unknown_message(keys) -> str:
    """``agents.config_names.unknown_message`` over this config's fields."""
    return config_names.unknown_message(keys, FIELD_GROUPS, list(GROUPS))


def legacy_lr_flags(data: Mapping, owner: str) -> dict:
    """``data`` (a group's fields, or a flat config) with the ``anneal_lr`` / ``cosine_lr`` booleans of a config
    written before ``lr_schedule`` replaced by the schedule they meant; a ``ValueError`` (naming ``owner``) when
    they contradict each other or an ``lr_schedule`` beside them."""
    data = dict(data)
    meant = [LEGACY_LR_FLAGS[k] for k in LEGACY_LR_FLAGS if data.pop(k, False) is True]
    if len(meant) > 1:
        raise ValueError(f"{owner}: anneal_lr and cosine_lr are both true (two decays of the learning rate)")
    if meant:
        if data.setdefault("lr_schedule", meant[0]) != meant[0]:
            raise ValueError(f"{owner}: lr_schedule={data['lr_schedule']!r} beside the older flag for {meant[0]!r}")
    return data


def flat_dict(data: Mapping) -> dict:
    """A saved config dict, nested (``to_dict``) or flat (written before the groups), as ``{short name: value}``,
    not validated: for readers of JSON (metrics.jsonl's meta line, a config.json) that want a field or two."""
    return {
        name: value
        for key, item in data.items()
        for name, value in (item.items() if key in GROUPS and isinstance(item, Mapping) else [(key, item)])
    }


# ---------------------------------------------------------------- NAME=VALUE text


def parse_value(name: str, kind: type, text: str, owner: str = "TrainConfig"):
    """One ``NAME=VALUE`` text parsed as ``kind`` (``bool``: true/false/1/0/yes/no; ``int``: also 1e6; ``float``;
    ``tuple``: comma- or x-separated ints, "64,64" or "64x64"; anything else stays text); a ``ValueError`` names
    ``<owner>.<name>`` (the CLIs parse game rules with ``owner="GameConfig"`` too)."""
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
        raise ValueError(f"{owner}.{name} must be {kind_name.get(kind, kind)}, got {text!r}") from None


def parse_sets(sets: Mapping[str, str]) -> dict:
    """``{name: text}`` (short or dotted names) -> ``{name: value}`` parsed by each field's type (``parse_value``);
    an unknown name is a ``ValueError`` that suggests the closest ones."""
    unknown = [k for k in sets if _field_path(k) is None]
    if unknown:
        raise ValueError(_unknown_message(unknown))
    types = TrainConfig.field_types()
    out = {}
    for key, text in sets.items():
        group, name = _field_path(key)
        out[key] = parse_value(f"{group}.{name}", types[name], text)
    return out


@functools.cache
def _field_docs(cls) -> tuple:
    """((name, doc), ...) of ``cls``'s fields: each annotated assignment followed by a string expression, read
    from the class's source with ``ast``; a doc's lines are joined into one line."""
    (tree,) = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
    docs = []
    for stmt, after in zip(tree.body, tree.body[1:]):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs.append((stmt.target.id, " ".join(after.value.value.split())))
    return tuple(docs)
