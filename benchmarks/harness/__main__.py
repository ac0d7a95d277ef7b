"""Throughput benchmarks; prints one JSON object (the last line of stdout).

    python -m benchmarks.harness --what env
    python -m benchmarks.harness --what env --full
    python -m benchmarks.harness --what env --num-envs 1,64 --rounds 1
    python -m benchmarks.harness --what combat --baseline 14c8e52
    python -m benchmarks.harness --what render
    python -m benchmarks.harness --what train
    python -m benchmarks.harness --what train --presets smoke --updates 2 --gymnax-steps 20000
    python -m benchmarks.harness --what sweep --presets smoke --runs 4
    python -m benchmarks.harness --what train --presets ppo_small --updates 4 --set update_epochs=2
    python -m benchmarks.harness --what learning --presets ppo_small --set hidden=128,128
    python -m benchmarks.harness --what sb3 --budget-s 300
    python -m benchmarks.harness --what memory --presets ppo_large,a2c_stream --devices 1,4,8
    python -m benchmarks.harness --what replay
    python -m benchmarks.harness --what replay \\
        --players baseline:ppo_small-v1,expert,expert,expert,expert,expert,expert,expert

The default sweep of ``--what env`` depends on the backend. On a GPU/TPU it is
the full sweep: 1, 64, 1024 and 4096 envs, 1024 fights, fight-skip at 256 envs.
On a CPU it is a quick one: 1 and 64 envs, 256 fights, fight-skip at 64 envs,
about 2 minutes on a 2-core CPU, most of it XLA compiling; ``--full`` runs the
full sweep anyway (about 10 minutes on a 2-core CPU). ``--what render`` uses
the same sizes everywhere (1, 64 and 256 states; 16 envs), about 1 minute on a
2-core CPU. ``--num-envs``, ``--render-batch``, ``--fights`` and
``--skip-envs`` override single sizes. Progress goes to stderr as it happens,
one line per configuration (its size, compile time and result); ``--quiet``
silences it.

``--what env`` reports:
  * ``seat_steps_per_s[num_envs]``: VecEnv steps x 8 seats per second with
    random bots, measured over whole rounds (so fight steps are included in
    their real proportion), after compilation;
  * ``combat``: fights per second of the combat simulation alone, vmapped
    over random boards;
  * ``fight_skip``: on mid-game boards (round 6, after 5 rounds of greedy
    play), the cost of one VecEnv step that is not a fight step vs one that
    is, of a non-fight step under plain ``jax.vmap(env.step)`` (the env's vmap
    rule runs the same batch-level step), and of the per-game step vmapped
    without that rule (its ``lax.cond`` turns into a select and the combat runs
    on every step) — the proof that the combat is skipped when it is not due.

``--what combat`` reports the combat alone and the env around it, optionally
next to a baseline revision (``--baseline REV``: ``jaxgame/combat.py`` and
``jaxgame/rounds.py`` as of that git revision, loaded from ``git show``; each
baseline measurement runs right after the current one, so both see the same
machine load):
  * ``combat[n]``: fights/s of ``n`` random fights (``--combat-batch``, default
    64 and 1024, multiples of 8) with 3 and 9 units a side, each side as its
    own game runs its fights (its ``rounds.run_fights`` on the plans of n/8
    games): ``current``, ``baseline`` and ``speedup``;
  * ``seat_steps_per_s``: VecEnv seat-steps/s as ``--what env`` measures them
    (``--num-envs``, default 64; ``--rounds`` rounds from the start of the
    game, default 1: the first 3 rounds are PvE), current, baseline and speedup;
    with a baseline both rollouts are compiled first and timed in turn, the
    best of 5 calls each.
About 3 minutes on a 2-core CPU with a baseline, most of it compiling.

``--what render`` reports:
  * ``render[n]``: frames/s of ``render.render_all`` vmapped over ``n`` game
    states (8 frames each; ``--render-batch``), packed uint8[72, 20] as the env
    returns them vs unpacked (the same frames then ``packing.unpack``-ed to
    uint8[72, 80], i.e. the cost of materialising them), for states with
    random boards, benches and opponents;
  * ``env_seat_steps_per_s``: VecEnv seat-steps/s with obs="vector" vs
    obs="pixels" (``--num-envs``, default 16 here; whole rounds, random bots),
    and ``observe_ms``: one vmapped ``env.observe`` of the largest batch per
    obs kind (the observation's own cost, free of the step's noise).

``--what train`` reports, per preset shape (``--presets``: game presets, or
``none``; default ``smoke`` and ``ppo_small`` on a CPU, plus ``ppo_large`` on
a GPU/TPU or with ``--full``), under ``train[preset]``:
  * ``train_seat_steps_per_s``: end-to-end training throughput, env steps x 8
    seats per second of the preset's trainer (``make_train(config,
    make_env(config)).run``: policy forward and sampling, env steps, GAE, the
    PPO epochs), the best of 2 jitted chunks of ``updates`` updates after a
    warm-up chunk (``jax.block_until_ready``); ``compile_s`` is the chunk's
    compile time, ``init_s`` the jitted ``init`` (compile included),
    ``update_ms`` one update;
  * ``env_seat_steps_per_s``: the env alone at the same ``num_envs``: VecEnv
    with the preset's rules and obs kind, random bots, as ``--what env``
    measures it, over whole rounds (``env_steps_timed``: the smallest multiple
    of ``steps_per_round`` that covers a chunk's steps; ``env_compile_s``);
  * ``overhead_ratio``: train / env-only. The goal (``overhead_goal``) is
    >= 0.8 on a CPU: learning should cost at most a fifth on top of stepping
    the game. On an accelerator it is for information.
  For PPO also ``rollout_ms`` (one update's rollout alone: env steps, policy
  forward and sampling) and ``rollout_share`` of ``update_ms`` (the rest is
  GAE and the epochs).
  ``updates`` per chunk is ``--updates``, by default enough for 64 steps of
  every env on a CPU (4 updates of smoke, 2 of ppo_small) and 128 with
  ``--full`` or on an accelerator (4 of ppo_large).
  With ``--presets ...,ppo_small,league_small`` it adds ``league_over_self_play``:
  the league's training seat-steps/s over plain self-play's at the same shape
  (the cost of the pool seats' forward passes; the goal is >= 0.7).
It also reports ``gymnax``: our ``ppo_gymnax`` preset vs the PureJaxRL
reference (``benchmarks/harness/purejaxrl_reference.py``) on each
``--gymnax-envs`` env (default CartPole-v1, Acrobot-v1, MountainCar-v0: gymnax's
discrete-action classic control), for ``--gymnax-steps`` env steps each (default
500,000, PureJaxRL's, on every backend; 0 skips it): the whole run as one jitted
call on both sides and a run of our training CLI's loop, the three in turn
``--gymnax-reps`` times (default 3, the best of each); per env ``compile_s``, ``run_s``,
``sps`` (env steps/s after compilation) and ``final_return`` per side,
``ours_over_purejaxrl_sps``, ``cli_over_purejaxrl_sps`` (the whole chunk loop with
its logs and checkpoints), ``cli_chunks_over_purejaxrl_sps`` (its chunks alone), and
``min_ratio`` over the first two (the goal: >= 1.0).
Compile times are honest: the benchmark does not turn JAX's persistent
compilation cache on (``compilation_cache`` says whether the environment did).
The CPU default takes about 6 minutes on a 2-core CPU: XLA compiling the game
(the trainer and the env-only rollout of each preset), then the gymnax section
(about a minute per env: two compiles, 3 + 3 whole runs and a CLI run);
``--presets none`` times only the gymnax section.

``--what sweep`` reports, per preset shape (``--presets``, default ``smoke``
and ``ppo_small``; benchmarks/harness/sweep.py): the best time of a jitted
chunk of ``--updates`` updates (default as for ``--what train``) for one run,
under ``sweep_vs_separate[preset]``, for a vmapped sweep of ``--runs`` runs
(default 4 on a CPU, 16 on an accelerator or with ``--full``), and for the
same sweep without the shared branch predicates (the combat then runs on every step);
``ratio`` = sweep / (runs x single run), <= 1 when the sweep costs no more
than the runs one after another, and ``naive_ratio`` likewise.

``--what learning`` (benchmarks/harness/learning.py) trains a preset (``--presets``, one, default
``ppo_small``; ``--seed``; ``--total-steps`` to cap it) into ``--out`` with its evaluation every chunk on
128 seat-rotated games per bot (``--eval-every N``: every N chunks), and reports the training minutes
(compiling and evaluating apart) and env steps until its policy first places <= ``--target`` (default 2.5)
against 7 greedy bots, with the curve.
The goal on the 2-core CPU is <= 6 minutes for ``ppo_small``. A whole preset: up to its 30 minutes plus
the evaluations. ``config`` in the JSON is the config trained.

``--set KEY=VALUE`` (repeatable; ``--what train`` and ``learning``) overrides a config field of every preset
timed or trained, as ``experiments.train --set`` does (e.g. ``--set update_epochs=2 --set hidden=128,128``:
how much faster an update gets, and whether the policy gets strong sooner); ``overrides`` in the JSON.

``--what sb3`` (benchmarks/harness/sb3.py; needs ``pip install -e ".[sb3]"``) trains, against 7 of each
``--opponents`` bot and for ``--budget-s`` seconds of training each (startup apart: ``startup_s``), three sides:
sb3-contrib's ``MaskablePPO`` (default hyperparameters, ``device="cpu"``) as SB3's users run it, on a
``SubprocVecEnv`` of ``--sb3-envs`` Gymnasium envs (``make_vec_env``; default: the logical cores, as SB3's docs
advise); the same ``MaskablePPO`` on our batched SB3 ``VecEnv`` (``make_sb3_vec_env``, ``--sb3-games`` games,
default 16); and our fused PPO at ``ppo_small``'s shapes. Then it evaluates each final policy on
``--eval-games`` seeds x 8 seat rotations (``placement_summary``): per opponent each side's env-alone and training
env steps/s, ``train_speedup``/``env_speedup`` (ours over each SB3 side, SB3 batched over SB3 subproc; the goal
is ours >= 100x) and ``placement_better``. ``--torch-threads N`` sets torch's threads (default: torch's own);
``method`` in the JSON records the settings. Three trainings of ``--budget-s`` per opponent plus startups (about
2-3 minutes per opponent on a 2-core CPU) and evaluations: about 40 minutes at the default; ``--opponents random
--budget-s 150`` about 12 to 15.

``--what memory`` (benchmarks/harness/memory.py) compiles one training update of each ``--presets`` preset
(default ``ppo_large,a2c_stream``) at its full shapes on each ``--devices`` count (default 1,4,8; on a CPU forced
host devices, one child process per count) and reports per device, from XLA's buffer assignment, the arguments,
outputs, temporaries and peak (their sum) in GiB and the largest all-gather, for PPO with ``shuffle`` "global"
and "local" (on one device they are the same program); nothing is run. About 5 minutes on a 2-core CPU at the
default, all of it compiling.

``--what replay`` (benchmarks/harness/replay.py) records one whole game of ``--players`` (one player for all 8
seats or 8 comma-separated, seat 0 first; default ``baseline:ppo_small-v1`` in all 8 seats: 8 policies) at
``--seed`` (default 0) with ``agents.replays.record`` as ``record_game`` does, once (compiling) and then
``--repeats`` more times (default 3), and reports per call the seconds of each part: ``play_s`` (``play_game``: the
game, one compiled program per lineup's participants), ``fights_s`` (``fights_of_game``: the fights tick by tick),
``to_record_s`` (``to_record``: the JSON-ready record), ``write_s`` (``format.write``) and ``total_s``, under
``first`` and ``again`` (``best`` and ``median`` of the repeats), with the XLA compilations during each part
(``compiles``, ``compile_s``) and ``compiled_again`` (did a repeat compile anything); the game's ``steps``,
``fight_steps``, ``fights``, ``placements``, ``steps_per_s`` (``first``, ``best``, ``median``), ``record_bytes``
and ``same_game``. ``--set RULE=VALUE`` sets game rules of a game of bots (policies play the rules they trained
with). ``compilation_cache`` as for ``--what train``. About 40 seconds on a 2-core CPU for 8 policies: the first
call about 30 s (compiling the game ~17 s and the fights' recorder ~6 s), each later call about a second.

The benchmarks live in benchmarks/harness/: ``env.py``, ``combat.py``, ``render.py``, ``train.py``,
``sweep.py``, ``learning.py``, ``sb3.py``, ``memory.py`` and ``replay.py`` (one per ``--what``), the shared
timing helpers and default sizes in ``timing.py``; this module is the CLI (``parse_args``, then one function per
``--what``: ``MODES``).

All modes also report ``sweep``: "quick" or "full", the default sizes used.
"""

