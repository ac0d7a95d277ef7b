"""``TrainConfig``'s per-field docs (``field_docs``) and loading configs saved by older versions. No JAX compiling."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agents import config as config_module
from agents.config import TrainConfig

FIELDS = [f.name for f in dataclasses.fields(TrainConfig)]
RANGES = {**config_module._INT_RANGES, **config_module._FLOAT_RANGES}


def test_every_field_has_a_one_line_doc():
    docs = TrainConfig.field_docs()
    assert list(docs) == FIELDS  # no field missing, no extra name, declaration order
    for name, doc in docs.items():
        assert doc.strip() and "\n" not in doc, name


def _spellings(x) -> set[str]:
    """How a bound may be written in a doc: 3, 3.0, 2^20, 2^31 - 1, 1e6."""
    out = {str(x), f"{x:g}"}
    if float(x).is_integer():
        n = int(x)
        out.add(str(n))
        if n >= 1024 and n & (n - 1) == 0:
            out.add(f"2^{n.bit_length() - 1}")
        if n >= 1023 and (n + 1) & n == 0:
            out.add(f"2^{n.bit_length()} - 1")
        if n >= 10_000 and str(n).rstrip("0") == "1":
            out.add(f"1e{len(str(n)) - 1}")
    return out


@pytest.mark.parametrize("name", sorted(RANGES))
def test_range_docs_state_the_validated_bounds(name):
    low, high = RANGES[name]
    doc = TrainConfig.field_docs()[name]
    written = {f"[{lo}, {hi}]" for lo in _spellings(low) for hi in _spellings(high)}
    assert any(w in doc for w in written), f"{name}: doc {doc!r} states none of {sorted(written)}"


@pytest.mark.parametrize("name", sorted(config_module._CHOICES))
def test_choice_docs_name_every_choice(name):
    doc = TrainConfig.field_docs()[name]
    for choice in config_module._CHOICES[name]:
        assert f'"{choice}"' in doc, (name, choice)


def test_field_docs_is_a_fresh_dict():
    TrainConfig.field_docs()["lr"] = "changed"
    assert TrainConfig.field_docs()["lr"] != "changed"


# A config.json as written at commit 8bfdd9c (the first trainer), with that commit's defaults: no num_devices,
# league_*, best_by or independent. It must still load, the missing fields taking today's defaults.
OLD_CONFIG_JSON = {
    "algo": "ppo",
    "env": "autochess",
    "obs": "vector",
    "opponents": "self",
    "seed": 0,
    "num_envs": 16,
    "num_steps": 64,
    "total_steps": 200000,
    "lr": 0.0003,
    "anneal_lr": False,
    "gamma": 0.995,
    "gae_lambda": 0.95,
    "clip_eps": 0.2,
    "clip_value": True,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "normalize_advantages": True,
    "update_epochs": 4,
    "num_minibatches": 4,
    "max_grad_norm": 0.5,
    "network": "mlp",
    "hidden": [256, 256],
    "activation": "tanh",
    "shared_torso": False,
    "update_every": 1,
    "updates_per_chunk": 10,
    "eval_every": 1,
    "eval_games": 8,
    "checkpoint_every": 1,
    "keep_checkpoints": 3,
    "max_rounds": 40,
    "steps_per_round": 12,
    "max_combat_ticks": 400,
    "reward_win": 0.0,
    "reward_life": 0.0,
}


def test_an_old_config_json_still_loads():
    old = json.loads(json.dumps(OLD_CONFIG_JSON))
    config = TrainConfig.from_dict(old)
    assert config.hidden == (256, 256)
    for name, value in old.items():
        assert getattr(config, name) == (tuple(value) if name == "hidden" else value), name
    missing = set(FIELDS) - set(old)
    assert {"num_devices", "league_size", "best_by", "independent"} <= missing
    defaults = TrainConfig()
    for name in missing:
        assert getattr(config, name) == getattr(defaults, name), name
    assert config == defaults  # that commit's defaults are today's for the fields it had


def test_to_dict_round_trips_through_json():
    config = TrainConfig()
    data = json.loads(json.dumps(config.to_dict()))
    assert list(data) == FIELDS
    assert TrainConfig.from_dict(data) == config
    changed = TrainConfig(
        num_envs=8,
        num_devices=2,
        hidden=(32, 16),
        league_size=4,
        league_groups=4,
        best_by="rating",
        lr=1e-3,
        reward_life=-0.05,
    )
    assert TrainConfig.from_dict(json.loads(json.dumps(changed.to_dict()))) == changed
