"""Shared helpers of the experiment CLIs: the command-line convention (the usage name, the flags a release removed, game
rules as ``--set``, ``--games``), one-line errors, the compilation cache and ``--set`` config overrides."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import logging
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

# Nothing here imports JAX (tests/test_cli.py checks it): a CLI parses and checks its arguments with these before
# it imports the library, so a bad one is answered in a fraction of a second. What needs JAX is imported where used.
from agents import config_names
from agents.config_names import FIELD_LIST_HINT
from agents.policies.specs import PLAYER_BOTS, PolicyError, parse_spec
from agents.run.signals import CtrlC
from agents.storage.outputs import UnwritableOutputError, check_writable
from agents.storage.run_dir import TOOLS, RunError
from agents.utils import compile_cache

if TYPE_CHECKING:
    from agents.config import TrainConfig

#: JAX's persistent compilation cache of the CLIs (and of the library: ``agents.utils.compile_cache``):
#: ``$JAXGAME_CACHE_DIR`` or ``~/.cache/jaxgame/jax`` (``--cache-dir`` overrides, ``--no-cache`` disables).
DEFAULT_CACHE = compile_cache.DEFAULT_CACHE


def enable_compilation_cache(cache_dir: str | None) -> str | None:
    """Turn on JAX's persistent compilation cache in ``cache_dir`` (None: leave it off, and the library's default
    with it); returns the dir.

    A second run of the same program then loads it instead of compiling (seconds instead of a minute on a CPU).
    """
    if cache_dir is None:
        compile_cache.disable()
        return None
    return compile_cache.enable(cache_dir)


def apply_sets(config: TrainConfig, overrides: dict) -> TrainConfig:
    """``config`` with ``--set`` strings (short or dotted name -> text) parsed and applied:
    ``TrainConfig.with_sets``; a ``ValueError`` names the field (and, for an unknown one, the CLI's
    ``--list-fields`` where the library's message names ``TrainConfig.field_docs()``)."""
    try:
        return config.with_sets(overrides)
    except ValueError as err:
        text = str(err).replace(FIELD_LIST_HINT, "python -m experiments.train --list-fields lists them")
        if text == str(err):
            raise
        raise ValueError(text) from None


def fail(parser, message: str, status: int = 2) -> NoReturn:
    """End a CLI with ONE line on stderr, ``PROG: error: MESSAGE`` (no usage, no traceback); exit ``status``
    (2: bad input, 1: the work failed)."""
    parser.exit(status, f"{parser.prog}: error: {' '.join(str(message).split())}\n")


def resume_hint(err, out) -> str:
    """``err``'s text (a ``RunError``), and where the library says how to continue a run (``FUNCTION(...,
    resume=True)``, ``agents.storage.run_dir.TOOLS``), the command that does it."""
    message = str(err)
    for tool, function in TOOLS.items():
        if f"{function}(..., resume=True)" in message:
            return f"{message} (the command: {prog_name(f'experiments.{tool}')} --out {out} --resume)"
    return message


def run_job(parser, job, out, kept: str = "the checkpoints completed before it are kept", bad_input: tuple = ()):
    """``job()``'s result, for a CLI whose work is a run directory ``out`` that ``--out OUT --resume`` continues;
    each way it can end early is one line on stderr (``fail``): a non-finite run, no good checkpoint or a
    checkpoint of another config exit 1; a ``RunError`` (and each of ``bad_input``) exits 2 with the command that
    continues the run where the library names one (``resume_hint``); an ``OSError`` (a full disk) exits 1 saying
    what is ``kept`` and how to continue; Ctrl-C outside the compile and the chunks (``StopSignals`` covers
    those) exits 130."""
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError  # orbax: imported late
    from agents.utils.health import NonFiniteError

    again = f"continue with --out {out} --resume"
    try:
        return job()
    except (NonFiniteError, NoGoodCheckpointError, CheckpointMismatchError) as err:  # before ValueError's kin
        fail(parser, err, status=1)
    except (RunError, *bad_input) as err:
        fail(parser, resume_hint(err, out))
    except OSError as err:
        fail(parser, f"{err}; {kept}: {again}", status=1)
    except KeyboardInterrupt:
        fail(parser, f"interrupted; {again}", status=130)


def handles_ctrl_c(main):
    """Decorate a CLI's ``main``: while it runs (in the main thread), Ctrl-C is ``CtrlC``'s, and a
    ``KeyboardInterrupt`` that reaches ``main``'s caller is one line, ``PROG: error: interrupted``, exit 130. The
    previous handler is put back when ``main`` returns (tests call the CLIs in one process)."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return main(*args, **kwargs)
        module = main.__module__ if main.__module__ != "__main__" else Path(sys.argv[0]).stem
        prog = prog_name(module if module.startswith("experiments.") else f"experiments.{module}")
        ctrl_c = CtrlC(prog)
        previous = signal.signal(signal.SIGINT, ctrl_c)
        try:
            return main(*args, **kwargs)
        except KeyboardInterrupt:
            sys.stderr.write(f"{prog}: error: interrupted\n")
            raise SystemExit(130) from None
        finally:
            ctrl_c.closed = True
            signal.signal(signal.SIGINT, previous)

    return wrapped


def quiet_logs() -> None:
    """Warnings as one line each (``warning: ...``) and orbax/absl's informational logging off: what a CLI
    prints on stderr stays readable (a corrupt checkpoint is one warning, not a page of log lines)."""
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"warning: {message}\n"
    logging.getLogger("absl").setLevel(logging.ERROR)  # orbax logs through absl's Python logger
    logging.getLogger("absl").addFilter(_echo_filter)  # the same filter object: added once
    logging.getLogger("asyncio").addFilter(_echo_filter)  # "exception was never retrieved" of orbax's coroutines
    threading.excepthook = _drop_echoes(threading.excepthook, lambda args: args.exc_value)
    sys.unraisablehook = _drop_echoes(sys.unraisablehook, lambda args: args.exc_value)


# What orbax's/tensorstore's own threads print about a failed write (a full disk) or read (a corrupt step), its
# coroutines' unretrieved exceptions (asyncio's logger) and its coroutines left to Python's shutdown: the main
# thread raises the same failure, which the CLI reports in one line (``agents.storage.checkpoints.disk_error``),
# so these echoes would only bury it under pages of tracebacks.
_ECHOES = ("os_error_code=", "No space left on device", "Event loop is closed", "Python is likely shutting down")


def _echo_of_a_reported_error(text: str) -> bool:
    return any(echo in text for echo in _ECHOES)


def _echo_filter(record: logging.LogRecord) -> bool:
    return not _echo_of_a_reported_error(record.getMessage())


def _drop_echoes(hook, exception_of):
    """``hook`` (``threading.excepthook`` / ``sys.unraisablehook``) minus the echoes above (``hook`` itself when it
    already drops them: ``quiet_logs`` runs once per CLI call, several times in one test process)."""
    if getattr(hook, "drops_echoes", False):
        return hook

    def filtered(args):
        if not _echo_of_a_reported_error(str(exception_of(args))):
            hook(args)

    filtered.drops_echoes = True
    return filtered


def parse_overrides(parser, items, env=None) -> dict:
    """``--set KEY=VALUE`` strings (and ``--env``) -> {field: string}; a malformed item is a parser error."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(parser, f"--set {item!r}: expected KEY=VALUE")
        overrides[key.strip()] = value
    if env:
        overrides["env"] = env
    return overrides


def parse_phase_sets(parser, items) -> dict:
    """``--set PHASE.FIELD=VALUE`` strings -> {phase: {field: text}}; malformed ones are parser errors. The texts
    are parsed by their fields' types in ``agents.pipeline.runner.phase_overrides``."""
    sets: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        phase, dot, field = key.strip().partition(".")
        if not sep or not dot or not phase or not field:
            fail(parser, f"--set {item!r}: expected PHASE.FIELD=VALUE (e.g. student.total_steps=409600)")
        sets.setdefault(phase, {})[field] = value
    return sets


def check_field_names(parser, keys) -> None:
    """The library's one-line message for ``--set`` keys that name no config field, from ``experiments/names``'s
    copy of the names (no JAX): the values are checked by their types once the library is imported."""
    from experiments.names import names as _names

    field_groups = _names()["field_groups"]
    unknown = [key for key in keys if config_names.field_path(key, field_groups) is None]
    if unknown:
        message = config_names.unknown_message(unknown, field_groups, _names()["groups"])
        fail(
            parser,
            message.replace(config_names.FIELD_LIST_HINT, "python -m experiments.train --list-fields lists them"),
        )


def check_rule_names(parser, items, rule_names) -> dict:
    """``--set NAME=VALUE`` strings of game rules -> {name: text}: each NAME one of ``rule_names`` (``game.NAME``,
    the training config's group, names them too); anything else (a training config field, a typo: with the
    closest rule names) is a parser error. Needs no JAX: a CLI calls it with ``experiments.names``' copy of the
    rule names before it imports the library; ``parse_rules`` then parses the values."""
    rules = {}
    for item in items:
        key, sep, text = item.partition("=")
        name = key.strip()
        group, dot, field = name.partition(".")
        if dot and group in ("game", "rules"):
            name = field
        if not sep or not name:
            fail(parser, f"--set {item!r}: expected NAME=VALUE (a game rule, e.g. max_rounds=20)")
        if name not in rule_names:
            close = difflib.get_close_matches(name, rule_names, n=3)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            fail(
                parser,
                f"--set {key.strip()}: not a game rule ({hint}rules: {', '.join(rule_names)}); this command "
                "takes game rules only, and a policy plays with the rules it trained with",
            )
        rules[name] = text
    return rules


def parse_rules(parser, items) -> dict:
    """``--set NAME=VALUE`` strings of game rules (``GameConfig`` fields, ``check_rule_names``) -> {name: value},
    each parsed by the rule's type and the whole set validated by ``GameConfig``; a bad one is a parser error."""
    from agents.config import parse_value
    from jaxgame.config import GameConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GameConfig)}
    rules = {}
    for name, text in check_rule_names(parser, items, list(defaults)).items():
        try:
            rules[name] = parse_value(name, type(defaults[name]), text, owner="GameConfig")
        except ValueError as err:
            fail(parser, f"--set {f'{name}={text}'!r}: {err}")
    try:
        GameConfig.from_overrides(**rules)
    except (TypeError, ValueError) as err:
        fail(parser, f"--set: {err}")
    return rules


