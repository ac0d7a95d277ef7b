"""agents.storage.datasets: sharded on-disk sample datasets with a verified manifest (numpy only, no JAX
compilation)."""

import hashlib
import json

import numpy as np
import pytest

from agents.storage.datasets import FORMAT, MANIFEST, DatasetError, open_dataset, write_dataset

META = {"players": 8, "rules": {"max_rounds": 25}, "seed": 7}


def make_shard(n, seed):
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.standard_normal((n, 5, 3)).astype(np.float32),
        "mask": rng.random((n, 7)) < 0.5,
        "action": rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32),
        "placement": rng.integers(-128, 127, n, dtype=np.int8),
        "pixels": rng.integers(0, 256, (n, 4, 6), dtype=np.uint8),
    }


@pytest.fixture
def shards():
    return [make_shard(n, seed) for seed, n in enumerate((6, 0, 9))]  # the middle shard is empty


@pytest.fixture
def written(tmp_path, shards):
    directory = tmp_path / "data" / "ds"  # parents are created
    manifest = write_dataset(directory, iter(shards), meta=META)  # a one-shot iterable is fine
    return directory, manifest


def one_line_error(match, fn, *args):
    with pytest.raises(DatasetError, match=match) as info:
        fn(*args)
    assert "\n" not in str(info.value)
    return str(info.value)


# --- round trip -------------------------------------------------------------------------------------------------


def test_round_trip_exact(written, shards):
    directory, manifest = written
    ds = open_dataset(directory)
    assert ds.num_shards == 3 and ds.num_samples == 15 and manifest["num_samples"] == 15
    assert ds.manifest == json.loads((directory / MANIFEST).read_text()) == manifest
    assert ds.fields == {
        "obs": {"dtype": np.dtype(np.float32).str, "shape": [5, 3]},
        "mask": {"dtype": np.dtype(bool).str, "shape": [7]},
        "action": {"dtype": np.dtype(np.int32).str, "shape": []},
        "placement": {"dtype": np.dtype(np.int8).str, "shape": []},
        "pixels": {"dtype": np.dtype(np.uint8).str, "shape": [4, 6]},
    }
    assert manifest["meta"] == META and manifest["format"] == FORMAT
    assert [s["samples"] for s in manifest["shards"]] == [6, 0, 9]

    loaded = ds.load()
    assert set(loaded) == set(shards[0])
    for name, arr in loaded.items():
        expected = np.concatenate([shard[name] for shard in shards])
        assert arr.dtype == expected.dtype == np.dtype(ds.fields[name]["dtype"])
        np.testing.assert_array_equal(arr, expected, strict=True)
    for i, shard in enumerate(shards):
        got = ds.shard(i)
        assert set(got) == set(shard)
        for name in shard:
            assert got[name].dtype == shard[name].dtype
            np.testing.assert_array_equal(got[name], shard[name], strict=True)
    ds.verify()


def test_manifest_sha256_and_bytes_match_files(written):
    directory, manifest = written
    for i, entry in enumerate(manifest["shards"]):
        assert entry["file"] == f"shard-{i:05d}.npz"
        data = (directory / entry["file"]).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_packed_pixel_shapes_round_trip(tmp_path):
    shard = {
        "pixels": np.arange(3 * 72 * 20, dtype=np.uint8).reshape(3, 72, 20),
        "obs": np.linspace(-1, 1, 3 * 8 * 300, dtype=np.float32).reshape(3, 8, 300),
        "game": np.array([1, 2, 3], np.int16),
    }
    write_dataset(tmp_path / "ds", [shard])
    loaded = open_dataset(tmp_path / "ds").load()
    for name in shard:
        np.testing.assert_array_equal(loaded[name], shard[name], strict=True)
    assert open_dataset(tmp_path / "ds").manifest["meta"] == {}


def test_write_leaves_no_temporary_files(written):
    directory, _ = written
    assert sorted(p.name for p in directory.iterdir()) == [
        MANIFEST,
        "shard-00000.npz",
        "shard-00001.npz",
        "shard-00002.npz",
    ]


def test_shard_index_out_of_range(written):
    ds = open_dataset(written[0])
    for index in (3, -1):
        with pytest.raises(IndexError):
            ds.shard(index)


# --- corruption on read -----------------------------------------------------------------------------------------


def test_flipped_byte_is_detected(written, shards):
    directory, _ = written
    path = directory / "shard-00002.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    ds = open_dataset(directory)
    for fn, *args in ((ds.shard, 2), (ds.verify,), (ds.load,)):
        message = one_line_error("corrupt", fn, *args)
        assert "shard-00002.npz" in message
    np.testing.assert_array_equal(ds.shard(0)["obs"], shards[0]["obs"], strict=True)
    assert ds.shard(1)["mask"].shape == (0, 7)


def test_truncated_shard_is_detected(written):
    directory, manifest = written
    path = directory / "shard-00000.npz"
    path.write_bytes(path.read_bytes()[:-10])
    ds = open_dataset(directory)
    message = one_line_error("truncated", ds.shard, 0)
    assert "shard-00000.npz" in message and str(manifest["shards"][0]["bytes"] - 10) in message
    one_line_error("shard-00000.npz is truncated", ds.load)


