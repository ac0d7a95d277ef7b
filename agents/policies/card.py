"""Model cards of the shipped baselines: ``NAME.MODEL_CARD.md`` beside ``NAME.json``, generated from it.

    text = model_card("ppo_small-v1")         # the card NAME.json gives, as Markdown
    write_card("ppo_small-v1")                 # written beside NAME.json
    stale_cards()                              # the versions whose card is missing or differs from what NAME.json gives
    python -m experiments.baseline card [NAME ...] [--check]

A card says how the version was trained (command, seed, env steps, wall time, hardware), how it placed against each
lineup it was evaluated on (mean placement with its 95% interval, top-1, top-4, games), which lineups it loses to and
its worst one, and the observation it needs (kind, shape, dtype, rules). Everything comes from ``NAME.json`` (its
``config``, ``source`` and ``results``) and the game its config builds; what ``NAME.json`` does not record reads
"not recorded". The card lies outside ``NAME.sha256``: it is derived from files the digest covers, and
regenerating it (a better wording) must never change a shipped version's digest. ``tests/test_baselines.py`` checks
that every shipped card equals what this module writes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.config import TrainConfig
from agents.envs.make import make_game
from agents.policies import baselines
from jaxgame import constants as C

SUFFIX = ".MODEL_CARD.md"
#: the mean placement of a player exactly as strong as its 7 opponents: (1 + 8) / 2
EVEN = (1 + C.NUM_PLAYERS) / 2
_TRAINING_FIELDS = ("command", "machine", "seed", "env_steps", "updates", "wall_s", "train_s", "compile_s")
_EVALUATE_FIELDS = ("command", "machine", "date")


def card_path(name: str, directory: Path | None = None) -> Path:
    """Where version ``name``'s card lives: ``<directory>/NAME.MODEL_CARD.md`` (default: the shipped versions')."""
    return Path(directory or baselines.DIRECTORY) / f"{name}{SUFFIX}"


def observation(config: TrainConfig) -> dict:
    """The observation a policy of ``config`` takes, per seat: ``{"kind", "shape", "dtype", "rules"}`` (shape a
    tuple of ints; dtype a numpy dtype: float32 vectors, uint8 packed pixel frames)."""
    return {
        "kind": config.task.obs,
        "shape": tuple(make_game(config).obs_shape),
        "dtype": np.dtype(np.uint8 if config.task.obs == "pixels" else np.float32),
        "rules": config.rules(),
    }


def _or_missing(value, fmt="{}") -> str:
    return "not recorded" if value is None else fmt.format(value)


def _header(name: str, meta: dict, config: TrainConfig) -> list[str]:
    source = meta.get("source", {})
    league = f", a league of {config.league.league_size} snapshots" if config.league.league_size else ""
    return [
        f"# Model card: {name}",
        "",
        f"<!-- Generated from {name}.json by agents.policies.card: python -m experiments.baseline card {name} -->",
        "",
        f"`{baselines.PREFIX}{name}`: a {config.run.algo.upper()} policy ({config.net.network} "
        f"{'x'.join(map(str, config.net.hidden))}, {config.net.activation}) trained on {config.task.env} "
        "with opponents "
        f"`{config.task.opponents}`{league}; frozen at update {_or_missing(source.get('step'))} of "
        f"{_or_missing(source.get('run'))} on {_or_missing(source.get('frozen'))}. Parameters `{name}.msgpack`, "
        f"the standalone export `{name}/` (`agents.policies.exported_loader`), both checked by `{name}.sha256`.",
    ]


def _training(meta: dict, config: TrainConfig) -> list[str]:
    run = meta.get("results", {}).get("training", {})
    wall = run.get("wall_s")
    minutes = "" if wall is None else f" ({wall / 60:.1f} min)"
    lines = [
        "## Training",
        "",
        f"- command: {_or_missing(run.get('command'), '`{}`')}",
        f"- seed: {run.get('seed', config.run.seed)}",
        f"- env steps: {_or_missing(run.get('env_steps'), '{:,}')} in {_or_missing(run.get('updates'))} updates, "
        f"{config.run.num_envs} envs (configured total_steps: {config.run.total_steps:,})",
        f"- wall time: {_or_missing(wall, '{:.1f} s')}{minutes}; training "
        f"{_or_missing(run.get('train_s'), '{} s')}, compiling {_or_missing(run.get('compile_s'), '{} s')}",
        f"- hardware: {_or_missing(run.get('machine'))}",
    ]
    return lines + [f"- {key}: {value}" for key, value in run.items() if key not in _TRAINING_FIELDS]


def _lineups(evaluate: dict) -> list[tuple[str, dict]]:
    """(opponents, stats) per evaluated lineup, in the order recorded: ``vs_greedy`` -> ``greedy``."""
    return [(key[len("vs_") :], stats) for key, stats in evaluate.items() if key.startswith("vs_")]


def _strength(name: str, meta: dict) -> list[str]:
    evaluate = meta.get("results", {}).get("evaluate", {})
    lines = ["## Strength", ""]
    if not _lineups(evaluate):
        return lines + [f"Not measured: {name}.json records no evaluation."]
    lines += [
        f"{_or_missing(evaluate.get('command'), '`{}`')} on {_or_missing(evaluate.get('machine'))}, "
        f"{_or_missing(evaluate.get('date'))}: the policy in one seat and the lineup in the other 7, each game "
        "seed in every seat rotation. Mean placement (1 first, 8 last) with its 95% interval over the game "
        f"seeds; {EVEN} is an even share.",
        "",
        "| opponents | mean placement | top-1 | top-4 | games |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {lineup} | {s['mean_placement']:.2f} ± {s['ci95']:.2f} | {100 * s['top1']:.1f}% | "
        f"{100 * s['top4']:.1f}% | {s['games']} |"
        for lineup, s in _lineups(evaluate)
    ]
    extra = [
        f"- {key}: {value}"
        for key, value in evaluate.items()
        if key not in _EVALUATE_FIELDS and not key.startswith("vs_")
    ]
    return lines + ([""] + extra if extra else [])


def _losses(meta: dict) -> list[str]:
    rows = _lineups(meta.get("results", {}).get("evaluate", {}))
    lines = ["## What it loses to", ""]
    if not rows:
        return lines + ["Unknown: no lineup was evaluated."]
    losing = [lineup for lineup, s in rows if s["mean_placement"] - s["ci95"] > EVEN]
    level = [lineup for lineup, s in rows if s["mean_placement"] - s["ci95"] <= EVEN <= s["mean_placement"] + s["ci95"]]
    worst, s = max(rows, key=lambda row: row[1]["mean_placement"])
    lines.append(f"- loses to (95% interval worse than {EVEN}): {', '.join(losing) or 'none of the measured lineups'}")
    lines.append(f"- level with (95% interval contains {EVEN}): {', '.join(level) or 'none of the measured lineups'}")
    lines.append(
        f"- worst measured lineup: {worst}, mean placement {s['mean_placement']:.2f} ± {s['ci95']:.2f}, "
        f"first in {100 * s['top1']:.1f}% of games (an even share: {100 / C.NUM_PLAYERS:.1f}%), top-4 in "
        f"{100 * s['top4']:.1f}% (an even share: {100 * (C.NUM_PLAYERS // 2) / C.NUM_PLAYERS:.1f}%)"
    )
    return lines + ["", "Lineups not in the table above (mixed tables, other trained policies) were not measured."]


def _observation(config: TrainConfig) -> list[str]:
    obs = observation(config)
    rules = ", ".join(f"{k}={v}" for k, v in obs["rules"].items())
    return [
        "## Observation",
        "",
        f"- kind: {obs['kind']}",
        f"- shape and dtype, per seat: {obs['dtype'].name}[{', '.join(map(str, obs['shape']))}]",
        f"- actions: {C.NUM_ACTIONS}, with a bool[{C.NUM_ACTIONS}] mask of the legal ones",
        f"- rules: {rules}",
        f'- the game that gives it: `jaxgame.make("autochess", obs="{obs["kind"]}", {rules})`',
    ]


def model_card(name: str, meta: dict | None = None, directory: Path | None = None) -> str:
    """Version ``name``'s card as Markdown, from ``meta`` (default: its ``NAME.json`` in ``directory``)."""
    meta = baselines.describe(name, directory) if meta is None else meta
    config = TrainConfig.from_dict(meta["config"])
    extra = {k: v for k, v in meta.get("results", {}).items() if k not in ("training", "evaluate")}
    sections = [
        _header(name, meta, config),
        _training(meta, config),
        _strength(name, meta),
        _losses(meta),
        _observation(config),
    ]
    if extra:
        sections.append(["## Also recorded", "", *(f"- {key}: {value}" for key, value in extra.items())])
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


def write_card(name: str, directory: Path | None = None) -> Path:
    """Write version ``name``'s card beside its ``NAME.json`` in ``directory``; returns its path."""
    path = card_path(name, directory)
    path.write_text(model_card(name, directory=directory))
    return path


def stale_cards(directory: Path | None = None) -> list[str]:
    """The versions in ``directory`` whose card is missing or differs from what their ``NAME.json`` gives."""
    return [
        name
        for name in baselines.available(directory)
        if not card_path(name, directory).is_file()
        or card_path(name, directory).read_text() != model_card(name, directory=directory)
    ]


__all__ = ["EVEN", "SUFFIX", "card_path", "model_card", "observation", "stale_cards", "write_card"]
