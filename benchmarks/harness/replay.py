"""``--what replay``: recording one whole game of a lineup (``agents.replays.record``), the first call (compiling
included) and then the same game again, split into the parts of ``record.record_game``.

JSON fields (``bench_replay``):
  * the game: ``players`` (the 8 lineup positions' specs, seat 0 first), ``seed``, ``rules`` (the ``--set`` game
    rules of a game of bots, {} otherwise), ``steps`` (decision steps, each of 8 seats, the last included),
    ``fight_steps``, ``fights`` (fights recorded tick by tick), ``finished``, ``placements`` (each seat's final
    rank, 1 = first), ``record_bytes`` (the replay file ``agents.replays.format.write`` writes), ``same_game``
    (every call recorded the same actions and placements);
  * ``first``: the first call, in seconds per part: ``play_s`` (``record.play_game``: the game in one compiled
    program per lineup's participants, its states brought to the host), ``fights_s``
    (``fights.fights_of_game`` and ``as_json_list``: every fight tick by tick), ``to_record_s``
    (``record.to_record``: the JSON-ready record), ``write_s`` (``format.write`` to a temporary file), ``total_s``;
    ``compiles`` and ``compile_s``: per part, the XLA compilations during it (JAX's backend-compile events: count,
    seconds);
  * ``again``: the same game recorded ``repeats`` more times by the same calls: per part ``{"best", "median"}``
    seconds (``play_s`` ... ``total_s``), and ``compiles``/``compile_s`` per part summed over the repeats;
  * ``compiled_again``: whether anything compiled during the repeats (false: a second call of the same lineup
    reuses the compiled programs);
  * ``steps_per_s``: ``steps`` / ``play_s`` of the first call (``first``) and of the repeats (``best``,
    ``median``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from jax import monitoring

import jaxgame
from agents.replays import fights as fights_lib
from agents.replays import format as replay_format
from agents.replays import record
from experiments.common import status

#: the default lineup: 8 policies (one spec for every seat)
DEFAULT_PLAYERS = "baseline:ppo_small-v1"
#: the default number of calls after the first
DEFAULT_REPEATS = 3
#: the parts of a ``record_game`` call, in order
PARTS = ("play", "fights", "to_record", "write")
#: JAX's event for one XLA compilation (``jax._src.dispatch.BACKEND_COMPILE_EVENT``), with its duration
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class _Compilations:
    """The XLA compilations (seconds each) while the context is open."""

    def __init__(self):
        self.seconds: list[float] = []

    def __call__(self, event: str, duration: float, **kwargs) -> None:
        if event == _COMPILE_EVENT:
            self.seconds.append(duration)

    def __enter__(self):
        monitoring.register_event_duration_secs_listener(self)
        return self

    def __exit__(self, *exc):
        monitoring.unregister_event_duration_listener(self)


def _record_once(players, seed: int, rules: dict, path: Path) -> tuple[dict, dict, dict, int]:
    """One ``record_game(players, seed, rules)``, its parts timed as it runs them, then written to ``path``:
    (seconds per part, compilations per part (list of seconds), the record, bytes written)."""
    seconds, compiles = {}, {}

    def timed(part, fn, *args):
        with _Compilations() as compiled:
            start = time.perf_counter()
            value = fn(*args)
            seconds[part] = time.perf_counter() - start
        compiles[part] = compiled.seconds
        return value

    def fights(trace, meta):  # record_game's fights: the table of the record's rules
        table = jaxgame.AutoChessEnv(jaxgame.GameConfig(**meta["rules"]))
        return fights_lib.as_json_list(fights_lib.fights_of_game(table, trace.states, trace.actions))

    trace, meta = timed("play", record.play_game, players, seed, rules or None)
    fought = timed("fights", fights, trace, meta)
    game = timed("to_record", record.to_record, trace, meta, fought)
    size = timed("write", replay_format.write, game, path)
    return seconds, compiles, game, size


def _seconds(x: float) -> float:
    return round(x, 4)


def _compile_fields(per_call: list[dict]) -> dict:
    """``compiles`` (count) and ``compile_s`` per part, summed over the calls' compilations ``per_call``."""
    return {
        "compiles": {p: sum(len(c[p]) for c in per_call) for p in PARTS},
        "compile_s": {p: _seconds(float(sum(sum(c[p]) for c in per_call))) for p in PARTS},
    }


def _line(seconds: dict, compiles: dict, steps: int) -> str:
    """One call's parts for stderr."""
    parts = ", ".join(
        f"{p} {seconds[p]:.2f} s" + (f" ({len(compiles[p])} compiles, {sum(compiles[p]):.1f} s)" if compiles[p] else "")
        for p in PARTS
    )
    return f"{parts}; {steps / seconds['play']:,.0f} steps/s of the game"


def bench_replay(players: list[str], seed: int, rules: dict, repeats: int, progress: bool) -> dict:
    """The first ``record_game`` call of ``players`` (8 specs) at ``seed`` and ``rules`` (game rules, bots only),
    then ``repeats`` more of the same game; the fields: the module docstring."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "game.json"
        status("[replay first call] compiling and playing ...", progress, end="")
        seconds, compiles, first, size = _record_once(players, seed, rules, path)
        steps = first["steps"]
        status(f" {_line(seconds, compiles, steps)}", progress)
        calls, same = [], True
        for i in range(repeats):
            status(f"[replay again {i + 1}/{repeats}] ", progress, end="")
            again = _record_once(players, seed, rules, path)
            calls.append(again)
            same &= again[2]["actions"] == first["actions"] and again[2]["placements"] == first["placements"]
            status(_line(again[0], again[1], steps), progress)
    first_s = {f"{p}_s": _seconds(seconds[p]) for p in PARTS}
    first_s["total_s"] = _seconds(sum(seconds.values()))
    timed = {f"{p}_s": [c[0][p] for c in calls] for p in PARTS}
    timed["total_s"] = [sum(c[0].values()) for c in calls]
    again_s = {k: {"best": _seconds(min(v)), "median": _seconds(statistics.median(v))} for k, v in timed.items()}
    again_compiles = _compile_fields([c[1] for c in calls])
    return {
        "players": list(players),
        "seed": seed,
        "rules": dict(rules),
        "repeats": repeats,
        "steps": steps,
        "fight_steps": int(sum(first["fight"])),
        "fights": len(first["fights"] or []),
        "finished": first["finished"],
        "placements": first["placements"],
        "record_bytes": size,
        "same_game": same,
        "first": {**first_s, **_compile_fields([compiles])},
        "again": {**again_s, **again_compiles},
        "compiled_again": any(again_compiles["compiles"].values()),
        "steps_per_s": {
            "first": round(steps / seconds["play"], 1),
            "best": round(steps / min(timed["play_s"]), 1),
            "median": round(steps / statistics.median(timed["play_s"]), 1),
        },
    }
