"""The public API (``agents/__init__.py``): a handful of names, each resolving lazily to the library object it
names and documented with an example; importing ``agents`` alone imports none of the heavy modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agents

PUBLIC = [
    "TrainConfig",
    "check_env",
    "evaluate",
    "load_config",
    "load_policy",
    "make_env",
    "make_train",
    "preset",
    "train",
]


def test_the_public_names_are_the_documented_handful():
    assert sorted(agents.__all__) == PUBLIC
    assert set(PUBLIC) <= set(dir(agents))
    with pytest.raises(AttributeError, match="has no attribute 'trian'"):
        agents.trian  # noqa: B018


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_is_the_library_object_with_an_example(name):
    module, attribute = agents._API[name]
    obj = getattr(agents, name)
    assert obj is getattr(sys.modules[module], attribute)
    assert "Example::" in (obj.__doc__ or ""), f"agents.{name} has no docstring example"


def test_importing_agents_imports_no_training_module():
    code = (
        "import sys, agents\n"
        "heavy = [m for m in ('agents.run.training', 'agents.algorithms.ppo', 'orbax.checkpoint', 'optax')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
