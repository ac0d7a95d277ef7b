"""``--what sb3``: Stable-Baselines3 as its users run it, SB3 on our batched env, and our fused PPO, on the same
machine and the same opponents for the same training wall time.

Per opponent bot (``--opponents``, default ``random`` then ``greedy``: 7 of it at every table), three sides:

* ``sb3_subproc``: SB3 as its users run it. sb3-contrib's ``MaskablePPO("MlpPolicy", device="cpu")`` with its
  default hyperparameters (``n_steps`` 2048 per env, ``batch_size`` 64, ``n_epochs`` 10, ...) on
  ``make_vec_env(partial(make_gym_env, BOT), n_envs, vec_env_cls=SubprocVecEnv)``: ``n_envs`` worker processes
  (SB3's default start method, forkserver on Linux), each running one Gymnasium env
  ``gymnasium.make("jaxgame/AutoChess-v0", opponents=BOT)`` (one game, the learner's seat drawn at every reset,
  ``action_masks()``), wrapped in SB3's ``Monitor`` as ``make_vec_env`` does. ``n_envs`` (``--sb3-envs``) defaults
  to ``os.cpu_count()``, the logical cores, as SB3's docs advise: the PPO page ("PPO is meant to be run primarily
  on the CPU, especially when you are not using a CNN. To improve CPU utilization, try turning off the GPU and using
  ``SubprocVecEnv`` instead of the default ``DummyVecEnv``", its example with ``device="cpu"``) and
  ``SubprocVecEnv``'s docstring, on the "Vectorized Environments" page ("if your environment is not IO bound, the
  number of environments should not exceed the number of logical cores on your CPU"); the env is CPU-bound (the
  game's shop and combat).
* ``sb3_batched``: the same ``MaskablePPO`` (same defaults, device and seed) on our batched SB3 ``VecEnv``,
  ``agents.interop.sb3_vec_env.make_sb3_vec_env(num_games, learners=[0], opponents=BOT)``: ``num_games`` games
  (``--sb3-games``, default 16, the module's own example) stepped together in one compiled call in this process,
  seat 0 learning. SB3's ``n_steps`` is per env, so a rollout is ``n_steps x num_games`` samples; some of them are
  forced (the seat has one legal action while another game's learner decides, or it waits knocked out):
  ``decisions`` counts the samples with two or more legal actions, ``sb3_timesteps`` all of them.
* ``ours``: the project's fused PPO at ``ppo_small``'s shapes with ``opponents=BOT`` (seat 0 learns, 7 bots;
  64 games x 32 steps an update), trained in chunks of ``chunk_updates`` updates.

The same wall time: ``budget_s`` seconds of *training* per side, after its startup. The startup is reported apart
(``startup_s``) and never counts: for ``sb3_subproc`` starting the workers, their imports (JAX among them) and each
worker's compile of the env (its first reset and step); for ``sb3_batched`` building the env and compiling its
program (the first reset and step); for ``ours`` building the trainer and compiling its chunk. The SB3 sides' clock
starts when ``learn`` starts training (SB3's ``on_training_start``, after its first reset) and a callback, asked at
every env step, stops ``learn`` at the first env step after ``budget_s``: the rollout under way is dropped (SB3
trains on whole rollouts); a PPO update begun before the budget ran out runs to its end and counts in ``train_s``
(the rates divide by ``train_s``, not by the budget). ``rollouts``: the PPO updates SB3 made (each ``n_epochs``
epochs over one rollout); with none, the policy evaluated is the untrained one. Ours trains in whole chunks until
``budget_s`` has passed.

Measures, per side: ``env_steps_per_s``, its env alone (random legal actions; ``sb3_subproc``: the
``SubprocVecEnv``, ``sb3_batched``: the batched ``VecEnv``, ``env_probe_steps`` calls each after the startup;
ours: the ``VecEnv`` with those bots at ``ppo_small``'s size over whole rounds, ``--what env``'s measure);
``train_env_steps_per_s``, game steps per second of training; ``placement``, the final policy's
``agents.arena.evaluation.placement_summary`` (mean placement 1 best .. 8, its 95% half-width, the t interval over
the game seeds, top-1/top-4 rates) over ``eval_games`` game seeds x 8 seat rotations against 7 of the same bot,
seeds never used in training. Both SB3 policies are evaluated the same way, through one Gymnasium env in this
process (the seat set at each reset, ``predict(deterministic=False)`` with the mask); ours through
``agents.arena.evaluation`` (sampling from the policy, seat-rotated). ``train_speedup``/``env_speedup``: ratios of
those rates (the issue's goal: ours >= 100x SB3's); ``placement_better``: the first placed better than the second
by more than both 95% half-widths together.

Torch's threads: left at torch's default unless ``torch_threads`` is given (``torch.set_num_threads``), as SB3 and
RL Zoo leave them (RL Zoo's ``--num-threads`` defaults to -1, "use default"); the JSON records the number in use
and whether the benchmark set it. On a 2-core CPU busy with other work one thread can be far faster than the
default two (SB3 on 16 batched games while another job used both cores: about 1,000 samples/s of training with
1 thread, about 20 with 2): that is a setting users would have to find, so the default is what is
measured unless asked otherwise, and the SB3 numbers need an otherwise idle machine.

An env step is a game step: all 8 seats act once (here 1 learner and 7 bots). Needs ``pip install -e ".[sb3]"``
(sb3-contrib and torch; on a CPU-only machine install torch's CPU wheel first, or pip takes a CUDA build).
"""

