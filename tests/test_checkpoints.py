"""Tests of agents.storage.checkpoints.CheckpointStore (orbax-backed atomic checkpoint store); CPU, small pytrees."""

import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from agents.storage.checkpoints import CheckpointMismatchError, CheckpointStore, NoGoodCheckpointError

# When a read of a corrupt checkpoint fails, orbax closes its asyncio loop while other tensorstore reads are still in
# flight; their completion callbacks then hit the closed loop ("RuntimeError: Event loop is closed" in a tensorstore
# thread), which pytest reports as an unraisable exception. Harmless: the store has already moved on.
pytestmark = pytest.mark.filterwarnings("ignore:Exception ignored in:pytest.PytestUnraisableExceptionWarning")


@struct.dataclass
class Params:
    w: jax.Array
    b: jax.Array


def make_tree(seed: int = 0):
    """A small train-state-like pytree: typed keys (two impls), a legacy uint32 key, float32/int32/bool leaves."""
    rng = np.random.default_rng(seed)
    return {
        "params": Params(
            w=jnp.asarray(rng.normal(size=(3, 4)), jnp.float32), b=jnp.asarray(rng.normal(size=(4,)), jnp.float32)
        ),
        "opt": {"count": jnp.int32(seed), "mu": (jnp.zeros(4, jnp.float32), jnp.full((2, 2), seed, jnp.int32))},
        "key": jax.random.key(seed),
        "env_keys": jax.random.split(jax.random.key(seed + 100, impl="rbg"), 3),
        "legacy_key": jax.random.PRNGKey(seed + 7),
        "done": jnp.asarray(rng.random(5) > 0.5),
    }


def abstract_tree():
    return jax.eval_shape(make_tree)


def assert_trees_bitwise_equal(restored, expected):
    chex.assert_trees_all_equal_shapes_and_dtypes(restored, expected)  # and the same structure
    # bitwise, typed PRNG keys by their key data: beyond chex's value equality (it takes -0.0 == 0.0)
    for r, e in zip(jax.tree.leaves(restored), jax.tree.leaves(expected)):
        if jax.dtypes.issubdtype(e.dtype, jax.dtypes.prng_key):
            r, e = jax.random.key_data(r), jax.random.key_data(e)
        np.testing.assert_array_equal(np.asarray(r), np.asarray(e))
        assert np.asarray(r).tobytes() == np.asarray(e).tobytes()


