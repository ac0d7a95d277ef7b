"""Shared helpers of the experiment CLIs: playing batches of bot games."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path
from typing import NoReturn

import jax

from agents.config import TrainConfig

#: JAX's persistent compilation cache of the CLIs: ``$JAXGAME_CACHE_DIR`` or ``~/.cache/jaxgame/jax``
#: (``--cache-dir`` overrides, ``--no-cache`` disables).
DEFAULT_CACHE = os.environ.get("JAXGAME_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "jaxgame", "jax"
)


def enable_compilation_cache(cache_dir: str | None) -> str | None:
    """Turn on JAX's persistent compilation cache in ``cache_dir`` (None: leave it off); returns the dir.

    A second run of the same program then loads it instead of compiling (seconds instead of a minute on a CPU).
    """
    if cache_dir is None:
        return None
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(cache_dir))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    return str(cache_dir)


def apply_sets(config: TrainConfig, overrides: dict) -> TrainConfig:
    """``config`` with ``--set`` strings (name -> text) parsed by each field's type and applied; a ``ValueError``
    names the field (unknown name, unparsable text, or a value out of its range)."""
    types = TrainConfig.field_types()
    unknown = sorted(set(overrides) - set(types))
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; valid keys: {', '.join(sorted(types))}")
    return config.with_overrides({name: parse_value(name, types[name], text) for name, text in overrides.items()})


def parse_value(name: str, kind, text: str):
    """Parse one ``--set`` value by the field's type; errors name the field."""
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
        raise ValueError(f"TrainConfig.{name} must be {kind_name.get(kind, kind)}, got {text!r}") from None


def fail(parser, message: str, status: int = 2) -> NoReturn:
    """End a CLI with ONE line on stderr, ``PROG: error: MESSAGE`` (no usage, no traceback); exit ``status``
    (2: bad input, 1: the work failed)."""
    parser.exit(status, f"{parser.prog}: error: {' '.join(str(message).split())}\n")


def quiet_logs() -> None:
    """Warnings as one line each (``warning: ...``) and orbax/absl's informational logging off: what a CLI
    prints on stderr stays readable (a corrupt checkpoint is one warning, not a page of log lines)."""
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"warning: {message}\n"
    logging.getLogger("absl").setLevel(logging.ERROR)  # orbax logs through absl's Python logger


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


def parse_rules(parser, items) -> dict:
    """``--rule NAME=INT`` strings -> {name: int}; a malformed item is a parser error (the names are checked by
    ``jaxgame.make``)."""
    rules = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            rules[name] = int(value)
        except ValueError:
            fail(parser, f"--rule {item!r}: expected NAME=INT")
    return rules


def status(message: str, enabled: bool = True, end: str = "\n") -> None:
    """Print a progress message to stderr at once (stdout stays for the CLIs' JSON)."""
    if enabled:
        print(message, file=sys.stderr, end=end, flush=True)


__all__ = [
    "DEFAULT_CACHE",
    "apply_sets",
    "enable_compilation_cache",
    "fail",
    "quiet_logs",
    "parse_overrides",
    "parse_value",
    "status",
]