from __future__ import annotations

import functools
import os
import time

import jax
import numpy as np

import jaxgame
from agents.arena.evaluation import placement_summary
from agents.envs.make import make_game
from agents.presets import preset_config
from agents.run.build import build
from benchmarks.harness.timing import best_time
from experiments.common import status
from jaxgame import bots
from jaxgame.gymnasium_registration import ENV_ID
from jaxgame.play import rollout_fn

DEFAULT_OPPONENTS = ("random", "greedy")
DEFAULT_SB3_GAMES = 16  # agents.interop.sb3_vec_env's own example
TRAIN_SEED, EVAL_SEED = 0, 1_000_003  # evaluation game seeds: a stream training never draws from
SPEEDUP_GOAL = 100.0
SB3_ALGORITHM = "sb3-contrib MaskablePPO('MlpPolicy', device='cpu'), default hyperparameters"


def check_available() -> None:
    """``RuntimeError`` naming the extra when sb3-contrib or torch is missing."""
    try:
        import sb3_contrib  # noqa: F401
        import torch  # noqa: F401
    except ImportError as err:
        raise RuntimeError(
            f"--what sb3 needs sb3-contrib and torch ({err.name} is missing): pip install -e "
            '".[sb3]" (on a CPU-only machine install torch\'s CPU wheel first)'
        ) from None


def default_sb3_envs() -> int:
    """SB3's advice for ``SubprocVecEnv``: no more envs than logical cores (the module docstring)."""
    return os.cpu_count() or 1


def _random_legal(rng, masks) -> np.ndarray:
    """int64[n]: one legal action drawn uniformly per row of bool masks[n, 258]."""
    return np.asarray([rng.choice(np.flatnonzero(m)) for m in masks])


# ---------------------------------------------------------------- sb3-contrib's MaskablePPO


def make_gym_env(bot: str):
    """The Gymnasium single-seat env against 7 ``bot`` (a ``SubprocVecEnv`` worker calls it: module-level, so it
    pickles by reference and the worker imports this module, which registers the id through ``import jaxgame``)."""
    import gymnasium

    return gymnasium.make(ENV_ID, opponents=bot)