def test_missing_shard_file(written):
    directory, _ = written
    (directory / "shard-00001.npz").unlink()
    ds = open_dataset(directory)
    assert "shard-00001.npz" in one_line_error("missing", ds.shard, 1)
    assert "shard-00001.npz" in one_line_error("missing", ds.verify)


def test_missing_manifest_is_an_unfinished_write(written, tmp_path):
    directory, _ = written
    (directory / MANIFEST).unlink()
    assert str(directory) in one_line_error("no manifest.json", open_dataset, directory)
    assert "nowhere" in one_line_error("no manifest.json", open_dataset, tmp_path / "nowhere")


def test_garbled_manifest(written):
    directory, _ = written
    path = directory / MANIFEST
    path.write_text(path.read_text()[:-20])
    assert str(path) in one_line_error("not valid JSON", open_dataset, directory)


def test_manifest_missing_keys(written):
    directory, manifest = written
    del manifest["shards"]
    (directory / MANIFEST).write_text(json.dumps(manifest))
    assert "'shards'" in one_line_error(MANIFEST, open_dataset, directory)


def test_other_format(written):
    directory, manifest = written
    manifest["format"] = "jaxgame-dataset/99"
    (directory / MANIFEST).write_text(json.dumps(manifest))
    message = one_line_error(MANIFEST, open_dataset, directory)
    assert "jaxgame-dataset/99" in message and FORMAT in message


def test_manifest_disagreeing_with_shard_contents(written):
    directory, manifest = written
    manifest["fields"]["obs"]["dtype"] = np.dtype(np.float64).str  # the files still hash fine
    (directory / MANIFEST).write_text(json.dumps(manifest))
    assert "'obs'" in one_line_error("shard-00000.npz", open_dataset(directory).shard, 0)


# --- refusals on write ------------------------------------------------------------------------------------------


def test_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "other.txt").write_text("x")
    message = one_line_error("exists and is not empty", write_dataset, tmp_path / "ds", [make_shard(2, 0)])
    assert str(tmp_path / "ds") in message
    write_dataset(tmp_path / "empty", [make_shard(2, 0)])  # an empty existing directory is fine
    (tmp_path / "empty2").mkdir()
    write_dataset(tmp_path / "empty2", [make_shard(2, 0)])


def test_unequal_lengths_within_a_shard(tmp_path):
    bad = make_shard(4, 1)
    bad["mask"] = bad["mask"][:3]
    message = one_line_error("unequal leading lengths", write_dataset, tmp_path / "ds", [make_shard(2, 0), bad])
    assert "shard 1" in message and "'mask'" in message


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda s: s.update(action=s["action"].astype(np.int64)), ("shard 1", "'action'", "int64", "int32")),
        (lambda s: s.update(pixels=s["pixels"].reshape(3, 6, 4)), ("shard 1", "'pixels'", "[6, 4]", "[4, 6]")),
        (lambda s: s.pop("placement"), ("shard 1", "field names", "placement")),
        (lambda s: s.update(extra=np.zeros(3)), ("shard 1", "field names", "extra")),
    ],
)
def test_shard_unlike_the_first_is_refused(tmp_path, change, words):
    bad = make_shard(3, 1)
    change(bad)
    message = one_line_error("differ", write_dataset, tmp_path / "ds", [make_shard(2, 0), bad])
    for word in words:
        assert word in message


def test_object_dtype_and_scalars_are_refused(tmp_path):
    bad = make_shard(2, 0)
    bad["action"] = np.array([1, "two"], dtype=object)
    message = one_line_error("object dtype", write_dataset, tmp_path / "a", [bad])
    assert "shard 0" in message and "'action'" in message
    ragged = make_shard(2, 0)
    ragged["obs"] = [[1.0], [2.0, 3.0]]  # a ragged list: np.asarray refuses it
    assert "'obs'" in one_line_error("shard 0", write_dataset, tmp_path / "b", [ragged])
    scalar = make_shard(2, 0)
    scalar["placement"] = 3
    assert "'placement'" in one_line_error("scalar", write_dataset, tmp_path / "c", [scalar])


def test_list_values_are_converted(tmp_path):
    write_dataset(tmp_path / "ds", [{"seat": [0, 1, 2], "reward": np.zeros((3, 2), np.float32)}])
    ds = open_dataset(tmp_path / "ds")
    assert ds.load()["seat"].tolist() == [0, 1, 2] and ds.fields["reward"]["shape"] == [2]


def test_non_json_meta_is_refused(tmp_path):
    one_line_error("meta is not JSON", write_dataset, tmp_path / "ds", [make_shard(2, 0)], {"rng": object()})
    assert not (tmp_path / "ds").exists()  # refused before anything is written


def test_zero_shards_is_refused(tmp_path):
    assert str(tmp_path / "ds") in one_line_error("no shards", write_dataset, tmp_path / "ds", [])
    assert not (tmp_path / "ds" / MANIFEST).exists()


def test_zero_sample_shard_needs_right_shapes(tmp_path):
    empty_bad = {name: arr[:0] for name, arr in make_shard(2, 1).items()}
    empty_bad["obs"] = np.zeros((0, 5), np.float32)
    message = one_line_error("differ", write_dataset, tmp_path / "ds", [make_shard(2, 0), empty_bad])
    assert "shard 1" in message and "'obs'" in message
