"""The compile budget: how long each program a person waits for takes to compile, and how big it is.

    python benchmarks/compile_budget.py > compile.json
    python benchmarks/compile_budget.py --only env.step,env.reset

JAX's persistent compilation cache is off (``jax_enable_compilation_cache``), so every number is a cold compile,
as on a first run or after any change to the code. Per program: ``lower_s`` (tracing and lowering to StableHLO),
``compile_s`` (XLA's compile of the lowered program), ``stablehlo_ops`` (operations in the lowered module: what
the tracer emitted, the size XLA starts from; a proxy that moves with compile time on any backend) and
``hlo_instructions`` (instructions of the optimised HLO XLA compiled). The programs:

- ``env.reset``, ``env.step``: one default game, ``jax.jit`` of each;
- ``vmap(env.step) x64``, ``x1024``: ``jax.jit(jax.vmap(env.step))`` at 64 and 1,024 games;
- ``smoke chunk``, ``ppo_small chunk``: the preset's trainer's ``run`` over one chunk of updates
  (``updates_per_chunk``), what ``experiments.train`` compiles first;
- ``evaluation table``: the in-run evaluation of ``ppo_small`` (``make_evaluator``: its policy against 7 bots, its
  ``eval_games`` game seeds x 8 rotations).

And the parts of ``env.step`` (``--only parts``), each jitted alone on one default game: where its time goes.

- ``part: actions`` (``game.apply_actions``: the 8 seats' actions, their merges and shop refills), ``part: fights``
  (``game.fight_phase``: pairing, the combat of the round's fights, settling lives and gold), ``part: observation``
  (``observation.vector_observation``), ``part: legal masks`` (``actions.legal_mask`` of 8 seats), ``part:
  expert bot`` (``bots.expert_policy``), ``part: search bot`` (``search_bot.search_policy``).

A chunk is what ``experiments.train`` compiles: ``run_upto``'s program when the preset's updates are not a
multiple of ``updates_per_chunk`` (it runs the shorter last chunk too), else ``run``'s.

Prints one JSON object: the machine, jax's version, the programs' numbers and the total seconds. Progress, one line
per program, on stderr. About 5 minutes on an idle 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time

import jax

import jaxgame
from agents.algorithms.registry import make_train
from agents.arena.evaluation import make_evaluator
from agents.envs.make import make_env, make_game
from agents.policies import frozen as phases
from agents.policies.network import policy_network
from agents.presets import preset_config
from jaxgame import actions, bots, game, observation, search_bot
from jaxgame import constants as C

_STABLEHLO_OP = re.compile(r"\bstablehlo\.[a-z_]+")
#: the programs, in the order they are measured (``programs``)
NAMES = (
    "env.reset",
    "env.step",
    "vmap(env.step) x64",
    "vmap(env.step) x1024",
    "smoke chunk",
    "ppo_small chunk",
    "evaluation table",
)
#: the parts of ``env.step`` (``--only parts``)
PARTS = (
    "part: actions",
    "part: fights",
    "part: observation",
    "part: legal masks",
    "part: expert bot",
    "part: search bot",
)


def _games(env, n: int):
    """Abstract states and actions of ``n`` games (a leading axis), without running a reset."""
    state, _ = jax.eval_shape(env.reset, jax.random.key(0))
    batch = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct((n, *x.shape), x.dtype), state)
    return batch, jax.ShapeDtypeStruct((n, C.NUM_PLAYERS), jax.numpy.int32)


def _chunk(preset: str):
    config = preset_config(preset)
    trainer = make_train(config, make_env(config))
    runner = jax.eval_shape(trainer.init, jax.random.key(config.run.seed))
    inputs = phases.trainer_inputs(trainer, config, runner.params)
    chunk = config.run.updates_per_chunk
    if config.num_updates % chunk and trainer.facts.runs_upto:  # what agents.run.train_program compiles then
        return lambda: jax.jit(trainer.run_upto, static_argnums=1).lower(runner, chunk, jax.numpy.int32(chunk), *inputs)
    return lambda: jax.jit(trainer.run, static_argnums=1).lower(runner, chunk, *inputs)


def _evaluation_table():
    config = preset_config("ppo_small")
    network, abstract = policy_network(config)
    evaluate = make_evaluator(make_game(config), network, config.log.eval_games)
    return lambda: evaluate.run.lower(abstract, jax.random.key(0), jax.numpy.int32(1))


def programs() -> dict:
    """name -> a function returning the program lowered (``jax.stages.Lowered``)."""
    env = jaxgame.make("autochess")
    state, _ = jax.eval_shape(env.reset, jax.random.key(0))
    one_action = jax.ShapeDtypeStruct((C.NUM_PLAYERS,), jax.numpy.int32)
    vmapped = jax.jit(jax.vmap(env.step))
    return {
        "env.reset": lambda: jax.jit(env.reset).lower(jax.random.key(0)),
        "env.step": lambda: jax.jit(env.step).lower(state, one_action),
        "vmap(env.step) x64": lambda: vmapped.lower(*_games(env, 64)),
        "vmap(env.step) x1024": lambda: vmapped.lower(*_games(env, 1024)),
        "smoke chunk": _chunk("smoke"),
        "ppo_small chunk": _chunk("ppo_small"),
        "evaluation table": _evaluation_table(),
        **parts(env, state),
    }


def parts(env, state) -> dict:
    """``PARTS`` name -> a function returning that part of ``env.step`` lowered alone, on one game."""
    config = env.config
    actions_in = jax.ShapeDtypeStruct((C.NUM_PLAYERS,), jax.numpy.int32)
    masks = jax.ShapeDtypeStruct((C.NUM_PLAYERS, C.NUM_ACTIONS), jax.numpy.bool_)
    key = jax.random.key(0)
    return {
        "part: actions": lambda: jax.jit(game.apply_actions).lower(state, actions_in),
        "part: fights": lambda: jax.jit(lambda s, k: game.fight_phase(s, k, config)).lower(state, key),
        "part: observation": lambda: jax.jit(lambda s: observation.vector_observation(s, config)).lower(state),
        "part: legal masks": lambda: jax.jit(jax.vmap(actions.legal_mask)).lower(state.players),
        "part: expert bot": lambda: jax.jit(bots.expert_policy).lower(key, state, masks),
        "part: search bot": lambda: jax.jit(search_bot.search_policy).lower(key, state, masks),
    }


def measure(lower) -> dict:
    start = time.perf_counter()
    lowered = lower()
    lower_s = time.perf_counter() - start
    ops = len(_STABLEHLO_OP.findall(lowered.as_text()))
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    hlo = compiled.as_text() or ""
    instructions = sum(1 for line in hlo.splitlines() if " = " in line and not line.lstrip().startswith("//"))
    return {
        "lower_s": round(lower_s, 2),
        "compile_s": round(compile_s, 2),
        "stablehlo_ops": ops,
        "hlo_instructions": instructions,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/compile_budget.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated program names (default: the programs, not the parts; 'parts': the parts of env.step)",
    )
    args = parser.parse_args(argv)
    names = list(NAMES) if args.only is None else [n.strip() for n in args.only.split(",")]
    names = [part for name in names for part in (PARTS if name == "parts" else (name,))]
    unknown = sorted(set(names) - set(NAMES) - set(PARTS))
    if unknown:
        parser.error(f"--only: unknown program(s) {unknown}; choose from {[*NAMES, *PARTS]} or parts")
    jax.config.update("jax_enable_compilation_cache", False)  # every number a cold compile
    start = time.perf_counter()
    jax.block_until_ready(jax.jit(lambda x: x + 1)(1))  # the backend's start-up, outside every program's numbers
    table = programs()
    results = {}
    for name in names:
        print(f"{name}: ", end="", file=sys.stderr, flush=True)
        results[name] = measure(table[name])
        r = results[name]
        print(
            f"lower {r['lower_s']:.1f} s, compile {r['compile_s']:.1f} s, {r['stablehlo_ops']:,} StableHLO ops, "
            f"{r['hlo_instructions']:,} HLO instructions",
            file=sys.stderr,
            flush=True,
        )
    out = {
        "programs": results,
        "backend": jax.default_backend(),
        "jax": jax.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "compilation_cache": False,
        "total_s": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
