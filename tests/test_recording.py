"""Recorded games (agents.pipeline.recording, experiments.record): the recorder plays the table runner's games, every
sample
belongs to the seat and step it names, and the dataset round-trips and detects a flipped byte.

One recorder (2 game seeds x 8 rotations, positions 0 and 3, short games) is compiled once and shared; the
table runner and ``record()`` compile the same programs again, which the persistent compilation cache serves.
"""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.arena import tables
from agents.pipeline import recording
from agents.storage import datasets as dataset
from jaxgame.game import placement_reward
from jaxgame.observation import ORACLE_SIZE
from tests.tiny_games import TINY

pytestmark = pytest.mark.xdist_group("recording")

BOTS = ("random", "greedy")
LINEUP = [1, 0, 0, 0, 0, 0, 0, 0]  # greedy at position 0, random at the others (participants: the bots, in order)
PLAYERS = ["greedy"] + ["random"] * 7
POSITIONS = (0, 3)
NUM_GAMES = 2
SEED = 5


@functools.cache
def game():
    return jaxgame.make("autochess", **TINY)


@functools.cache
def recorder():
    return recording.make_recorder(game(), (), NUM_GAMES, POSITIONS, BOTS)  # record()'s program: one compile


@functools.cache
def recorded():
    """Three game seeds: one full batch and a last one of which the first game is kept."""
    return list(recording.record_shards(recorder(), (), LINEUP, 3, SEED))


def reset_keys():
    """The first batch's games' reset keys, drawn as ``record_shards`` draws them from ``SEED``: [NUM_GAMES]."""
    reset_key, _ = jax.random.split(jax.random.fold_in(jax.random.key(SEED), 0))
    return jax.random.split(reset_key, NUM_GAMES)


def trajectories(shard):
    """{(game, rotation, position): indices of its samples}, in stored order."""
    keys = np.stack([shard["game"], shard["rotation"], shard["position"]], axis=1)
    out = {}
    for i, key in enumerate(map(tuple, keys.tolist())):
        out.setdefault(key, []).append(i)
    return out


def test_the_recorded_games_are_the_table_runners_games():
    """Same seed, same games: every sample's final placement is the table runner's rank of its position."""
    ranks = np.asarray(
        tables.make_table_runner(game(), (), NUM_GAMES, bot_names=BOTS)(
            (), np.tile(LINEUP, (NUM_GAMES, 1)), jax.random.fold_in(jax.random.key(SEED), 0)
        )
    )
    shard = recorded()[0]
    groups = trajectories(shard)
    assert set(groups) == {(g, r, p) for g in range(NUM_GAMES) for r in range(8) for p in POSITIONS}
    for (g, r, p), index in groups.items():
        assert (shard["placement"][index] == ranks[g, r, p]).all(), (g, r, p)
        assert (shard["seat"][index] == (p + r) % 8).all()
    assert sorted(np.unique(shard["placement"])) == list(range(1, 9))


def test_every_sample_is_its_seats_step():
    """Steps 0..n-1 in order; the first observation is the seat's at the game's reset; every action is legal; the
    return-to-go sums the rewards after it and, with no shaping, starts at the placement's reward; a seat's
    last step is its knock-out or the game's end."""
    shard = recorded()[0]
    keys = reset_keys()
    observations = [np.asarray(game().reset(keys[g])[1].observation) for g in range(NUM_GAMES)]
    assert shard["mask"][np.arange(len(shard["action"])), shard["action"]].all()
    for (g, r, p), index in trajectories(shard).items():
        index = np.asarray(index)
        assert (shard["step"][index] == np.arange(len(index))).all()
        np.testing.assert_array_equal(shard["obs"][index[0]], observations[g][(p + r) % 8])
        reward = shard["reward"][index]
        np.testing.assert_allclose(shard["outcome"][index], np.cumsum(reward[::-1])[::-1], atol=1e-6)
        placement = int(shard["placement"][index[0]])
        assert shard["outcome"][index[0]] == pytest.approx(float(placement_reward(jnp.int32(placement))))
        assert reward[-1] == pytest.approx(float(placement_reward(jnp.int32(placement))))
        assert (reward[:-1] == 0).all()
    assert shard["decision"].mean() > 0.5 and (shard["decision"] == (shard["mask"].sum(1) > 1)).all()


