"""``--what sb3``: the users' current tool beside ours, on the same machine and opponents, for the same wall time.

Per opponent bot (``--opponents``, default ``random`` then ``greedy``: 7 of it at every table):

* ``sb3``: sb3-contrib's ``MaskablePPO("MlpPolicy")`` with its default hyperparameters on the Gymnasium
  single-seat env (``jaxgame/AutoChess-v0``, the learner's seat drawn at every reset, ``action_masks()``), trained
  until ``budget_s`` seconds of ``learn`` have passed. ``env_steps_per_s``: the Gymnasium env alone (random legal
  actions, ``env_probe_steps`` calls after a warm-up); ``train_env_steps_per_s``: game steps per second of
  ``learn``; ``decisions``: the learner's decisions trained on (Gymnasium steps; one step can advance the game
  several env steps while the learner has no choice).
* ``ours``: the fused PPO at ``ppo_small``'s shapes with ``opponents=BOT`` (seat 0 learns, 7 bots; 64 games x 32
  steps an update), compiled first (``compile_s``, apart), then chunks of ``chunk_updates`` updates until
  ``budget_s`` seconds of training have passed. ``env_steps_per_s`` is the same env alone at that size (the
  ``VecEnv`` with those bots, ``--what env``'s measure, whole rounds); ``train_env_steps_per_s``: game steps per
  second of training.
* ``placement``: each trained policy's mean placement (1 best .. 8) over ``eval_games`` game seeds x 8 seat
  rotations against 7 of the same bot, seeds never used in training (ours: ``agents.arena.evaluation``, sampling from
  the policy; sb3: the Gymnasium env with the seat set at each reset, ``predict(deterministic=False)`` with the
  mask), with its 95% half-width (the t interval over the game seeds, ``placement_summary``).
* ``train_speedup``: ours / sb3 training env steps per second (the issue's goal: >= 100); ``placement_better``:
  ours placed better, by more than both 95% half-widths together.

An env step is a game step: all 8 seats act once (here 1 learner and 7 bots). Needs ``pip install -e ".[sb3]"``
(sb3-contrib and torch; on a CPU-only machine install torch's CPU wheel first, or pip takes a CUDA build).
"""

from __future__ import annotations

import time

import jax
import numpy as np

import jaxgame
from agents.arena.evaluation import placement_summary
from agents.envs.make import make_game
from agents.presets import preset_config
from agents.run.loop import build
from experiments.benchmark.timing import best_time
from experiments.common import status
from jaxgame import bots
from jaxgame.play import rollout_fn

DEFAULT_OPPONENTS = ("random", "greedy")
TRAIN_SEED, EVAL_SEED = 0, 1_000_003  # evaluation game seeds: a stream training never draws from
SPEEDUP_GOAL = 100.0


def check_available() -> None:
    """``RuntimeError`` naming the extra when sb3-contrib or torch is missing."""
    try:
        import sb3_contrib  # noqa: F401
        import torch  # noqa: F401
    except ImportError as err:
        raise RuntimeError(f"--what sb3 needs sb3-contrib and torch ({err.name} is missing): pip install -e "
                           "\".[sb3]\" (on a CPU-only machine install torch's CPU wheel first)") from None


def _summary(ranks) -> dict:
    """``placement_summary`` of int ranks[seeds, 8 rotations], rounded: the interval is the t interval over the game
    seeds (a seed's rotations share its deal, so they are not 8 independent games)."""
    summary = placement_summary(ranks)
    half = summary["ci95"]
    return {"mean_placement": round(summary["mean_placement"], 3), "ci95": None if half is None else round(half, 3),
            "games": summary["games"]}


# ---------------------------------------------------------------- sb3-contrib's MaskablePPO


def _gym_env(bot: str):
    import gymnasium

    import agents.interop  # noqa: F401  (registers the id)
    from agents.interop import ENV_ID

    return gymnasium.make(ENV_ID, opponents=[bot] * 7)