def status(message: str, enabled: bool = True, end: str = "\n") -> None:
    """Print a progress message to stderr at once (stdout stays for the CLIs' JSON)."""
    if enabled:
        print(message, file=sys.stderr, end=end, flush=True)


#: The console scripts (pyproject.toml's ``[project.scripts]``, tests/test_cli.py checks they agree) -> the module
#: each one runs, as ``python -m MODULE``.
SCRIPTS = {
    "jaxgame-train": "experiments.train",
    "jaxgame-sweep": "experiments.sweep",
    "jaxgame-evaluate": "experiments.evaluate",
    "jaxgame-rate": "experiments.rate",
    "jaxgame-ladder": "experiments.ladder",
    "jaxgame-record": "experiments.record",
    "jaxgame-plot": "experiments.plot",
    "jaxgame-render": "experiments.render",
    "jaxgame-export": "experiments.export",
    "jaxgame-baseline": "experiments.baseline",
    "jaxgame-pipeline": "experiments.pipeline",
    "jaxgame-reproduce": "experiments.reproduce",
    "jaxgame-replay": "experiments.replay",
    "jaxgame-play": "experiments.play",
}

#: what a player can be, in every command's ``--help``: the bots (from the code), a baseline, a run
PLAYER_KINDS = " / ".join([*PLAYER_BOTS, "baseline:NAME", "RUN_DIR[:STEP]", "EXPORT_DIR"])