from __future__ import annotations

import json
import os
import platform
import time

import jax

import jaxgame
from agents.presets import PRESETS, preset_config
from benchmarks.harness.combat import bench_combat, bench_combat_vs_baseline
from benchmarks.harness.env import bench_env_throughput, bench_fight_skip
from benchmarks.harness.learning import TARGET, bench_learning
from benchmarks.harness.memory import bench_memory
from benchmarks.harness.render import bench_obs_kinds, bench_render
from benchmarks.harness.replay import DEFAULT_PLAYERS, DEFAULT_REPEATS, bench_replay
from benchmarks.harness.sb3 import DEFAULT_OPPONENTS as SB3_OPPONENTS
from benchmarks.harness.sb3 import DEFAULT_SB3_GAMES, bench_sb3, default_sb3_envs
from benchmarks.harness.sb3 import check_available as check_sb3
from benchmarks.harness.sweep import bench_sweep
from benchmarks.harness.timing import default_sweep
from benchmarks.harness.train import GYMNAX_ENVS, GYMNAX_STEPS, OVERHEAD_GOAL, bench_gymnax, bench_train, train_updates
from experiments.common import (
    add_quiet,
    apply_sets,
    fail,
    make_parser,
    parse_overrides,
    parse_rules,
    player_list,
    status,
)
from jaxgame import constants as C