def corrupt_state(step_dir: Path, mode: str) -> None:
    """Damage the array data (tensorstore/OCDBT files under ``state/**/d/``) or tree metadata of one saved step."""
    if mode == "no_metadata":
        (step_dir / "state" / "_METADATA").unlink()
        return
    files = [f for f in (step_dir / "state").rglob("*") if f.is_file() and f.parent.name == "d"]
    assert files, "expected OCDBT data files to corrupt"
    for f in files:
        if mode == "garbage":
            f.write_bytes(b"\x00garbage\xff" * 16)
        elif mode == "truncate":
            with open(f, "r+b") as fh:
                fh.truncate(max(f.stat().st_size // 3, 1) - 1)
        else:
            f.unlink()


def save_steps(store, steps, metrics=None):
    for i, step in enumerate(steps):
        store.save(step, make_tree(step), {"step": step, "lr": 1e-3}, None if metrics is None else metrics[i])


def test_roundtrip_bitwise_and_typed_keys(tmp_path):
    tree = make_tree(3)
    config = {"lr": 3e-4, "layers": [64, 64], "name": "ppo", "nested": {"clip": 0.2}}
    with CheckpointStore(tmp_path / "ckpt", keep=3) as store:
        store.save(10, tree, config, {"loss": 1.0})
        step, restored, cfg = store.restore(abstract_tree())
        assert store.steps() == [10] and store.latest_step() == 10
        assert store.read_config() == config
    assert step == 10 and cfg == config
    assert_trees_bitwise_equal(restored, tree)
    assert isinstance(restored["params"], Params)
    # saved from host copies (numpy leaves), restored as jax.Arrays as the docstring says
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(restored))
    assert restored["key"].dtype == jax.random.key(0).dtype  # typed key again, same (threefry) impl
    assert restored["env_keys"].dtype == tree["env_keys"].dtype and restored["env_keys"].shape == (3,)
    assert restored["legacy_key"].dtype == jnp.uint32
    # The restored keys are usable and draw the same numbers.
    assert jax.random.uniform(restored["key"]) == jax.random.uniform(tree["key"])
    # A fresh store on the same directory (new process after a restart) sees the same checkpoint.
    with CheckpointStore(tmp_path / "ckpt", keep=3) as store:
        step, restored2, _ = store.restore(abstract_tree(), step=10)
    assert_trees_bitwise_equal(restored2, tree)


@pytest.mark.parametrize(
    "mode, values",
    [("min", [5.0, 1.0, 3.0, float("nan"), None, 4.0]), ("max", [0.1, 0.9, 0.5, float("nan"), None, 0.4])],
)
def test_keep_last_n_plus_best(tmp_path, mode, values):
    # Step 2 is best; step 4's NaN and step 5's None/missing metric are no candidates.
    metrics = [{"loss": v, "other": 0.0} for v in values]
    metrics[4] = {"other": -100.0}  # best metric missing
    with CheckpointStore(tmp_path, keep=2, best_metric="loss", best_mode=mode) as store:
        save_steps(store, range(1, 7), metrics)
        assert store.steps() == [2, 5, 6]
        assert store.latest_step() == 6
    # The best step's metrics are persisted: it survives a restart and further saves.
    with CheckpointStore(tmp_path, keep=2, best_metric="loss", best_mode=mode) as store:
        assert store.steps() == [2, 5, 6]
        store.save(7, make_tree(7), {}, {"loss": 2.0 if mode == "min" else 0.8})
        assert store.steps() == [2, 6, 7]
        store.save(8, make_tree(8), {}, None)
        assert store.steps() == [2, 7, 8]
        step, restored, _ = store.restore(abstract_tree(), step=2)
    assert step == 2
    assert_trees_bitwise_equal(restored, make_tree(2))


def test_keep_last_n_without_best_metric(tmp_path):
    with CheckpointStore(tmp_path, keep=2) as store:
        save_steps(store, range(1, 6), [{"loss": float(i)} for i in range(5)])
        assert store.steps() == [4, 5]


@pytest.mark.parametrize("mode", ["garbage", "truncate", "delete", "no_metadata"])
def test_corrupted_latest_falls_back(tmp_path, mode):
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2, 3])
        corrupt_state(tmp_path / "3", mode)
        with pytest.warns(RuntimeWarning, match=r"checkpoint step 3 in .* could not be restored .*falling back"):
            step, restored, config = store.restore(abstract_tree())
        assert step == 2 and config["step"] == 2
        assert_trees_bitwise_equal(restored, make_tree(2))
        with warnings.catch_warnings():  # one warning per store and bad step: load_policy reads config, then params
            warnings.simplefilter("error")
            assert store.read_config()["step"] == 2
        with CheckpointStore(tmp_path, keep=5) as fresh, pytest.warns(RuntimeWarning, match="checkpoint step 3"):
            assert fresh.read_config()["step"] == 2
        # Resuming from step 2 and saving step 3 again replaces the corrupt step.
        store.save(3, make_tree(33), {"step": 33})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            step, restored, config = store.restore(abstract_tree())
        assert step == 3 and config == {"step": 33}
        assert_trees_bitwise_equal(restored, make_tree(33))


def test_a_subtree_restores_alone_as_saved_and_falls_back_like_the_whole(tmp_path):
    """``restore_subtree``: one subtree (a runner's "params") bitwise as saved, with no abstract tree, skipping a
    damaged newer step with the same warning as ``restore``; a name the state does not hold is a mismatch."""
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
        step, params, config = store.restore_subtree("params")
        assert step == 2 and config["step"] == 2
        saved = make_tree(2)["params"]  # a struct dataclass: read back as the dict of its fields
        assert sorted(params) == ["b", "w"]
        for name in ("w", "b"):
            want, got = getattr(saved, name), params[name]
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes() and got.dtype == want.dtype
        assert store.restore_subtree("params", step=1)[0] == 1
        corrupt_state(tmp_path / "2", "garbage")
        with pytest.warns(RuntimeWarning, match="checkpoint step 2"):
            assert store.restore_subtree("params")[0] == 1
        with pytest.raises(CheckpointMismatchError, match="has no 'nothing'"):
            store.restore_subtree("nothing", step=1)