def test_the_last_batch_keeps_the_games_asked_for():
    first, last = recorded()
    assert set(np.unique(first["game"])) == {0, 1} and set(np.unique(last["game"])) == {2}
    assert first.keys() == last.keys() == set(recording.FIELDS)


def test_record_writes_a_dataset_that_loads_back_bit_for_bit_and_a_flipped_byte_is_caught(tmp_path):
    """record() plays the games again with its own recorder: the same seed records the same arrays."""
    out = tmp_path / "data"
    summary = recording.record(
        PLAYERS, out, games=NUM_GAMES, positions=POSITIONS, seed=SEED, batch_games=NUM_GAMES, rules=TINY
    )  # the first batch of recorded()
    data = dataset.open_dataset(out)
    assert data.manifest["meta"]["players"] == PLAYERS and data.manifest["meta"]["rotations"] == 8
    assert data.manifest["meta"]["recorded"] == ["greedy", "random"]
    assert data.manifest["meta"]["rules"]["max_rounds"] == TINY["max_rounds"]
    loaded = data.load()
    expected = recorded()[0]
    assert loaded.keys() == expected.keys()
    for name in expected:
        assert loaded[name].dtype == expected[name].dtype
        np.testing.assert_array_equal(loaded[name], expected[name])
    assert summary["samples"] == len(expected["action"]) and summary["shards"] == 1
    assert summary["decisions"] == int(expected["decision"].sum())
    first = expected["step"] == 0
    assert summary["mean_placement"]["0:greedy"] == pytest.approx(
        expected["placement"][first & (expected["position"] == 0)].mean(), abs=1e-3
    )

    shard = out / data.manifest["shards"][0]["file"]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    shard.write_bytes(bytes(raw))
    with pytest.raises(dataset.DatasetError, match=shard.name):
        dataset.open_dataset(out).load()

    with pytest.raises(dataset.DatasetError, match="not empty"):  # before anything is compiled or played
        recording.record(PLAYERS, out, games=1, rules=TINY)
    with pytest.raises(ValueError, match="games must be a positive int"):  # checked before the directory is made
        recording.record(PLAYERS, tmp_path / "none", games=0, rules=TINY)
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(positions=()), "positions"),
        (dict(positions=(0, 0)), "positions"),
        (dict(positions=(8,)), "positions"),
        (dict(rotations=0), "rotations"),
        (dict(rotations=9), "rotations"),
        (dict(num_games=0), "num_games"),
        (dict(bot_names=("greedy", "greedy")), "bot_names"),
        (dict(bot_names=("nobody",)), "bot_names"),
    ],
)
def test_a_bad_recorder_is_refused_with_the_argument_named(kwargs, message):
    args = dict(game=game(), networks=(), num_games=1, positions=(0,), bot_names=BOTS) | kwargs
    with pytest.raises(ValueError, match=message):
        recording.make_recorder(**args)


@pytest.mark.parametrize(
    "lineup, games, message",
    [
        ([0] * 7, 1, "lineup must be 8 ints"),
        ([0] * 7 + [2], 1, "participants 0..1"),
        (LINEUP, 0, "games must be a positive int"),
    ],
)
def test_a_bad_lineup_or_game_count_is_refused(lineup, games, message):
    with pytest.raises(ValueError, match=message):
        next(recording.record_shards(recorder(), (), lineup, games, SEED))