def _train_presets(text, parser):
    """``--presets``: comma-separated game presets, or "none"."""
    names = [] if text.strip().lower() == "none" else [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in PRESETS:
            fail(parser, f"--presets: unknown preset {name!r}; available: {', '.join(PRESETS)} (or none)")
        if PRESETS[name].config.is_gymnax:
            fail(parser, f"--presets: {name!r} is a gymnax preset; the gymnax section times it (--gymnax-steps)")
    return names


def _ints(text):
    return [int(x) for x in text.split(",")]


def _add_size_args(parser) -> None:
    """The sizes of ``--what env``, ``combat``, ``render``, ``train`` and ``sweep``."""
    parser.add_argument(
        "--full",
        action="store_true",
        help="the full sweep even on a CPU (the default on a GPU; ~10 min for --what env on a 2-core CPU)",
    )
    parser.add_argument(
        "--num-envs",
        default=None,
        help="comma-separated batch sizes (default: env 1,64 on CPU, 1,64,1024,4096 with --full or on GPU; render 16)",
    )
    parser.add_argument(
        "--render-batch", default=None, help="render: comma-separated numbers of game states (default 1,64,256)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds timed per batch size (default 1)")
    parser.add_argument(
        "--fights",
        type=int,
        default=None,
        help="fights in the combat benchmark (default: 256 on CPU, 1024 with --full or on GPU)",
    )
    parser.add_argument(
        "--skip-envs",
        type=int,
        default=None,
        help="batch size of the fight-skip benchmark (default: 64 on CPU, 256 with --full or on GPU)",
    )
    parser.add_argument(
        "--presets",
        default=None,
        help="train: comma-separated game presets, or none (default: smoke,ppo_small on CPU, "
        "plus ppo_large with --full or on GPU)",
    )
    parser.add_argument(
        "--updates",
        type=int,
        default=None,
        help="train: updates per timed chunk (default: 64 steps of every env on CPU, 128 with --full "
        "or on GPU, e.g. 2 PPO updates of ppo_small on CPU)",
    )
    parser.add_argument(
        "--gymnax-steps",
        type=int,
        default=GYMNAX_STEPS,
        help=f"train: env steps per gymnax env of the gymnax section, ours and PureJaxRL's (default "
        f"{GYMNAX_STEPS:,}, PureJaxRL's; 0 skips it)",
    )
    parser.add_argument(
        "--gymnax-envs",
        default=",".join(GYMNAX_ENVS),
        help=f"train: comma-separated gymnax envs of the gymnax section (default {','.join(GYMNAX_ENVS)})",
    )
    parser.add_argument(
        "--gymnax-reps",
        type=int,
        default=3,
        help="train: runs of each side per gymnax env, in turn, the best one timed (default 3)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="sweep: runs in the vmapped sweep (default 4 on CPU, 16 with --full or on GPU)",
    )
    parser.add_argument(
        "--combat-batch",
        default="64,1024",
        help="combat: comma-separated numbers of fights timed together (default 64,1024)",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="combat: a git revision whose jaxgame/combat.py and rounds.py are timed too, back to back",
    )


def _add_run_args(parser) -> None:
    """The options of ``--what learning``, ``sb3``, ``memory`` and ``replay`` (and ``--set``)."""
    parser.add_argument(
        "--out", default=None, metavar="RUN_DIR", help="learning: the run directory (default runs/learning-<time>)"
    )
    parser.add_argument(
        "--target",
        type=float,
        default=TARGET,
        help=f"learning: the placement vs 7 greedy bots to reach (default {TARGET})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="learning: the training seed; replay: the game seed, as evaluate's --seed (default 0)",
    )
    parser.add_argument("--total-steps", type=int, default=None, help="learning: cap the preset's env steps")
    parser.add_argument("--eval-every", type=int, default=1, help="learning: evaluate every N chunks (default 1)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="train, learning: override a config field of every preset timed or trained "
        "(repeatable), as in experiments.train; replay: a game rule of a game of bots",
    )
    parser.add_argument(
        "--budget-s", type=float, default=300.0, help="sb3: training seconds per side and opponent (default 300)"
    )
    parser.add_argument(
        "--opponents",
        default=",".join(SB3_OPPONENTS),
        help="sb3: comma-separated bots, 7 of each at every table in turn (default random,greedy)",
    )
    parser.add_argument(
        "--eval-games",
        type=int,
        default=16,
        metavar="N",
        help="sb3: evaluation game seeds per side and opponent, each played in 8 seat rotations "
        "(N x 8 games; default 16: 128 games)",
    )
    parser.add_argument(
        "--sb3-envs",
        type=int,
        default=None,
        metavar="N",
        help="sb3: SubprocVecEnv workers (default: the logical cores, as SB3's docs advise)",
    )
    parser.add_argument(
        "--sb3-games",
        type=int,
        default=DEFAULT_SB3_GAMES,
        metavar="N",
        help=f"sb3: games of the batched SB3 VecEnv (default {DEFAULT_SB3_GAMES})",
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=0,
        metavar="N",
        help="sb3: torch.set_num_threads(N) (default 0: torch's own default, left as is)",
    )
    parser.add_argument(
        "--devices",
        default="1,4,8",
        help="memory: comma-separated device counts (default 1,4,8; forced host devices on a CPU)",
    )
    parser.add_argument(
        "--players",
        default=DEFAULT_PLAYERS,
        metavar="PLAYER[,PLAYER x7]",
        help=f"replay: one player for all 8 seats or 8 comma-separated, seat 0 first (default {DEFAULT_PLAYERS})",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        help=f"replay: the same game recorded again after the first call, best and median (default {DEFAULT_REPEATS})",
    )


def parse_args(argv=None):
    """``(parser, args, sets)``: the parsed command line and its ``--set`` overrides (field -> text)."""
    parser = make_parser("benchmarks.harness", __doc__)
    parser.add_argument("--what", choices=list(MODES), default="env")
    _add_size_args(parser)
    _add_run_args(parser)
    add_quiet(parser)
    args = parser.parse_args(argv)
    sets = parse_overrides(parser, args.set)
    if sets and args.what not in ("train", "learning", "replay"):
        fail(
            parser,
            f"--set applies to --what train and --what learning (game rules: --what replay), not --what {args.what}",
        )
    return parser, args, sets


def _configured(parser, name, sets):
    """Preset ``name``'s config with the ``--set`` overrides; a bad one is a parser error."""
    try:
        return apply_sets(preset_config(name), sets)
    except ValueError as err:
        fail(parser, f"--set: {err}")


def _compilation_cache(progress: bool) -> str | None:
    """JAX's persistent compilation cache dir where the environment turned it on (warned: compile times may then
    be cache hits), else None; the benchmarks do not turn it on."""
    cache = jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache else None
    if cache:
        status(
            f"warning: JAX's persistent compilation cache is on ({cache}): compile times may be cache hits", progress
        )
    return cache or None


def _header(what: str) -> dict:
    """The first keys of every result: the mode and the machine."""
    return {
        "what": what,
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0]),
        "machine": platform.machine(),
    }