class _Counter:
    """Game steps and decisions of the steps SB3 trains on: ``step_game_steps(infos)`` gives the game steps of the
    step just played, ``choices()`` how many of the next step's samples have two or more legal actions."""

    def __init__(self, step_game_steps, choices):
        self.step_game_steps, self.choices = step_game_steps, choices
        self.game_steps = self.decisions = 0
        self._next = 0

    def start(self):
        self._next = self.choices()

    def step(self, infos):
        self.game_steps += self.step_game_steps(infos)
        self.decisions += self._next
        self._next = self.choices()


def _budget_callback(budget_s: float, counter: _Counter):
    """An SB3 callback that stops ``learn`` once ``budget_s`` seconds have passed since training started and counts
    (``counter``) the game steps and decisions, and the rollouts trained on."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Budget(BaseCallback):
        def __init__(self):
            super().__init__()
            self.rollouts, self.start = 0, None

        def _on_training_start(self):
            self.start = time.perf_counter()
            counter.start()

        def _on_rollout_end(self):
            self.rollouts += 1

        def _on_step(self):
            counter.step(self.locals["infos"])
            return time.perf_counter() - self.start < budget_s

    return Budget()


def _learn(venv, budget_s: float, counter: _Counter) -> tuple:
    """MaskablePPO with its defaults trained on ``venv`` for ``budget_s`` seconds -> (model, the side's numbers)."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO("MlpPolicy", venv, seed=TRAIN_SEED, device="cpu", verbose=0)
    budget = _budget_callback(budget_s, counter)
    model.learn(total_timesteps=10**12, callback=budget)
    train_s = time.perf_counter() - budget.start
    return model, {
        "algorithm": SB3_ALGORITHM,
        "n_envs": int(venv.num_envs),
        "n_steps": int(model.n_steps),
        "rollout_size": int(model.n_steps * venv.num_envs),
        "train_s": round(train_s, 1),
        "rollouts": budget.rollouts,
        "sb3_timesteps": int(model.num_timesteps),
        "decisions": counter.decisions,
        "env_steps": counter.game_steps,
        "train_env_steps_per_s": round(counter.game_steps / train_s, 1),
    }


def _vec_masks(venv, dones, infos) -> np.ndarray:
    """bool[n_envs, 258] of a ``SubprocVecEnv`` of Gymnasium envs after a step: an env that just finished its game
    was reset, its mask is in ``reset_infos``."""
    return np.stack(
        [(venv.reset_infos[i] if done else info)["action_mask"] for i, (done, info) in enumerate(zip(dones, infos))]
    )


def _subproc_game_steps(infos) -> int:
    return sum(info["game_steps"] for info in infos)


def _subproc_env_speed(venv, steps: int, rng) -> float:
    """Game steps per second of the ``SubprocVecEnv`` alone (random legal actions; ``steps`` calls)."""
    venv.reset()
    masks = np.stack([info["action_mask"] for info in venv.reset_infos])
    game_steps, start = 0, time.perf_counter()
    for _ in range(steps):
        _, _, dones, infos = venv.step(_random_legal(rng, masks))
        game_steps += _subproc_game_steps(infos)
        masks = _vec_masks(venv, dones, infos)
    return game_steps / (time.perf_counter() - start)


def bench_sb3_subproc(bot: str, budget_s: float, n_envs: int, env_probe_steps: int, progress: bool) -> tuple:
    """``sb3_subproc`` (the module docstring) -> (the trained model, its numbers)."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    rng = np.random.default_rng(TRAIN_SEED)
    status(f"sb3 (SubprocVecEnv) vs {bot}: starting {n_envs} workers ...", progress)
    start = time.perf_counter()
    venv = make_vec_env(functools.partial(make_gym_env, bot), n_envs=n_envs, seed=TRAIN_SEED, vec_env_cls=SubprocVecEnv)
    try:
        venv.reset()  # each worker compiles its env's reset, then its step
        masks = np.stack([info["action_mask"] for info in venv.reset_infos])
        _, _, dones, infos = venv.step(_random_legal(rng, masks))
        startup_s = time.perf_counter() - start
        env_sps = _subproc_env_speed(venv, env_probe_steps, rng)
        status(
            f"sb3 (SubprocVecEnv) vs {bot}: started in {startup_s:.0f} s; env alone {env_sps:.0f} env steps/s; "
            f"MaskablePPO learns for {budget_s:.0f} s ...",
            progress,
        )
        # a Gymnasium env step always ends where the learner has a choice: every sample is a decision
        counter = _Counter(_subproc_game_steps, lambda: n_envs)
        model, numbers = _learn(venv, budget_s, counter)
    finally:
        venv.close()
    return model, {
        "vec_env": f"SubprocVecEnv of {n_envs} Gymnasium envs ({ENV_ID}), make_vec_env",
        "startup_s": round(startup_s, 1),
        "env_steps_per_s": round(env_sps, 1),
        **numbers,
    }


def _batched_env_speed(venv, steps: int, rng) -> float:
    """Game steps per second of the batched SB3 ``VecEnv`` alone (random legal actions; ``steps`` calls)."""
    venv.reset()
    game_steps, start = 0, time.perf_counter()
    for _ in range(steps):
        venv.step(_random_legal(rng, venv.action_masks()))
        game_steps += venv.seats.game_steps * venv.seats.num_games
    return game_steps / (time.perf_counter() - start)


def bench_sb3_batched(bot: str, budget_s: float, num_games: int, env_probe_steps: int, progress: bool) -> tuple:
    """``sb3_batched`` (the module docstring) -> (the trained model, its numbers)."""
    from agents.interop.sb3_vec_env import make_sb3_vec_env

    rng = np.random.default_rng(TRAIN_SEED)
    status(f"sb3 (batched VecEnv) vs {bot}: compiling {num_games} games ...", progress)
    start = time.perf_counter()
    venv = make_sb3_vec_env(num_games, learners=[0], opponents=bot, seed=TRAIN_SEED)
    venv.reset()
    venv.step(_random_legal(rng, venv.action_masks()))  # one program for resets and steps
    startup_s = time.perf_counter() - start
    env_sps = _batched_env_speed(venv, env_probe_steps, rng)
    status(
        f"sb3 (batched VecEnv) vs {bot}: compiled in {startup_s:.0f} s; env alone {env_sps:.0f} env steps/s; "
        f"MaskablePPO learns for {budget_s:.0f} s ...",
        progress,
    )
    seats = venv.seats
    counter = _Counter(
        lambda infos: seats.game_steps * seats.num_games, lambda: int((seats.action_masks().sum(-1) >= 2).sum())
    )
    model, numbers = _learn(venv, budget_s, counter)
    venv.close()
    return model, {
        "vec_env": f"agents.interop.sb3_vec_env.make_sb3_vec_env({num_games}, learners=[0]): "
        f"{num_games} games in one compiled call",
        "num_games": num_games,
        "startup_s": round(startup_s, 1),
        "env_steps_per_s": round(env_sps, 1),
        **numbers,
    }


def evaluate_sb3(model, env, eval_games: int) -> np.ndarray:
    """int ranks[eval_games, 8]: ``model`` in each seat of game seeds ``EVAL_SEED + g`` on the Gymnasium ``env``
    (7 of the bot), sampling its masked policy."""
    unwrapped = env.unwrapped
    ranks = np.zeros((eval_games, 8), np.int64)
    for g in range(eval_games):
        for seat in range(8):
            obs, info = env.reset(seed=EVAL_SEED + g, options={"seat": seat})
            terminated = False
            while not terminated:
                action, _ = model.predict(obs, action_masks=unwrapped.action_masks(), deterministic=False)
                obs, _, terminated, _, info = env.step(int(action))
            ranks[g, seat] = info["rank"]
    return ranks


# ---------------------------------------------------------------- ours


def _our_env_speed(game, num_envs: int, bot: str, steps: int) -> float:
    """Game steps per second of ``num_envs`` games alone (``VecEnv``; a random policy in seat 0 and 7 ``bot``),
    over whole rounds, the best of 2 after a warm-up."""
    steps = -(-steps // game.config.steps_per_round) * game.config.steps_per_round
    venv = jaxgame.VecEnv(game, num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(TRAIN_SEED))
    key = jax.random.key(TRAIN_SEED + 1)
    rollout = rollout_fn(venv, bots.mixed_policy(("random",) + (bot,) * 7), steps).lower(states, ts, key).compile()
    return steps * num_envs / best_time(rollout, states, ts, key, repeats=2)


def bench_our_side(bot: str, budget_s: float, eval_games: int, chunk_updates: int, progress: bool) -> dict:
    config = preset_config("ppo_small").with_overrides(
        {
            "opponents": bot,
            "seed": TRAIN_SEED,
            "updates_per_chunk": chunk_updates,
            "eval_games": eval_games,
            "total_steps": 10**12,
        }
    )
    start = time.perf_counter()
    built = build(config)
    trainer, steps_per_update = built.trainer, config.steps_per_update
    runner = jax.jit(trainer.init)(jax.random.key(config.run.seed))
    chunk = built.run.lower(runner, chunk_updates).compile()  # (runner) -> (runner, metrics)
    startup_s = time.perf_counter() - start
    env_sps = _our_env_speed(
        make_game(config), config.run.num_envs, bot, chunk_updates * steps_per_update // config.run.num_envs
    )
    status(
        f"ours vs {bot}: built and compiled in {startup_s:.0f} s; env alone {env_sps:.0f} env steps/s; training "
        f"for {budget_s:.0f} s ...",
        progress,
    )
    updates, train_s = 0, 0.0
    while train_s < budget_s:
        t = time.perf_counter()
        runner, _ = jax.block_until_ready(chunk(runner))
        train_s += time.perf_counter() - t
        updates += chunk_updates
    status(f"ours vs {bot}: {updates} updates in {train_s:.0f} s; evaluating on {8 * eval_games} games ...", progress)
    ranks = np.asarray(built.evaluator(runner.params, jax.random.key(EVAL_SEED), bot))
    return {
        "algorithm": "fused PPO at ppo_small's shapes (64 games x 32 steps an update, 256-256 MLP), seat 0 learns",
        "startup_s": round(startup_s, 1),
        "env_steps_per_s": round(env_sps, 1),
        "train_s": round(train_s, 1),
        "updates": updates,
        "env_steps": updates * steps_per_update,
        "train_env_steps_per_s": round(updates * steps_per_update / train_s, 1),
        "placement": placement_summary(ranks),
    }


# ---------------------------------------------------------------- side by side


def _better(first: dict, second: dict) -> bool:
    """``first`` placed better than ``second`` by more than both 95% half-widths (one seed: no interval, no
    claim)."""
    halves = (first["placement"]["ci95"], second["placement"]["ci95"])
    margin = float("inf") if None in halves else sum(halves)
    return bool(second["placement"]["mean_placement"] - first["placement"]["mean_placement"] > margin)


def _ratios(sides: dict, key: str) -> dict:
    """The sides' ``key`` rates side by side: ours over each SB3 side, and SB3 batched over SB3 subproc."""
    pairs = (("ours", "sb3_subproc"), ("ours", "sb3_batched"), ("sb3_batched", "sb3_subproc"))
    return {f"{a}/{b}": round(sides[a][key] / sides[b][key], 2) for a, b in pairs}


def bench_opponent(
    bot: str,
    budget_s: float,
    eval_games: int,
    sb3_envs: int,
    sb3_games: int,
    chunk_updates: int,
    env_probe_steps: int,
    progress: bool,
) -> dict:
    """The three sides against 7 ``bot``, trained and evaluated (the module docstring)."""
    sides = {"ours": bench_our_side(bot, budget_s, eval_games, chunk_updates, progress)}
    models = {}
    models["sb3_subproc"], sides["sb3_subproc"] = bench_sb3_subproc(bot, budget_s, sb3_envs, env_probe_steps, progress)
    models["sb3_batched"], sides["sb3_batched"] = bench_sb3_batched(bot, budget_s, sb3_games, env_probe_steps, progress)
    env = make_gym_env(bot)
    for name, model in models.items():
        status(f"{name} vs {bot}: evaluating on {8 * eval_games} games ...", progress)
        sides[name]["placement"] = placement_summary(evaluate_sb3(model, env, eval_games))
    env.close()
    result = {
        **sides,
        "train_speedup": _ratios(sides, "train_env_steps_per_s"),
        "env_speedup": _ratios(sides, "env_steps_per_s"),
        "placement_better": {
            "ours/sb3_subproc": _better(sides["ours"], sides["sb3_subproc"]),
            "ours/sb3_batched": _better(sides["ours"], sides["sb3_batched"]),
            "sb3_batched/sb3_subproc": _better(sides["sb3_batched"], sides["sb3_subproc"]),
        },
    }
    status(
        f"vs 7 {bot}: training env steps/s {result['train_speedup']}; placement "
        + ", ".join(
            f"{name} {sides[name]['placement']['mean_placement']:.2f}"
            for name in ("ours", "sb3_subproc", "sb3_batched")
        ),
        progress,
    )
    return result


def _torch_threads(torch_threads: int) -> dict:
    """Set torch's intra-op threads if ``torch_threads`` > 0 (0: torch's default) -> what the JSON records."""
    import torch

    if torch_threads:
        torch.set_num_threads(torch_threads)
    return {
        "threads": torch.get_num_threads(),
        "set_by": "--torch-threads" if torch_threads else "torch's default (not set, as SB3 and RL Zoo leave it)",
        "version": torch.__version__,
    }


def bench_sb3(
    opponents=DEFAULT_OPPONENTS,
    budget_s: float = 300.0,
    eval_games: int = 16,
    sb3_envs: int | None = None,
    sb3_games: int = DEFAULT_SB3_GAMES,
    torch_threads: int = 0,
    chunk_updates: int = 5,
    env_probe_steps: int = 200,
    progress: bool = True,
) -> dict:
    """The JSON of ``--what sb3`` (the module docstring). ``sb3_envs`` None: ``default_sb3_envs()``."""
    check_available()
    import sb3_contrib

    sb3_envs = default_sb3_envs() if sb3_envs is None else sb3_envs
    method = {
        "budget_s_applies_to": "training only, per side and opponent: from SB3's first training step (after its "
        "reset) or our first chunk, after each side's startup (startup_s, apart)",
        "sb3_n_envs": sb3_envs,
        "sb3_n_envs_rule": "os.cpu_count() (logical cores) unless --sb3-envs: SB3's SubprocVecEnv docstring, "
        "'the number of environments should not exceed the number of logical cores'",
        "sb3_games": sb3_games,
        "sb3_version": sb3_contrib.__version__,
        "torch": _torch_threads(torch_threads),
        "env_probe_steps": env_probe_steps,
        "eval": {
            "game_seeds": eval_games,
            "rotations": 8,
            "games": 8 * eval_games,
            "first_seed": EVAL_SEED,
            "sb3": "one Gymnasium env in this process, predict(deterministic=False) with the mask",
            "ours": "agents.arena.evaluation, sampling",
            "summary": "agents.arena.evaluation.placement_summary",
        },
    }
    results = {
        bot: bench_opponent(bot, budget_s, eval_games, sb3_envs, sb3_games, chunk_updates, env_probe_steps, progress)
        for bot in opponents
    }
    return {
        "budget_s": budget_s,
        "eval_games": 8 * eval_games,
        "method": method,
        "speedup_goal": SPEEDUP_GOAL,
        "opponents": results,
    }
