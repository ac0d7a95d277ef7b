"""Play batches of games between scripted bots and report mean placements.

    python -m experiments.evaluate --games 16
    python -m experiments.evaluate --seats greedy,random,random,random,random,random,random,random
    python -m experiments.evaluate --checkpoint runs/mine --vs greedy --games 16

With ``--checkpoint RUN_DIR`` it evaluates the trained policy of a run (its
latest good checkpoint, or ``--step``) in one seat against 7 bots (``--vs``;
both kinds when omitted), the policy rotated over all 8 seats for each game
seed as during training; JSON with the mean placement, a 95% interval over
the seeds, top-1 and top-4 rates.

Tells stderr what it is doing (compiling the rollout, ~20-30 s on a 2-core CPU; then
the compile time and a progress bar while playing), then prints one JSON object
(the persistent compilation cache, as in ``experiments.train``, makes later runs start in seconds)
as the last line of stdout. ``--quiet`` silences the messages and the bar.
"""

from __future__ import annotations

import argparse
import json

import jaxgame
from experiments.common import DEFAULT_CACHE, enable_compilation_cache, placement_by_bot, play_games
from jaxgame.bots import BOTS

DEFAULT_SEATS = "greedy,random,greedy,random,greedy,random,greedy,random"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=16, help="games played in parallel (one per env); default 16")
    parser.add_argument("--seats", default=DEFAULT_SEATS, help=f"8 comma-separated bots from {sorted(BOTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rule", action="append", default=[], metavar="NAME=INT",
                        help="rule override, e.g. --rule max_rounds=20 (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages or bar on stderr")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"JAX compilation cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    parser.add_argument("--checkpoint", metavar="RUN_DIR", help="evaluate the policy of a training run")
    parser.add_argument("--step", type=int, help="with --checkpoint: this checkpoint step (default: latest good)")
    parser.add_argument("--vs", choices=["random", "greedy"], help="with --checkpoint: the bots (default: both)")
    args = parser.parse_args(argv)
    seats = tuple(s.strip() for s in args.seats.split(","))
    if len(seats) != 8 or any(s not in BOTS for s in seats):
        parser.error(f"--seats needs 8 names from {sorted(BOTS)}, got {args.seats!r}")
    if args.games < 1:
        parser.error(f"--games must be >= 1, got {args.games}")
    rules = {}
    for item in args.rule:
        name, _, value = item.partition("=")
        try:
            rules[name] = int(value)
        except ValueError:
            parser.error(f"--rule {item!r}: expected NAME=INT")
    return args, seats, rules


def evaluate_checkpoint(args) -> dict:
    """Seat-rotated evaluation of a run's saved policy (see the module docstring)."""
    import dataclasses
    import time
    from pathlib import Path

    import jax
    import numpy as np

    from agents.config import TrainConfig
    from agents.envs import make_game
    from agents.evaluation import make_evaluator, placement_summary
    from experiments.checkpoints import CheckpointStore
    from experiments.common import status
    from experiments.train import build

    run_dir = Path(args.checkpoint)
    store = CheckpointStore(run_dir / "checkpoints", keep=1)
    config = TrainConfig.from_dict(store.read_config(args.step)["config"])
    if config.is_gymnax:
        raise SystemExit(f"{run_dir} trained on {config.env}; --checkpoint evaluates game policies only")
    # one device, whatever the run trained on: the parameters are replicated, the evaluation runs on one device
    config = dataclasses.replace(config, num_devices=1)
    _, trainer, evaluate = build(config)  # shared with experiments.train (same process: no retracing)
    abstract = jax.eval_shape(trainer.init, jax.random.key(config.seed))
    step, runner, _ = store.restore(abstract, args.step)
    store.close()
    status(f"evaluating {run_dir} at update {step}: compiling ...", not args.quiet)
    start = time.perf_counter()
    if evaluate is None or evaluate.num_games != args.games:
        evaluate = make_evaluator(make_game(config), trainer.network, args.games)
    result = {"checkpoint": str(run_dir), "update": step, "games_per_rotation": args.games}
    for vs in [args.vs] if args.vs else ["random", "greedy"]:
        ranks = np.asarray(evaluate(runner.params, jax.random.key(args.seed), vs))
        result[f"vs_{vs}"] = placement_summary(ranks)
    result["seconds"] = round(time.perf_counter() - start, 2)
    print(json.dumps(result))
    return result


def main(argv=None):
    args, seats, rules = parse_args(argv)
    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    if args.checkpoint:
        return evaluate_checkpoint(args)
    env = jaxgame.make("autochess", **rules)
    ranks, stats = play_games(env, seats, args.games, args.seed, progress=not args.quiet)
    result = {
        "games": args.games,
        "seats": list(seats),
        "mean_placement": placement_by_bot(ranks, seats),
        "ranks": ranks.tolist(),
        **{k: round(v, 2) if isinstance(v, float) else v for k, v in stats.items()},
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