def test_the_cli_records_and_prints_one_json_line(tmp_path, capsys):
    """The shared recorder's games through the CLI (its programs come from the compilation cache)."""
    from experiments import record

    out = tmp_path / "data"
    rules = [f"--set={name}={value}" for name, value in TINY.items()]
    result = record.main(
        [
            PLAYERS[0],
            "--vs",
            ",".join(PLAYERS[1:]),
            "--positions",
            "0,3",
            "--games",
            "2",
            "--batch-games",
            "2",
            "--seed",
            str(SEED),
            "--out",
            str(out),
            "--quiet",
            *rules,
        ]
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    assert result["rotations"] == 8 and result["games"] == 2 and result["shards"] == 1
    np.testing.assert_array_equal(dataset.open_dataset(out).load()["action"], recorded()[0]["action"])


def test_an_oracle_recording_holds_the_vector_recordings_games_and_each_seats_oracle_observation(tmp_path):
    """obs="oracle": the games of the vector recording of the same seed and players (every field but obs equal,
    obs's first obs_size columns its vector observations), and every row the oracle env's observation of its seat
    at its step, replayed from the recorded actions of all 8 positions (a seat out of the game cannot act)."""
    out = tmp_path / "oracle"
    recording.record(
        PLAYERS,
        out,
        games=NUM_GAMES,
        positions=tuple(range(8)),
        seed=SEED,
        batch_games=NUM_GAMES,
        rules=TINY,
        obs="oracle",
    )  # recorded()'s first batch, every position
    data = dataset.open_dataset(out)
    obs_size, width = game().obs_size, game().obs_size + ORACLE_SIZE
    assert data.manifest["meta"]["obs"] == "oracle"
    assert data.manifest["fields"]["obs"] == {"dtype": "<f4", "shape": [width]}
    oracle, vector = data.load(), recorded()[0]
    kept = np.isin(oracle["position"], POSITIONS)
    for name in recording.FIELDS:
        got = oracle[name][kept]
        np.testing.assert_array_equal(got[:, :obs_size] if name == "obs" else got, vector[name], err_msg=name)
    assert oracle["obs"][:, obs_size:].any()

    num_envs, num_steps = NUM_GAMES * 8, int(oracle["step"].max()) + 1
    env = oracle["game"].astype(np.int64) * 8 + oracle["rotation"]
    actions = np.zeros((num_steps, num_envs, 8), np.int32)
    actions[oracle["step"], env, oracle["seat"]] = oracle["action"]
    venv = jaxgame.VecEnv(jaxgame.make("autochess", obs="oracle", **TINY), num_envs)
    states, ts = jax.vmap(venv.env.reset)(jnp.repeat(reset_keys(), 8, axis=0))
    step = jax.jit(venv.step)
    for t in range(num_steps):
        at = oracle["step"] == t
        np.testing.assert_array_equal(
            oracle["obs"][at], np.asarray(ts.observation)[env[at], oracle["seat"][at]], err_msg=f"step {t}"
        )
        states, ts = step(states, jnp.asarray(actions[t]))


def test_a_labelled_recording_stores_the_labellers_action_in_the_games_its_players_played(tmp_path):
    """label="greedy" (DAgger's data): the games are recorded()'s (every field equal, ``played`` its actions); at
    position 0, where greedy plays, the label is the action sent; at position 3, where a random bot plays, it is a
    legal action that often differs; the summary's agreement is the share of decisions where they match."""
    out = tmp_path / "labelled"
    summary = recording.record(
        PLAYERS, out, games=NUM_GAMES, positions=POSITIONS, seed=SEED, batch_games=NUM_GAMES, rules=TINY, label="greedy"
    )
    data = dataset.open_dataset(out)
    labelled, plain = data.load(), recorded()[0]
    assert data.manifest["meta"]["label"] == "greedy"
    assert set(labelled) == set(recording.FIELDS) | set(recording.LABELLED_FIELDS)
    for name in recording.FIELDS:
        if name != "action":
            np.testing.assert_array_equal(labelled[name], plain[name], err_msg=name)
    np.testing.assert_array_equal(labelled["played"], plain["action"])
    label, played, decision = labelled["action"], labelled["played"], labelled["decision"]
    assert labelled["mask"][np.arange(label.size), label].all()
    greedy_seat = labelled["position"] == 0
    np.testing.assert_array_equal(label[greedy_seat], played[greedy_seat])
    assert (label != played)[~greedy_seat & decision].mean() > 0.3
    assert summary["label"] == "greedy"
    assert summary["label_agreement"] == pytest.approx((label == played)[decision].mean(), abs=1e-4)


def test_a_labeller_must_be_a_player(tmp_path):
    with pytest.raises(ValueError, match="nobody"):
        recording.record(PLAYERS, tmp_path / "x", games=1, rules=TINY, label="nobody")
    with pytest.raises(ValueError, match="label must be a participant index in 0..1"):
        recording.make_recorder(game(), (), 1, (0,), BOTS, label=2)


def test_games_of_bots_record_one_observation_kind(tmp_path):
    """A dataset field is one array: obs="both" (the env's dict of vector and pixels) is refused, naming the kinds."""
    with pytest.raises(ValueError, match=r"obs must be one of \('vector', 'pixels', 'oracle'\), got 'both'"):
        recording.record(PLAYERS, tmp_path / "both", games=1, rules=TINY, obs="both")


def test_packed_pixels_are_stored_packed():
    """``samples`` keeps the observations' dtype and per-sample shape (uint8[72, 20] packed frames stay so); the
    whole path on pixel games: the opt-in test below."""
    steps, envs = 3, NUM_GAMES * 8
    rng = np.random.default_rng(0)
    live = np.ones((steps, envs, len(POSITIONS)), bool)
    live[2:, :4] = False
    rows = {
        "obs": rng.integers(0, 256, (steps, envs, len(POSITIONS), 72, 20), dtype=np.uint8),
        "mask": np.ones((steps, envs, len(POSITIONS), 4), bool),
        "action": np.zeros((steps, envs, len(POSITIONS)), np.int32),
        "reward": np.zeros((steps, envs, len(POSITIONS)), np.float32),
        "live": live,
    }
    shard = recording.samples(recorder(), rows, np.ones((envs, 8), np.int32), 0)
    assert shard["obs"].dtype == np.uint8 and shard["obs"].shape == (int(live.sum()), 72, 20)
    np.testing.assert_array_equal(shard["obs"][0], rows["obs"][0, 0, 0])
    np.testing.assert_array_equal(shard["obs"][1], rows["obs"][1, 0, 0])  # env 0, position 0, step 1


@pytest.mark.slow(
    reason="~20 s: compiles the pixel renderer; the default suite checks the storage "
    "(test_packed_pixels_are_stored_packed)"
)
def test_the_cli_records_pixel_games_packed(tmp_path, capsys):
    """One player for every seat: one rotation; pixel observations are stored packed, as the env gives them."""
    from experiments import record

    out = tmp_path / "pixels"
    rules = [f"--set={name}={value}" for name, value in TINY.items()]
    result = record.main(
        ["greedy", "--vs", "greedy", "--games", "1", "--obs", "pixels", "--out", str(out), "--quiet", *rules]
    )
    assert result["rotations"] == 1 and result["games"] == 1
    manifest = dataset.open_dataset(out).manifest
    assert manifest["fields"]["obs"] == {"dtype": "|u1", "shape": [72, 20]}
    assert manifest["meta"]["obs"] == "pixels" and manifest["meta"]["positions"] == [0]
    data = dataset.open_dataset(out).load()
    assert data["obs"].dtype == np.uint8 and data["obs"].any() and (data["rotation"] == 0).all()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["greedy", "--vs", "greedy,random"], "--vs needs 1 or 7 comma-separated players"),
        (["greedy", "--vs", "greedy", "--positions", "a"], "--positions 'a'"),
        (["greedy", "--vs", "greedy", "--games", "0"], "--games must be >= 1"),
        (["greedy", "--vs", "greedy", "--set", "max_rounds=x"], "GameConfig.max_rounds must be an int"),
        (["greedy", "--vs", "greedy", "--set", "nope=3"], "not a game rule"),
        (["nobody/run", "--vs", "greedy"], "unknown player 'nobody/run'"),
        (["greedy", "--vs", "nobody/run"], "--vs: unknown player 'nobody/run'"),
    ],
)
def test_the_cli_refuses_bad_input_in_one_line(tmp_path, capsys, argv, message):
    from experiments import record

    with pytest.raises(SystemExit) as exit_info:
        record.main(argv + ["--out", str(tmp_path / "d"), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "d").exists()