def run_sb3(parser, args, sets) -> dict:
    """``--what sb3``: sb3-contrib's MaskablePPO vs our PPO (benchmarks/harness/sb3.py)."""
    bots = [b.strip() for b in args.opponents.split(",") if b.strip()]
    if not bots or any(b not in ("random", "greedy", "expert") for b in bots):
        fail(parser, f"--opponents must be comma-separated bots among random, greedy, expert; got {args.opponents!r}")
    if args.budget_s <= 0 or args.eval_games < 2:
        fail(parser, "--budget-s must be positive and --eval-games at least 2")
    sb3_envs = default_sb3_envs() if args.sb3_envs is None else args.sb3_envs
    if sb3_envs < 1 or args.sb3_games < 1 or args.torch_threads < 0:
        fail(
            parser,
            f"--sb3-envs and --sb3-games must be at least 1 and --torch-threads at least 0 (0: torch's "
            f"default); got {sb3_envs}, {args.sb3_games}, {args.torch_threads}",
        )
    try:
        check_sb3()
    except RuntimeError as err:
        fail(parser, str(err))
    status(
        f"benchmark --what sb3: {args.budget_s:.0f} s of training per side (SB3 on {sb3_envs} subprocess envs, "
        f"SB3 on {args.sb3_games} batched games, ours) vs 7 of each of {', '.join(bots)}",
        not args.quiet,
    )
    return {
        **_header("sb3"),
        "cpus": os.cpu_count(),
        **bench_sb3(
            tuple(bots),
            args.budget_s,
            args.eval_games,
            sb3_envs,
            args.sb3_games,
            args.torch_threads,
            progress=not args.quiet,
        ),
    }