def _sb3_env_speed(env, steps: int, seed: int) -> float:
    """Game steps per second of the Gymnasium env alone (random legal actions), after a warm-up game start."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))  # compiles the step
    _, info = env.reset(seed=seed)
    game_steps, start = 0, time.perf_counter()
    for _ in range(steps):
        _, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        game_steps += info["game_steps"]
        if terminated:
            _, info = env.reset()
    return game_steps / (time.perf_counter() - start)


def bench_sb3_side(bot: str, budget_s: float, eval_games: int, env_probe_steps: int, progress: bool) -> dict:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    env = _gym_env(bot)
    env_sps = _sb3_env_speed(env, env_probe_steps, seed=TRAIN_SEED)
    status(f"sb3 vs {bot}: env alone {env_sps:.0f} env steps/s; MaskablePPO learns for {budget_s:.0f} s ...", progress)

    class Budget(BaseCallback):
        """Stops ``learn`` once the budget is spent; counts the game steps of the decisions trained on."""

        def __init__(self):
            super().__init__()
            self.game_steps, self.start = 0, None

        def _on_training_start(self):
            self.start = time.perf_counter()

        def _on_step(self):
            self.game_steps += sum(info["game_steps"] for info in self.locals["infos"])
            return time.perf_counter() - self.start < budget_s

    model = MaskablePPO("MlpPolicy", env, seed=TRAIN_SEED, verbose=0)
    budget = Budget()
    model.learn(total_timesteps=10**9, callback=budget)
    train_s = time.perf_counter() - budget.start
    status(f"sb3 vs {bot}: {model.num_timesteps} decisions in {train_s:.0f} s; evaluating on {8 * eval_games} "
           "games ...", progress)
    unwrapped = env.unwrapped
    placements = []
    for g in range(eval_games):
        for seat in range(8):
            obs, info = env.reset(seed=EVAL_SEED + g, options={"seat": seat})
            terminated = False
            while not terminated:
                action, _ = model.predict(obs, action_masks=unwrapped.action_masks(), deterministic=False)
                obs, _, terminated, _, info = env.step(int(action))
            placements.append(info["rank"])
    return {
        "algorithm": "sb3-contrib MaskablePPO('MlpPolicy'), default hyperparameters",
        "env_steps_per_s": round(env_sps, 1),
        "train_s": round(train_s, 1),
        "decisions": int(model.num_timesteps),
        "env_steps": int(budget.game_steps),
        "train_env_steps_per_s": round(budget.game_steps / train_s, 1),
        "placement": _summary(np.reshape(placements, (eval_games, 8))),  # seed g's 8 seats
    }


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
        {"opponents": bot, "seed": TRAIN_SEED, "updates_per_chunk": chunk_updates, "eval_games": eval_games,
         "total_steps": 10**12})
    built = build(config)
    trainer, steps_per_update = built.trainer, config.steps_per_update
    env_sps = _our_env_speed(make_game(config), config.num_envs, bot, chunk_updates * steps_per_update
                             // config.num_envs)
    status(f"ours vs {bot}: env alone {env_sps:.0f} env steps/s; compiling ppo_small's chunk ...", progress)
    start = time.perf_counter()
    runner = jax.jit(trainer.init)(jax.random.key(config.seed))
    chunk = trainer.run.lower(runner, chunk_updates).compile()  # (runner) -> (runner, metrics)
    compile_s = time.perf_counter() - start
    status(f"ours vs {bot}: compiled in {compile_s:.0f} s; training for {budget_s:.0f} s ...", progress)
    updates, train_s = 0, 0.0
    while train_s < budget_s:
        t = time.perf_counter()
        runner, _ = jax.block_until_ready(chunk(runner))
        train_s += time.perf_counter() - t
        updates += chunk_updates
    status(f"ours vs {bot}: {updates} updates in {train_s:.0f} s; evaluating on {8 * eval_games} games ...",
           progress)
    ranks = np.asarray(built.evaluator(runner.params, jax.random.key(EVAL_SEED), bot))
    return {
        "algorithm": "fused PPO at ppo_small's shapes (64 games x 32 steps an update, 256-256 MLP), seat 0 learns",
        "env_steps_per_s": round(env_sps, 1),
        "compile_s": round(compile_s, 1),
        "train_s": round(train_s, 1),
        "updates": updates,
        "env_steps": updates * steps_per_update,
        "train_env_steps_per_s": round(updates * steps_per_update / train_s, 1),
        "placement": _summary(ranks),
    }


def bench_sb3(opponents=DEFAULT_OPPONENTS, budget_s: float = 300.0, eval_games: int = 16, chunk_updates: int = 5,
              env_probe_steps: int = 500, progress: bool = True) -> dict:
    """The JSON of ``--what sb3`` (the module docstring)."""
    check_available()
    results = {}
    for bot in opponents:
        ours = bench_our_side(bot, budget_s, eval_games, chunk_updates, progress)
        sb3 = bench_sb3_side(bot, budget_s, eval_games, env_probe_steps, progress)
        halves = (ours["placement"]["ci95"], sb3["placement"]["ci95"])
        margin = float("inf") if None in halves else sum(halves)  # one seed: no interval, no claim
        results[bot] = {
            "ours": ours,
            "sb3": sb3,
            "train_speedup": round(ours["train_env_steps_per_s"] / sb3["train_env_steps_per_s"], 1),
            "env_speedup": round(ours["env_steps_per_s"] / sb3["env_steps_per_s"], 1),
            "placement_better": bool(sb3["placement"]["mean_placement"] - ours["placement"]["mean_placement"] > margin),
        }
        status(f"vs 7 {bot}: ours {results[bot]['train_speedup']}x sb3's training env steps/s; placement "
               f"{ours['placement']['mean_placement']} (ours) vs {sb3['placement']['mean_placement']} (sb3)", progress)
    return {"budget_s": budget_s, "eval_games": 8 * eval_games, "speedup_goal": SPEEDUP_GOAL, "opponents": results}
