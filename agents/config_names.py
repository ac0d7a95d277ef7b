"""How a config field is named, and the message for a name that is none: standard library only.

``agents.config`` holds the fields; this module holds the rules for their names (a short name, ``lr``, or
``GROUP.NAME``, ``hparams.lr``) given the map of short names to groups, so a CLI can refuse a mistyped ``--set`` key
with the library's own one-line message before it imports JAX (``experiments/cli_names.json`` carries the map).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

#: where the unknown-key message sends a person for the names (a CLI puts its own ``--list-fields`` in its place)
FIELD_LIST_HINT = "TrainConfig.field_docs() lists them"
#: names a field once had -> what to write instead (a saved config's file is still read through them)
RENAMED = {"anneal_lr": "lr_schedule=linear", "cosine_lr": "lr_schedule=cosine"}


def field_path(key: str, field_groups: Mapping[str, str]) -> tuple[str, str] | None:
    """(group, field) of a short (``"lr"``) or dotted (``"hparams.lr"``) field name; None for an unknown one.
    ``field_groups``: short name -> its group."""
    if key in field_groups:
        return field_groups[key], key
    group, _, name = key.partition(".")
    return (group, name) if field_groups.get(name, "") == group else None


def suggest(key: str, field_groups: Mapping[str, str]) -> list[str]:
    """Up to 3 names close to the unknown ``key``: for a dotted one, its field under the group's prefix
    (``league.size``: ``league.league_size``) or in its own group (``ppo.lr``: ``hparams.lr``), then the closest dotted
    names; for a short one, the closest short names (difflib)."""
    group, dot, name = key.lower().rpartition(".")
    first = []
    if dot and field_groups.get(f"{group}_{name}") == group:
        first.append(f"{group}.{group}_{name}")
    if dot and name in field_groups:
        first.append(f"{field_groups[name]}.{name}")
    names = [f"{g}.{n}" for n, g in field_groups.items()] if dot else list(field_groups)
    close = difflib.get_close_matches(key.lower(), names, n=3, cutoff=0.6)
    return list(dict.fromkeys(first + close))[:3]


def unknown_message(keys, field_groups: Mapping[str, str], groups: Sequence[str]) -> str:
    """``unknown config key(s)`` with, for each, the closest names (``suggest``), else how the names are made."""
    parts = [
        f"{key!r} (replaced: write {RENAMED[short]})"
        if (short := str(key).rpartition(".")[2]) in RENAMED
        else f"{key!r} (did you mean {' or '.join(close)}?)"
        if (close := suggest(str(key), field_groups))
        else repr(key)
        for key in keys
    ]
    hint = (
        ""
        if all("did you mean" in p or "replaced:" in p for p in parts)
        else f"; a field is named by its short name (lr) or GROUP.NAME (hparams.lr), GROUP one of {', '.join(groups)}: "
        f"{FIELD_LIST_HINT}"
    )
    return f"unknown config key(s) {', '.join(parts)}{hint}"


__all__ = ["FIELD_LIST_HINT", "RENAMED", "field_path", "suggest", "unknown_message"]