def run_memory(parser, args, sets) -> dict:
    """``--what memory``: XLA's memory of one training update per device count (benchmarks/harness/memory.py)."""
    names = _train_presets(args.presets or "ppo_large,a2c_stream", parser)
    try:
        device_counts = _ints(args.devices)
    except ValueError:
        fail(parser, f"--devices must be comma-separated ints, got {args.devices!r}")
    if not names or any(not 1 <= d <= 256 for d in device_counts):
        fail(parser, "--what memory needs at least one preset and device counts in [1, 256]")
    for name in names:
        if any(preset_config(name).num_envs % d for d in device_counts):
            fail(parser, f"--devices: every count must divide {name}'s num_envs={preset_config(name).num_envs}")
    status(
        f"benchmark --what memory: one update of {', '.join(names)} compiled on {args.devices} device(s)",
        not args.quiet,
    )
    try:
        measured = bench_memory(names, device_counts, progress=not args.quiet)
    except (ValueError, RuntimeError) as err:
        fail(parser, str(err))
    return {**_header("memory"), **measured}


def run_learning(parser, args, sets) -> dict:
    """``--what learning``: minutes until a preset's policy reaches ``--target`` (benchmarks/harness/learning.py)."""
    names = _train_presets(args.presets or "ppo_small", parser)
    if len(names) != 1:
        fail(parser, "--what learning trains one preset (--presets NAME)")
    if not 1.0 <= args.target <= 8.0:
        fail(parser, f"--target is a placement in [1, 8], got {args.target}")
    run_dir = args.out or time.strftime("runs/learning-%Y%m%d-%H%M%S")
    status(f"benchmark --what learning: {names[0]} into {run_dir} until the end of the preset", not args.quiet)
    return {
        **_header("learning"),
        "overrides": sets,
        **bench_learning(
            names[0],
            run_dir,
            args.target,
            eval_every=args.eval_every,
            seed=args.seed,
            total_steps=args.total_steps,
            progress=not args.quiet,
            config=_configured(parser, names[0], sets),
        ),
    }


