"""``python -m benchmarks.harness --what replay`` on a short game of bots: the game it times is the one
``record.record_game`` records, its parts are timed, and a second call of the same lineup compiles nothing.

Its own file: tests/test_benchmark_train.py skips without gymnax, which this benchmark does not need.
"""

from __future__ import annotations

import json

import pytest

from agents.replays import format as replay_format
from agents.replays import record
from benchmarks.harness.__main__ import main as benchmark_main

#: tests/test_replays.py's game (the same rules and lineup: the compiled recorder is shared in one worker)
TINY = dict(steps_per_round=2, max_rounds=10, starting_life=12, max_combat_ticks=150)
BOTS = ["expert", "greedy", "random", "greedy", "expert", "random", "greedy", "random"]
SEED = 3
PARTS = ("play_s", "fights_s", "to_record_s", "write_s", "total_s")

pytestmark = pytest.mark.xdist_group("replays")


def test_replay_benchmark_times_the_recorded_game(tmp_path, capsys):
    argv = ["--what", "replay", "--players", ",".join(BOTS), "--seed", str(SEED), "--repeats", "2", "--quiet"]
    for name, value in TINY.items():
        argv += ["--set", f"{name}={value}"]
    result = benchmark_main(argv)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    assert result["what"] == "replay" and result["players"] == BOTS and result["seed"] == SEED
    assert result["rules"] == TINY and result["repeats"] == 2

    game = record.record_game(BOTS, SEED, TINY)  # the game the benchmark recorded, once more
    assert result["steps"] == game["steps"] > 0 and result["finished"] is game["finished"] is True
    assert result["placements"] == game["placements"] and sorted(result["placements"]) == list(range(1, 9))
    assert result["fight_steps"] == sum(game["fight"]) >= 1
    assert result["fights"] == len(game["fights"]) >= result["fight_steps"]
    assert result["record_bytes"] == replay_format.write(game, tmp_path / "game.json")
    assert result["same_game"] is True

    first, again = result["first"], result["again"]
    assert all(first[p] > 0 and 0 < again[p]["best"] <= again[p]["median"] for p in PARTS)
    parts = sum(first[p] for p in PARTS[:-1])
    assert first["total_s"] == pytest.approx(parts, abs=1e-3)
    assert result["steps_per_s"]["best"] == pytest.approx(result["steps"] / again["play_s"]["best"], rel=1e-2)
    assert set(again["compiles"]) == {"play", "fights", "to_record", "write"}
    # the same lineup's second call reuses the compiled programs (record.game_recorder, the fights' recorder)
    assert result["compiled_again"] is False and not any(again["compiles"].values())


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--players", "greedy,expert"], "--players needs 1 or 8 comma-separated players"),
        (["--players", "greedyy"], "greedy"),
        (["--repeats", "0"], "--repeats must be positive"),
        (["--set", "max_round=3"], "did you mean max_rounds"),
        (["--set", "max_rounds=3"], "rules apply to games of bots only"),  # the default lineup: a policy
    ],
)
def test_replay_benchmark_refuses_bad_input(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        benchmark_main(["--what", "replay", *argv, "--quiet"])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1 and message in err, err
