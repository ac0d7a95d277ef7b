"""Player specs without JAX: what a command's players may be, and the one-line error for one that is none.

A player spec is a scripted bot (``PLAYER_BOTS``), ``baseline:NAME`` (a shipped baseline policy,
``agents.policies.baselines``), ``RUN_DIR`` / ``RUN_DIR:STEP`` (a training run's policy at its latest good
checkpoint, or at update STEP), or ``EXPORT_DIR`` (a policy ``experiments.export`` wrote; ``agents.policies.load``).
Only the standard library is imported here, so every CLI refuses a mistyped player before it imports JAX
(``agents.policies.load`` re-exports these names).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

#: the scripted bots of the in-run evaluations (``agents.arena.evaluation.OPPONENTS``: a bot there is computed at
#: every step and logged) and of the tables' bot order
TABLE_BOTS = ("random", "greedy", "expert")
#: every scripted bot a player spec may name (``jaxgame.all_bots.BOTS``): ``TABLE_BOTS``, then the bots that join a
#: table only when named (``expert_public``: the expert on public information, docs/observation.md; ``search``:
#: ``expert_public`` that tries its board moves in the game's combat first, ``jaxgame.search_bot``)
PLAYER_BOTS = (*TABLE_BOTS, "expert_public", "search")
#: the prefix of a baseline in a player spec, and where the shipped versions live (``agents.policies.baselines``)
BASELINE_PREFIX = "baseline:"
BASELINE_DIRECTORY = Path(__file__).resolve().parent / "baseline_policies"


class PolicyError(ValueError):
    """A policy cannot be loaded or cannot play as asked."""


def baseline_directory() -> Path:
    """``agents.policies.baselines.DIRECTORY`` where that module is loaded (a program or a test may point it
    elsewhere), else the package's own ``BASELINE_DIRECTORY``."""
    loaded = sys.modules.get("agents.policies.baselines")
    return Path(getattr(loaded, "DIRECTORY", BASELINE_DIRECTORY))


def available_baselines(directory: Path | None = None) -> list[str]:
    """The shipped versions' names, sorted (a ``NAME.json`` beside its ``NAME.msgpack``)."""
    return sorted(
        p.stem for p in Path(directory or baseline_directory()).glob("*.json") if p.with_suffix(".msgpack").exists()
    )


def parse_spec(spec: str) -> tuple[str, int | None] | str:
    """A bot name, or (run_dir, step or None) for ``RUN_DIR[:STEP]`` (``("baseline:NAME", None)`` for a
    baseline: ``load_policy`` takes either).

    Every player a command is given passes here first, so a bad one is refused before any work, in one line
    (``PolicyError``): a spec that is neither a bot, a shipped ``baseline:NAME`` nor an existing path names the
    closest valid players, and ``RUN_DIR:STEP`` with a STEP that is not an int says so."""
    spec = str(spec).strip()
    if spec in PLAYER_BOTS:
        return spec
    if spec.startswith(BASELINE_PREFIX):
        name = spec[len(BASELINE_PREFIX) :]
        shipped = available_baselines()
        if name not in shipped:
            raise PolicyError(
                f"no baseline {name!r}{_closest(name, shipped)} (shipped: {', '.join(shipped) or 'none'})"
            )
        return spec, None
    if spec and Path(spec).exists():
        return spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and head and Path(head).exists():
        if not tail.isdigit():
            raise PolicyError(f"{spec!r}: STEP must be an int (RUN_DIR:STEP, an update number), got {tail!r}")
        return head, int(tail)
    run_dir = head if sep and tail.isdigit() else spec
    raise PolicyError(
        f"unknown player {spec!r}: not a bot, baseline:NAME or existing run directory"
        f"{_closest(run_dir, _player_names(run_dir))} (bots: {', '.join(PLAYER_BOTS)}; baselines: "
        f"{', '.join(BASELINE_PREFIX + b for b in available_baselines()) or 'none'})"
    )


def is_baseline(spec) -> bool:
    """Whether ``spec`` names a shipped baseline (``baseline:NAME``)."""
    return str(spec).startswith(BASELINE_PREFIX)


def lineup_of(spec: str) -> list[str]:
    """The 7 opponents of a lineup spec: one player for all 7 seats, or 7 comma-separated players."""
    names = [n.strip() for n in str(spec).split(",")]
    if len(names) == 1 and names[0]:
        return names * 7
    if len(names) != 7 or not all(names):
        raise PolicyError(f"lineup {spec!r}: one player for all 7 seats or 7 comma-separated players")
    return names


def check_player(spec: str) -> tuple[str, int | None] | str:
    """``parse_spec``: the player ``spec`` parsed, or ``PolicyError`` (one line) for an unknown one."""
    return parse_spec(spec)


def _closest(name: str, candidates) -> str:
    """``"; did you mean A or B?"`` for the candidates closest to ``name`` (difflib), else ``""``."""
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _player_names(spec: str) -> list[str]:
    """The names a mistyped player may have meant: the bots, the baselines and, for a path, its existing
    siblings (directories in the nearest parent that exists)."""
    names = [*PLAYER_BOTS, *(BASELINE_PREFIX + b for b in available_baselines())]
    parent = Path(spec).parent
    if str(parent) not in ("", ".") or "/" in spec:
        if parent.is_dir():
            try:
                names += [str(p) for p in sorted(parent.iterdir())[:1000] if p.is_dir()]
            except OSError:
                pass
    return names


__all__ = [
    "BASELINE_DIRECTORY",
    "BASELINE_PREFIX",
    "PLAYER_BOTS",
    "TABLE_BOTS",
    "PolicyError",
    "available_baselines",
    "check_player",
    "is_baseline",
    "lineup_of",
    "parse_spec",
]