def run_replay(parser, args, sets) -> dict:
    """``--what replay``: one whole game of a lineup recorded, the first call and again
    (benchmarks/harness/replay.py)."""
    players = player_list(parser, args.players, "--players", (1, C.NUM_PLAYERS))
    players = players * C.NUM_PLAYERS if len(players) == 1 else players
    if args.repeats < 1:
        fail(parser, f"--repeats must be positive, got {args.repeats}")
    rules = parse_rules(parser, args.set)
    status(
        f"benchmark --what replay: a game of {', '.join(dict.fromkeys(players))} at seed {args.seed}, recorded "
        f"once and {args.repeats} more time(s)",
        not args.quiet,
    )
    cache = _compilation_cache(not args.quiet)
    try:
        measured = bench_replay(players, args.seed, rules, args.repeats, progress=not args.quiet)
    except ValueError as err:  # PolicyError among them: rules for a game with a policy
        fail(parser, err)
    return {**_header("replay"), "compilation_cache": cache, **measured}


def _sizes(parser, args) -> dict:
    """The sizes of the sized modes (``env``, ``combat``, ``render``, ``train``, ``sweep``): the backend's default
    ``sweep`` overridden by the flags, checked."""
    sweep = default_sweep(jax.default_backend(), args.full)
    try:
        num_envs = (
            _ints(args.num_envs)
            if args.num_envs
            else sweep["num_envs"]
            if args.what == "env"
            else [64]
            if args.what == "combat"
            else sweep["render_num_envs"]
        )
        render_batch = _ints(args.render_batch) if args.render_batch else sweep["render_batch"]
        combat_batch = _ints(args.combat_batch)
    except ValueError:
        fail(
            parser,
            f"--num-envs/--render-batch must be comma-separated ints, got {args.num_envs!r}, {args.render_batch!r}",
        )
    fights = sweep["fights"] if args.fights is None else args.fights
    skip_envs = sweep["skip_envs"] if args.skip_envs is None else args.skip_envs
    if any(n < 1 for n in num_envs + render_batch + combat_batch) or min(args.rounds, fights, skip_envs) < 1:
        fail(parser, "--num-envs, --render-batch, --rounds, --fights and --skip-envs must be positive")
    if any(n % 8 for n in combat_batch + [fights]):
        fail(
            parser,
            f"--fights and --combat-batch must be multiples of 8 (a game's 8 fight slots), got "
            f"{fights} and {','.join(map(str, combat_batch))}",
        )
    return {
        "sweep": sweep,
        "num_envs": num_envs,
        "render_batch": render_batch,
        "combat_batch": combat_batch,
        "fights": fights,
        "skip_envs": skip_envs,
    }


