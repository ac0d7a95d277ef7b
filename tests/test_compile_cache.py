"""agents.utils.compile_cache: the persistent compilation cache is on by default for library users, in the
documented place, unless the program chose (its own directory, JAXGAME_NO_CACHE=1, disable(), a CLI's --no-cache);
agents.train, agents.evaluate and the env views switch it on. Each case runs in a fresh process: the suite's own
cache (tests/conftest.py) is a choice already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _in_fresh_process(tmp_path, code: str, **env) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("JAXGAME_CACHE_DIR", "JAXGAME_NO_CACHE")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**base, "XDG_CACHE_HOME": str(tmp_path / "xdg"), **env},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


USE = (
    "import json, jax; from agents.utils import compile_cache as c; {before}; used = c.use_default_cache(); "
    "print(json.dumps({{'used': used, 'config': jax.config.jax_compilation_cache_dir}}))"
)


@pytest.mark.parametrize(
    "before, env, expected",
    [
        ("pass", {}, "xdg/jaxgame/jax"),
        ("pass", {"JAXGAME_CACHE_DIR": "{tmp}/mine"}, "mine"),
        ("pass", {"JAXGAME_NO_CACHE": "1"}, None),
        ("c.disable()", {}, None),
        ("jax.config.update('jax_compilation_cache_dir', '{tmp}/own')", {}, "own"),
    ],
)
def test_the_default_cache_unless_the_program_chose(tmp_path, before, env, expected):
    env = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    result = _in_fresh_process(tmp_path, USE.format(before=before.format(tmp=tmp_path)), **env)
    if expected is None:
        assert result == {"used": None, "config": None}
    else:
        assert result["used"] == result["config"] == str(tmp_path / expected)
        assert Path(result["used"]).is_dir() == (expected != "own")  # made when it is the library's choice


def test_the_cli_no_cache_flag_keeps_the_library_from_turning_it_on(tmp_path):
    code = (
        "import json, jax; from experiments.common import enable_compilation_cache as e; "
        "from agents.utils import compile_cache as c; e(None); "
        "print(json.dumps({'used': c.use_default_cache(), 'config': jax.config.jax_compilation_cache_dir}))"
    )
    assert _in_fresh_process(tmp_path, code) == {"used": None, "config": None}


def test_train_evaluate_and_the_env_views_switch_it_on(monkeypatch):
    from agents.arena import tournament
    from agents.config import TrainConfig
    from agents.interop import program_cache
    from agents.run import training
    from agents.utils import compile_cache

    calls = []
    monkeypatch.setattr(compile_cache, "use_default_cache", lambda: calls.append(1))
    with pytest.raises(ValueError):  # an unknown gymnax env: train stops before any work
        training.train(TrainConfig.from_fields(env="gymnax:NoSuchEnv-v0"), "unused-run-dir")
    assert len(calls) == 1 and not Path("unused-run-dir").exists()
    with pytest.raises(ValueError):  # no such run (a PolicyError): refused after the cache is on
        tournament.evaluate("no-such-run-dir")
    assert len(calls) == 2
    program_cache.shared_jit(("test_compile_cache", object()), lambda: (lambda x: x,))
    assert len(calls) == 3
