"""``evaluate --save-replays N DIR``: the records of the first N games of each lineup are those games of the
evaluation (same placements as its table), written as replay files and viewer pages."""

from __future__ import annotations

import json

import pytest

from agents.replays import format as replay_format
from agents.replays.evaluation import lineup_slug, save_evaluation_replays
from experiments import evaluate

TINY = dict(steps_per_round=2, max_rounds=10, starting_life=12, max_combat_ticks=150)
RULES = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]


def test_lineup_slugs_are_file_names():
    assert lineup_slug("greedy") == "greedy"
    assert lineup_slug("baseline:ppo_small-v1") == "baseline-ppo_small-v1"
    assert lineup_slug("greedy,greedy,greedy,greedy,greedy,greedy,random") == "greedy-x6-random"
    assert lineup_slug("runs/a b:12") == "runs-a-b-12"


def test_saved_replays_are_the_evaluations_games(tmp_path, capsys):
    out = tmp_path / "replays"
    result = evaluate.main(
        [
            "greedy",
            "--vs",
            "random",
            "--vs",
            "expert",
            "--games",
            "3",
            "--seed",
            "5",
            *RULES,
            "--save-replays",
            "2",
            str(out),
            "--quiet",
        ]
    )
    assert [(r["lineup"], r["game"]) for r in result["replays"]] == [
        ("random", 0),
        ("random", 1),
        ("expert", 0),
        ("expert", 1),
    ]
    tables = evaluate.play_lineups(
        {"random": ["greedy"] + ["random"] * 7, "expert": ["greedy"] + ["expert"] * 7}, 3, 5, TINY
    )
    for saved in result["replays"]:
        rec = replay_format.read(saved["json"])
        assert rec["placements"] == tables[saved["lineup"]][saved["game"], 0].tolist()  # rotation 0: position j, seat j
        assert saved["placement"] == rec["placements"][0]
        assert (out / f"{saved['lineup']}-game{saved['game']}.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["replays"] == result["replays"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["greedy", "--save-replays", "0", "DIR"], "N must be an int in [1, --games=16]"),
        (["greedy", "--games", "2", "--save-replays", "3", "DIR"], "N must be an int in [1, --games=2]"),
        (["--save-replays", "1", "DIR"], "give the PLAYER"),
        (["greedy", "--save-replays", "1", "/proc/x"], "/proc/x"),
    ],
)
def test_bad_save_replays_is_one_line(argv, message, tmp_path, capsys):
    argv = [str(tmp_path / "d") if a == "DIR" else a for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "d").exists()


def test_the_count_is_checked_by_the_library_too(tmp_path):
    with pytest.raises(ValueError, match=r"\[1, games=4\]"):
        save_evaluation_replays("greedy", {"random": ["random"] * 7}, 4, 0, 5, tmp_path)