def _training_sizes(parser, args, sweep: dict) -> tuple[list[str], tuple[str, ...]]:
    """``--what train``/``sweep``: (the game presets, the gymnax envs), checked."""
    presets = _train_presets(args.presets if args.presets is not None else ",".join(sweep["train_presets"]), parser)
    if args.updates is not None and args.updates < 1:
        fail(parser, "--updates must be positive")
    if args.gymnax_steps and args.gymnax_steps < 512:
        fail(parser, "--gymnax-steps must be 0 (skip) or >= 512 (one update of 4 envs x 128 steps)")
    gymnax_envs = tuple(e.strip() for e in args.gymnax_envs.split(",") if e.strip())
    if not gymnax_envs or args.gymnax_reps < 1:
        fail(parser, "--gymnax-envs needs at least one env and --gymnax-reps must be positive")
    if args.gymnax_steps:
        from agents.envs.gymnax_env import check_spec

        for name in gymnax_envs:
            try:
                check_spec(f"gymnax:{name}")
            except ValueError as err:
                fail(parser, f"--gymnax-envs: {err}")
    return presets, gymnax_envs


def _start(args, sweep: dict, sizes: str) -> dict:
    """Say what is timed (on stderr) and return the result's first keys."""
    quick_env = sweep["name"] == "quick" and args.what == "env"
    hint = "; --full for the full sweep (~10 min on a 2-core CPU)" if quick_env else ""
    status(
        f"benchmark --what {args.what} on {jax.default_backend()}, {sweep['name']} sweep ({sizes}){hint}",
        not args.quiet,
    )
    return {**_header(args.what), "sweep": sweep["name"]}


def run_env(parser, args, sets) -> dict:
    """``--what env``: VecEnv seat-steps/s, the combat alone and the fight-skip check (benchmarks/harness/env.py)."""
    s = _sizes(parser, args)
    result = _start(
        args,
        s["sweep"],
        f"envs {','.join(map(str, s['num_envs']))}; {s['fights']} fights; fight-skip at {s['skip_envs']} envs",
    )
    env = jaxgame.make("autochess")
    result["steps_per_round"] = env.config.steps_per_round
    result["seat_steps_per_s"] = bench_env_throughput(env, s["num_envs"], args.rounds, not args.quiet)
    result["combat"] = bench_combat(s["fights"], (3, 9), env.config.max_combat_ticks, not args.quiet)
    result["fight_skip"] = bench_fight_skip(env, s["skip_envs"], 5, not args.quiet)
    return result