def test_all_corrupted_raises_naming_directory(tmp_path):
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
        for s in (1, 2):
            corrupt_state(tmp_path / str(s), "garbage")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback warnings when nothing can be read: the error says it all
            match = f"none of the checkpoints .* in {tmp_path} could be restored"
            with pytest.raises(NoGoodCheckpointError, match=match):
                store.restore(abstract_tree())


def test_leftover_orbax_tmp_dir_is_not_a_step(tmp_path):
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
    # Simulated partial saves killed before orbax's final rename ("<step>.orbax-checkpoint-tmp[-<timestamp>]").
    shutil.copytree(tmp_path / "2", tmp_path / "3.orbax-checkpoint-tmp")
    (tmp_path / "4.orbax-checkpoint-tmp-1712345678").mkdir()
    with CheckpointStore(tmp_path, keep=5) as store:
        assert store.steps() == [1, 2]
        assert store.latest_step() == 2
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            step, restored, _ = store.restore(abstract_tree())
        assert step == 2
        assert_trees_bitwise_equal(restored, make_tree(2))
        store.save(3, make_tree(3), {"step": 3})  # orbax replaces the stale tmp dir
        assert store.steps() == [1, 2, 3]
        assert not (tmp_path / "3.orbax-checkpoint-tmp").exists()