#: ``--games``' meaning in every command that seats players (its ``--help`` says it).
GAMES_HELP = "game seeds; each is played in 8 seat rotations (N x 8 games)"


def prog_name(module: str) -> str:
    """The command a CLI's ``usage:`` line names: its console script (``jaxgame-train``) when this process runs as
    that script, else ``python -m MODULE``."""
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    script = script.removesuffix(".exe").removesuffix("-script.py")
    return script if SCRIPTS.get(script) == module else f"python -m {module}"


#: flags an earlier version accepted as aliases, removed since: an unrecognized one's error names its replacement
REMOVED_FLAGS = {
    "--run-dir": "--out",
    "--dir": "--out",
    "--rule": "--set",
    "--greedy-policy": "--deterministic",
    "--checkpoint": "the positional player RUN_DIR[:STEP]",
    "--step": "the positional player RUN_DIR:STEP",
}


class RemovedFlag(argparse.Action):
    """A flag a release removed, still declared (hidden from ``--help``, ``add_removed_flag``): given, with or
    without a value, it is the usage error ``FLAG was removed: use REPLACEMENT`` at once, before any other check
    (a required argument it replaced included)."""

    def __init__(self, option_strings, dest, replacement: str, **kwargs):
        super().__init__(option_strings, dest, nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        self.replacement = replacement

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{self.option_strings[0]} was removed: use {self.replacement}")


def add_removed_flag(parser, flag: str, replacement: str) -> None:
    """Declare ``flag``, removed, as ``RemovedFlag``: its use is a one-line usage error naming ``replacement``."""
    parser.add_argument(flag, action=RemovedFlag, replacement=replacement)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are two lines on stderr, ``PROG: error: MESSAGE`` and a pointer to
    ``--help`` (not argparse's multi-line usage block); exit 2. Its sub-command parsers are ``Parser`` too. An
    unrecognized flag of ``REMOVED_FLAGS`` is named with what replaced it."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments:"):
            flags = [word.split("=")[0] for word in message.split()[2:]]
            removed = [f"{flag} was removed: use {REMOVED_FLAGS[flag]}" for flag in flags if flag in REMOVED_FLAGS]
            message += f" ({'; '.join(removed)})" if removed else ""
        self.exit(2, f"{self.prog}: error: {' '.join(str(message).split())}\n(see {self.prog} --help)\n")


def make_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The ``ArgumentParser`` of the CLI ``module``: its own name in ``usage:`` (``prog_name``), ``doc`` as the
    description (kept as written); a usage error is one line and a pointer to ``--help`` (``Parser``)."""
    return Parser(prog=prog_name(module), description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def preset_name(names, list_flag: str = "--list-presets", kind: str = "preset"):
    """An argparse ``type`` for a preset option: the name when it is one of ``names``, else a usage error naming the
    closest presets ("did you mean ...?", as for config fields) and ``list_flag``; ``kind`` names what is asked
    for ("preset", "pipeline preset")."""
    names = sorted(names)

    def check(value: str) -> str:
        if value in names:
            return value
        close = difflib.get_close_matches(value, names, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else f"; {kind}s: {', '.join(names)}"
        raise argparse.ArgumentTypeError(f"unknown {kind} {value!r}{hint} ({list_flag} prints them with their values)")

    check.__name__ = "preset"
    return check


def player_spec(parser, spec: str, flag: str = ""):
    """``agents.policies.load.parse_spec(spec)``, or the CLI's one-line error naming the unknown player (with the
    closest valid ones) or the bad STEP. ``flag``: the option that gave it (e.g. ``--vs``), for the message."""
    try:
        return parse_spec(spec)
    except PolicyError as err:
        fail(parser, f"{flag}: {err}" if flag else err)


def parse_seeds(parser, text: str) -> int | list[int]:
    """``--seeds``: a count (``"3"`` -> 3) or a comma-separated list (``"0,5,7"`` -> [0, 5, 7]); anything else is
    the CLI's one-line error. What a count means is the CLI's (sweep: from the config's seed; reproduce: from 0)."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds:
        fail(parser, f"--seeds {text!r}: expected a count or a comma-separated list of ints")
    return seeds[0] if len(seeds) == 1 and "," not in text else seeds


def player_list(parser, text: str, flag: str, counts: tuple[int, ...]) -> list[str]:
    """``text`` (e.g. ``--vs``) as its comma-separated player specs; the CLI's one-line error unless there
    are ``counts`` of them, each a known player (the closest valid names for an unknown one)."""
    players = [p.strip() for p in text.split(",")]
    if len(players) not in counts or not all(players):
        fail(parser, f"{flag} needs {' or '.join(map(str, counts))} comma-separated players, got {len(players)}")
    for player in dict.fromkeys(players):
        player_spec(parser, player, flag)
    return players


#: ``--vs``: the opponents of a table's PLAYER, the same in every command that seats players
VS_HELP = "one player for the 7 other seats or 7 comma-separated, in seat order"


def add_lineup(parser, who: str) -> None:
    """A table's lineup, the same in every command that plays one: the positional ``PLAYER`` (seat 0's player,
    described as ``who``) and ``--vs`` (required: its opponents, ``VS_HELP``); ``lineup`` reads them."""
    parser.add_argument("player", metavar="PLAYER", help=f"{who}: {PLAYER_KINDS}")
    parser.add_argument(
        "--vs",
        required=True,
        metavar="PLAYER[,PLAYER x6]",
        help=f"the opponents of PLAYER: {VS_HELP} (PLAYER --vs PLAYER: the same player in all 8 seats)",
    )


def lineup(parser, player: str, vs: str) -> list[str]:
    """``PLAYER`` and ``--vs`` (``add_lineup``) as the 8 seats' players, seat 0 (PLAYER) first; the CLI's one-line
    error for an unknown player (with the closest valid ones), a list as PLAYER or a count of ``--vs`` players other
    than 1 or 7."""
    from experiments.names import names

    seats = names()["num_players"]
    player = player.strip()
    if "," in player:
        fail(parser, f"PLAYER {player!r}: one player, seat 0's; the others are --vs's ({VS_HELP})")
    player_spec(parser, player)
    others = player_list(parser, vs, "--vs", (1, seats - 1))
    return [player, *(others * (seats - 1) if len(others) == 1 else others)]


def add_training_vs(parser) -> None:
    """``--vs`` of the training CLIs (train, sweep): the config's ``task.opponents``, the seats the learner plays
    against (``training_vs`` applies it)."""
    parser.add_argument(
        "--vs",
        metavar="OPPONENTS",
        help="who the learner (seat 0) plays: the config's task.opponents, as --set opponents=... sets it: self "
        "(self-play), random, greedy or expert for the 7 other seats, 7 comma-separated of them (seat 0 is the "
        "learner's), or all 8 seats' (at least one self)",
    )


def training_vs(parser, vs: str | None, overrides: dict) -> dict:
    """``overrides`` (``parse_overrides``) with ``--vs`` (``add_training_vs``) as ``opponents``: its text as given,
    or 7 comma-separated names after ``self`` (the learner's seat 0); giving it and ``--set opponents=...`` too is
    the CLI's one-line error. The names are checked by the config, as ``--set``'s are."""
    if vs is None:
        return overrides
    from experiments.names import names

    field_groups = names()["field_groups"]
    both = [key for key in overrides if config_names.field_path(key, field_groups) == ("task", "opponents")]
    if both:
        fail(parser, f"--vs sets task.opponents, and so does --set {both[0]}=...: give one of them")
    texts = [name.strip() for name in vs.split(",")]
    seats = names()["num_players"]
    return {**overrides, "opponents": ",".join(["self", *texts]) if len(texts) == seats - 1 else vs}


def add_quiet(parser) -> None:
    """``--quiet``, the same in every CLI: nothing on stderr but warnings and errors (no progress, bars or tables)."""
    parser.add_argument(
        "--quiet", action="store_true", help="no progress messages, bars or tables on stderr (errors still are)"
    )


def add_deterministic(parser, who: str = "policies") -> None:
    """``--deterministic``, the same in every CLI: ``who`` play their most likely legal action instead of a sample."""
    parser.add_argument(
        "--deterministic", action="store_true", help=f"{who} play their most likely legal action instead of sampling"
    )


def add_rule_sets(parser, of_bots: bool = True) -> None:
    """``--set RULE=VALUE``, the same in every CLI that plays games: a game rule (``check_rule_names``, then
    ``parse_rules``); ``of_bots``: it applies to games of bots only (policies play with the rules they trained with)."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="RULE=VALUE",
        help=f"{'games of bots: ' if of_bots else ''}a game rule, e.g. --set max_rounds=20 (repeatable)",
    )


def add_game_args(parser) -> None:
    """The options of a CLI that plays games of players: ``--deterministic``, ``--set RULE=VALUE`` (games of bots),
    ``--quiet`` and the compilation cache."""
    add_deterministic(parser)
    add_rule_sets(parser)
    add_quiet(parser)
    add_cache_args(parser)


def check_out(parser, path, kind: str = "dir", flag: str = "--out") -> None:
    """The CLI's one-line error (exit 2) unless ``path`` can be written as a ``kind`` (``"dir"`` or ``"file"``,
    ``agents.storage.outputs.check_writable``); creates nothing. Every CLI that writes calls it before any work."""
    try:
        check_writable(path, kind, flag)
    except UnwritableOutputError as err:
        fail(parser, err)


def add_cache_args(parser) -> None:
    """``--cache-dir`` and ``--no-cache``: JAX's persistent compilation cache (``enable_compilation_cache``)."""
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"JAX compilation cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")


__all__ = [
    "DEFAULT_CACHE",
    "GAMES_HELP",
    "PLAYER_KINDS",
    "SCRIPTS",
    "VS_HELP",
    "Parser",
    "RemovedFlag",
    "add_cache_args",
    "add_deterministic",
    "add_lineup",
    "add_quiet",
    "add_removed_flag",
    "add_rule_sets",
    "add_training_vs",
    "apply_sets",
    "check_out",
    "enable_compilation_cache",
    "fail",
    "lineup",
    "make_parser",
    "parse_overrides",
    "check_field_names",
    "check_rule_names",
    "parse_rules",
    "player_spec",
    "preset_name",
    "prog_name",
    "quiet_logs",
    "resume_hint",
    "status",
    "training_vs",
]