def run_combat(parser, args, sets) -> dict:
    """``--what combat``: the combat and the env around it, optionally vs a baseline revision's combat."""
    s = _sizes(parser, args)
    result = _start(
        args,
        s["sweep"],
        f"fights {','.join(map(str, s['combat_batch']))}; envs "
        f"{','.join(map(str, s['num_envs']))}; baseline {args.baseline or 'none'}",
    )
    result["rounds"] = args.rounds
    result.update(
        bench_combat_vs_baseline(s["combat_batch"], s["num_envs"], args.baseline, not args.quiet, args.rounds)
    )
    return result


def run_render(parser, args, sets) -> dict:
    """``--what render``: frames/s packed vs unpacked, and env seat-steps/s with pixel vs vector observations."""
    s = _sizes(parser, args)
    result = _start(
        args,
        s["sweep"],
        f"render states {','.join(map(str, s['render_batch']))}; envs {','.join(map(str, s['num_envs']))}",
    )
    result["render"] = bench_render(s["render_batch"], not args.quiet)
    result["env_seat_steps_per_s"] = bench_obs_kinds(s["num_envs"], args.rounds, not args.quiet)
    return result


def run_train(parser, args, sets) -> dict:
    """``--what train``: training seat-steps/s per preset vs the env alone, and gymnax vs PureJaxRL."""
    s = _sizes(parser, args)
    sweep, progress = s["sweep"], not args.quiet
    presets, gymnax_envs = _training_sizes(parser, args, sweep)
    updates = f"{args.updates} updates" if args.updates else f"{sweep['train_steps']} steps of every env"
    gymnax = f"gymnax {args.gymnax_steps} steps" if args.gymnax_steps else "gymnax skipped"
    result = _start(args, sweep, f"presets {','.join(presets) or 'none'}, {updates} per chunk; {gymnax}")
    result["compilation_cache"] = _compilation_cache(progress)
    result["overhead_goal"] = OVERHEAD_GOAL
    result["overrides"] = sets
    configs = {name: _configured(parser, name, sets) for name in presets}
    result["train"] = trained = {
        name: bench_train(
            name, sweep["train_steps"], args.updates, progress, f"[train {i + 1}/{len(presets)}]", configs[name]
        )
        for i, name in enumerate(presets)
    }
    if "league_small" in trained and "ppo_small" in trained:  # the league's cost: pool seats' forward passes
        result["league_over_self_play"] = round(
            trained["league_small"]["train_seat_steps_per_s"] / trained["ppo_small"]["train_seat_steps_per_s"], 3
        )
    result["gymnax"] = (
        bench_gymnax(args.gymnax_steps, progress, gymnax_envs, args.gymnax_reps)
        if args.gymnax_steps
        else {"skipped": "--gymnax-steps 0"}
    )
    return result


def run_sweep(parser, args, sets) -> dict:
    """``--what sweep``: a vmapped sweep of R runs vs R separate runs (benchmarks/harness/sweep.py)."""
    s = _sizes(parser, args)
    sweep = s["sweep"]
    presets, _ = _training_sizes(parser, args, sweep)
    runs = args.runs or (4 if sweep["name"] == "quick" else 16)
    if runs < 1:
        fail(parser, "--runs must be positive")
    result = _start(args, sweep, f"presets {','.join(presets)}, {runs} runs")
    result["sweep_vs_separate"] = {
        name: bench_sweep(
            name,
            runs,
            train_updates(preset_config(name), sweep["train_steps"], args.updates),
            not args.quiet,
            f"[sweep {i + 1}/{len(presets)}]",
        )
        for i, name in enumerate(presets)
    }
    return result


#: ``--what`` -> its function ``(parser, args, sets) -> result``; the sized ones also say how long they took.
MODES = {
    "env": run_env,
    "combat": run_combat,
    "render": run_render,
    "train": run_train,
    "sweep": run_sweep,
    "learning": run_learning,
    "sb3": run_sb3,
    "memory": run_memory,
    "replay": run_replay,
}
SIZED = ("env", "combat", "render", "train", "sweep")


def main(argv=None):
    parser, args, sets = parse_args(argv)
    start = time.perf_counter()
    result = MODES[args.what](parser, args, sets)
    if args.what in SIZED:
        status(f"done in {time.perf_counter() - start:.1f} s", not args.quiet)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