def test_kill_9_right_after_save_keeps_checkpoint(tmp_path):
    child = textwrap.dedent(
        f"""
        import os, signal, jax
        from agents.storage.checkpoints import CheckpointStore
        store = CheckpointStore({str(tmp_path)!r}, keep=2)
        store.save(5, {{"x": jax.numpy.arange(6.0), "k": jax.random.key(1)}}, {{"ok": True}})
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", child], cwd=Path(__file__).parents[1], env=env, capture_output=True, check=False
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    abstract = {"x": jax.ShapeDtypeStruct((6,), jnp.float32), "k": jax.eval_shape(lambda: jax.random.key(0))}
    with CheckpointStore(tmp_path, keep=2) as store:
        step, restored, config = store.restore(abstract)
    assert step == 5 and config == {"ok": True}
    np.testing.assert_array_equal(restored["x"], np.arange(6.0))
    np.testing.assert_array_equal(jax.random.key_data(restored["k"]), jax.random.key_data(jax.random.key(1)))


def test_no_checkpoints_clear_error(tmp_path):
    with CheckpointStore(tmp_path / "empty", keep=1) as store:
        assert store.steps() == [] and store.latest_step() is None
        with pytest.raises(FileNotFoundError, match="no checkpoints in .*empty"):
            store.restore(abstract_tree())
        with pytest.raises(FileNotFoundError, match="no checkpoints"):
            store.read_config()
        store.save(1, make_tree(1), {})
        with pytest.raises(FileNotFoundError, match="step 7"):
            store.restore(abstract_tree(), step=7)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"keep": 0}, "keep"),
        ({"keep": -3}, "keep"),
        ({"keep": 1.5}, "keep"),
        ({"keep": True}, "keep"),
        ({"keep": 2, "best_mode": "avg"}, "best_mode"),
        ({"keep": 2, "best_metric": ""}, "best_metric"),
    ],
)
def test_bad_constructor_args(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=name):
        CheckpointStore(tmp_path, **kwargs)


def test_structure_mismatch_is_a_clear_error(tmp_path):
    with CheckpointStore(tmp_path, keep=2) as store:
        save_steps(store, [1, 2])
        wrong = abstract_tree()
        wrong["extra"] = jax.ShapeDtypeStruct((2,), jnp.float32)
        del wrong["done"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to older steps: the caller's tree is wrong
            with pytest.raises(
                CheckpointMismatchError, match=r"not in the checkpoint: extra.*not in abstract_tree: done"
            ):
                store.restore(wrong)
            wrong = abstract_tree()
            wrong["params"] = wrong["params"].replace(w=jax.ShapeDtypeStruct((4, 4), jnp.float32))
            with pytest.raises(ValueError, match=r"params/w: saved shape \(3, 4\) != abstract shape \(4, 4\)"):
                store.restore(wrong)


def test_metric_values_are_cleaned(tmp_path):
    with CheckpointStore(tmp_path, keep=1, best_metric="loss") as store:
        store.save(1, make_tree(1), {}, {"loss": jnp.float32(0.5), "nan": math.nan, "none": None})
        store.save(2, make_tree(2), {}, {"loss": 0.7})
        assert store.steps() == [1, 2]
        with pytest.raises(ValueError, match="metric 'loss'"):
            store.save(3, make_tree(3), {}, {"loss": "low"})


def test_garbled_metrics_file_does_not_break_the_store(tmp_path):
    with CheckpointStore(tmp_path, keep=1, best_metric="loss") as store:
        save_steps(store, [1, 2, 3], [{"loss": 1.0}, {"loss": 2.0}, {"loss": 3.0}])
        assert store.steps() == [1, 3]
    (tmp_path / "1" / "metrics" / "metrics").write_text("{not json")
    with pytest.warns(RuntimeWarning, match="metrics of checkpoint step 1 .* could not be read"):
        store = CheckpointStore(tmp_path, keep=1, best_metric="loss")
    with store:
        assert store.steps() == [1, 3]
        step, restored, _ = store.restore(abstract_tree())
        assert step == 3
        assert_trees_bitwise_equal(restored, make_tree(3))
        store.save(4, make_tree(4), {}, {"loss": 4.0})
        # step 1 (the best) lost its metrics: it cannot be ranked, so it is kept; 3 is the best of the others
        assert store.steps() == [1, 3, 4]


# ------------------------------------------------------------------ checksums (SHA256SUMS per step)


def flip_bytes(path: Path, count: int = 16) -> None:
    """XOR ``count`` bytes in the middle of ``path`` with 0xFF (same size: a bit flip, not a truncation)."""
    data = bytearray(path.read_bytes())
    start = max(len(data) // 2 - count // 2, 0)
    for i in range(start, min(start + count, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def data_files(step_dir: Path) -> list[str]:
    """The tensorstore/OCDBT array data files of a step (the params' and the optimizer state's leaves)."""
    return sorted(
        f.relative_to(step_dir).as_posix()
        for f in (step_dir / "state").rglob("*")
        if f.is_file() and f.parent.name == "d"
    )


def make_old_step(step_dir: Path) -> None:
    """``step_dir`` as a version before checksums wrote it: no SHA256SUMS, and ``meta`` of format 1."""
    (step_dir / "SHA256SUMS").unlink()
    meta = step_dir / "meta" / "metadata"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": 1}))


def one_line_warnings(record) -> list[str]:
    messages = [str(w.message) for w in record if issubclass(w.category, RuntimeWarning)]
    assert all("\n" not in m for m in messages), messages
    return messages


def test_every_step_carries_a_sha256sum_sidecar_that_sha256sum_accepts(tmp_path):
    with CheckpointStore(tmp_path, keep=3, best_metric="loss") as store:
        store.save(1, make_tree(1), {"step": 1}, {"loss": 1.0})
    step_dir = tmp_path / "1"
    text = (step_dir / "SHA256SUMS").read_text().splitlines()
    assert text[0] == "# jaxgame checkpoint step 1"  # the step it is (no run: this store was given no identity)
    lines = [line for line in text if not line.startswith("#")]
    assert len(lines) == len(text) - 1
    listed = [line.split("  ", 1)[1] for line in lines]
    files = sorted(f.relative_to(step_dir).as_posix() for f in step_dir.rglob("*") if f.is_file())
    assert listed == sorted(listed) and listed == [f for f in files if f != "SHA256SUMS"]
    assert set(data_files(step_dir)) <= set(listed) and "metrics/metrics" in listed and "config/metadata" in listed
    if shutil.which("sha256sum"):
        proc = subprocess.run(
            ["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=step_dir, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in lines:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((step_dir / name).read_bytes()).hexdigest() == digest
    assert not list(tmp_path.glob(".saving-*")) and not list(step_dir.glob("*.tmp"))


def test_a_flipped_data_file_is_never_used_one_warning_names_it(tmp_path):
    """16 bytes XOR-flipped in any array data file of the newest step (params or optimizer state): every load
    falls back to the step before with one warning naming the step and the file; asking for it is an error."""
    source = tmp_path / "source"
    with CheckpointStore(source, keep=5) as store:
        save_steps(store, [1, 2, 3])
    files = data_files(source / "3")
    assert len(files) >= 2
    for i, name in enumerate(files):
        directory = shutil.copytree(source, tmp_path / f"copy{i}")
        flip_bytes(directory / "3" / name)
        with CheckpointStore(directory, keep=5) as store, warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            step, restored, config = store.restore(abstract_tree())
            assert (step, config["step"]) == (2, 2)
            assert_trees_bitwise_equal(restored, make_tree(2))
            assert store.read_config()["step"] == 2 and store.restore_subtree("params")[0] == 2
            with pytest.raises(NoGoodCheckpointError, match=f"step 3 .* is damaged: {name} does not match"):
                store.restore(abstract_tree(), step=3)
        (message,) = one_line_warnings(record)  # one, though the step was read three times
        assert f"checkpoint step 3 in {directory}" in message and f"{name} does not match its SHA-256" in message


def test_flipped_bytes_in_every_step_are_a_one_line_error(tmp_path):
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
        for s in (1, 2):
            flip_bytes(tmp_path / str(s) / data_files(tmp_path / str(s))[0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for load in (
                lambda: store.restore(abstract_tree()),
                store.read_config,
                lambda: store.restore_subtree("params"),
            ):
                with pytest.raises(NoGoodCheckpointError) as info:
                    load()
                assert "\n" not in str(info.value) and "step 2: state/" in str(info.value)


def test_a_step_without_sidecar_loads_with_one_warning(tmp_path):
    """A step saved before checksums (no SHA256SUMS, no marker) loads unverified, with one warning per store."""
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
    make_old_step(tmp_path / "2")
    with CheckpointStore(tmp_path, keep=5) as store, warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert store.steps() == [1, 2]
        assert store.read_config()["step"] == 2
        step, restored, _ = store.restore(abstract_tree())
        assert step == 2
        assert_trees_bitwise_equal(restored, make_tree(2))
    (message,) = one_line_warnings(record)
    assert f"checkpoint step 2 in {tmp_path} has no SHA256SUMS" in message and "unverified" in message


def test_an_unverifiable_old_step_that_is_corrupt_falls_back_in_one_line(tmp_path):
    """Without a sidecar, orbax/tensorstore's own error decides (its text is a multi-line spec dump): still one
    warning line per step."""
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
    make_old_step(tmp_path / "2")
    corrupt_state(tmp_path / "2", "garbage")
    with CheckpointStore(tmp_path, keep=5) as store, warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert store.restore(abstract_tree())[0] == 1
    messages = one_line_warnings(record)
    assert len([m for m in messages if "could not be restored" in m]) == 1 and len(messages) == 2


def _restored_with_warnings(directory, **store_args):
    with CheckpointStore(directory, keep=5, **store_args) as store, warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        step, restored, config = store.restore(abstract_tree())
    return step, restored, config, one_line_warnings(record)


def test_a_step_replaced_by_a_complete_copy_of_another_is_refused(tmp_path):
    """checkpoints/3 replaced by step 2's directory, its own SHA256SUMS included: every file checks out, but the
    digest names step 2, so step 3 is damaged: the fallback, one warning; asked for, an error."""
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2, 3])
    shutil.rmtree(tmp_path / "3")
    shutil.copytree(tmp_path / "2", tmp_path / "3")
    step, restored, config, (message,) = _restored_with_warnings(tmp_path)
    assert (step, config["step"]) == (2, 2)
    assert_trees_bitwise_equal(restored, make_tree(2))
    assert "checkpoint step 3" in message and "its SHA256SUMS names step 2, not 3 (a copy of another step)" in message
    with CheckpointStore(tmp_path, keep=5) as store, pytest.raises(NoGoodCheckpointError, match="names step 2"):
        store.restore(abstract_tree(), step=3)


def test_a_step_of_another_run_is_refused(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    with CheckpointStore(mine, keep=5, identity="run_a") as store:
        save_steps(store, [1, 2])
    with CheckpointStore(theirs, keep=5, identity="run_b") as store:
        save_steps(store, [3])
    shutil.copytree(theirs / "3", mine / "3")  # a newer step from another run, dropped in
    assert (mine / "3" / "SHA256SUMS").read_text().splitlines()[:2] == ["# jaxgame checkpoint step 3", "# run run_b"]
    step, _, _, (message,) = _restored_with_warnings(mine, identity="run_a")
    assert step == 2 and "names run run_b, not this run (run_a): a step of another run" in message
    assert _restored_with_warnings(mine)[0] == 3  # a store told no identity checks none (a policy loader)
    with pytest.raises(ValueError, match="identity must be a run id"):
        CheckpointStore(mine, keep=1, identity="two words")


def test_a_missing_digest_on_a_step_that_had_one_is_damage_not_an_old_step(tmp_path):
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
    (tmp_path / "2" / "SHA256SUMS").unlink()
    flip_bytes(tmp_path / "2" / data_files(tmp_path / "2")[0])  # unverified, this would have loaded wrong numbers
    step, restored, _, (message,) = _restored_with_warnings(tmp_path)
    assert step == 1 and "SHA256SUMS is missing from a step saved by a version that writes it" in message
    assert_trees_bitwise_equal(restored, make_tree(1))


def test_a_restored_tree_the_caller_refuses_is_damage(tmp_path):
    """``check``: the run loop refuses a runner whose update counter is not the step's number."""
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
    calls = []

    def check(step, tree):
        calls.append(step)
        return "its counter says 7" if step == 2 else None

    with CheckpointStore(tmp_path, keep=5) as store, warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert store.restore(abstract_tree(), check=check)[0] == 1
        with pytest.raises(NoGoodCheckpointError, match="step 2 is not what its name says: its counter says 7"):
            store.restore(abstract_tree(), step=2, check=check)
    (message,) = one_line_warnings(record)
    assert calls == [2, 1, 2] and "step 2 is not what its name says: its counter says 7" in message


def test_orbax_read_errors_are_folded_into_the_one_warning(tmp_path, capfd, caplog):
    """A flipped ``_CHECKPOINT_METADATA``: orbax logs "Failed to read Metadata file" (three times, through absl)
    when it lists and reads the steps; those lines are folded into the step's one warning."""
    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1, 2])
    flip_bytes(tmp_path / "2" / "_CHECKPOINT_METADATA", count=4)
    step, _, _, (message,) = _restored_with_warnings(tmp_path)
    assert step == 1 and "_CHECKPOINT_METADATA does not match its SHA-256" in message
    assert "orbax could not read its metadata either" in message
    out, err = capfd.readouterr()
    assert "Failed to read Metadata file" not in out + err + caplog.text


def test_a_step_is_listed_only_once_its_sidecar_is_written(tmp_path, monkeypatch):
    """While ``save`` (e.g. in the run loop's background thread) has committed the step with orbax but not yet
    written its sidecar, the step is not listed; a save killed there, or failing there, leaves no step."""
    from agents.storage import checkpoints

    with CheckpointStore(tmp_path, keep=5) as store:
        save_steps(store, [1])
        seen = []
        real = checkpoints.write_sums

        def observe(directory, files, *args, **kwargs):
            assert (tmp_path / "2" / "commit_success.txt").exists()  # orbax's commit is done
            with CheckpointStore(tmp_path, keep=5) as reader:  # another reader, e.g. evaluate on a live run
                seen.append((store.steps(), reader.steps()))
            return real(directory, files, *args, **kwargs)

        monkeypatch.setattr(checkpoints, "write_sums", observe)
        save_steps(store, [2])
        assert seen == [([1], [1])] and store.steps() == [1, 2]

        def full_disk(*args, **kwargs):
            raise OSError(28, "No space left on device (simulated)")

        monkeypatch.setattr(checkpoints, "write_sums", full_disk)
        with pytest.raises(OSError, match="No space left"):
            save_steps(store, [3])
        assert store.steps() == [1, 2] and not (tmp_path / "3").exists()
        monkeypatch.undo()
        # killed between orbax's commit and the sidecar: the marker stays, the step is not listed
        save_steps(store, [3])
        (tmp_path / "3" / "SHA256SUMS").unlink()
        (tmp_path / ".saving-3").touch()
    with CheckpointStore(tmp_path, keep=5) as store, warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.steps() == [1, 2] and store.restore(abstract_tree())[0] == 2
        save_steps(store, [3])  # the resumed run saves it again
        assert store.steps() == [1, 2, 3] and store.restore(abstract_tree())[0] == 3
    assert not list(tmp_path.glob(".saving-*")) and not list(tmp_path.glob(".replaced-*"))
