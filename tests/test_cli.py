"""The experiment CLIs: the command-line convention (usage names, the positional player, ``--out``, ``--set``,
``--deterministic``, ``--games``, the aliases removed), evaluate end to end on tiny games, the benchmark's
choice of sweep."""

from __future__ import annotations

import importlib
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from benchmarks.harness.timing import default_sweep
from experiments import evaluate
from experiments.common import SCRIPTS

TINY = ["--games", "2", "--set", "max_rounds=3", "--set", "steps_per_round=2"]
ROOT = Path(__file__).resolve().parents[1]


#: the tests that run the same tiny bot tables (one program: bots random and greedy, 2 game seeds): one worker
#: traces and compiles it once
evaluate_group = pytest.mark.xdist_group("evaluate_cli")


def _module(name: str):
    """The module whose ``main`` a CLI runs (``benchmarks.harness``, run from a checkout, runs its ``__main__``)."""
    return importlib.import_module(name + ".__main__" if name == "benchmarks.harness" else name)


def _one_error_line(call, capsys, status: int = 2) -> str:
    """stderr of ``call()``, which must exit ``status`` with one line (argparse's usage line aside)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        call()
    err = capsys.readouterr().err
    assert exit_info.value.code == status, err
    assert len([line for line in err.strip().splitlines() if not line.startswith(("usage:", "(see "))]) == 1, err
    return err


# ---------------------------------------------------------------- the convention


def test_console_scripts_are_the_cli_modules_and_include_jaxgame_pipeline():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["jaxgame-pipeline"] == "experiments.pipeline:main"
    assert {name: target.split(":")[0].removesuffix(".__main__") for name, target in scripts.items()} == SCRIPTS
    for target in scripts.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), target


@pytest.mark.parametrize("module", ["benchmarks.harness", "benchmarks.compare_revisions"])
def test_the_benchmarks_are_no_console_scripts_and_name_their_module(module, monkeypatch, capsys):
    """benchmarks/ runs from a checkout and is not installed (tests/test_packaging.py): no console script runs it,
    and its usage line names the module."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert not [t for t in [*scripts.values(), *SCRIPTS.values()] if t.startswith("benchmarks")]
    monkeypatch.setattr(sys, "argv", [f"/src/{module.replace('.', '/')}.py"])
    with pytest.raises(SystemExit) as exit_info:
        _module(module).main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and out.startswith(f"usage: python -m {module} "), out[:200]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_usage_names_the_console_script_or_the_module(script, monkeypatch, capsys):
    module = SCRIPTS[script]
    as_module = f"/src/{module.replace('.', '/')}.py"
    for argv0, name in [(f"/venv/bin/{script}", script), (as_module, f"python -m {module}")]:
        monkeypatch.setattr(sys, "argv", [argv0])
        with pytest.raises(SystemExit) as exit_info:
            _module(module).main(["--help"])
        out = capsys.readouterr().out
        assert exit_info.value.code == 0 and out.startswith(f"usage: {name} "), out[:200]


@pytest.mark.parametrize("module", ["experiments.evaluate", "experiments.rate", "experiments.record"])
def test_games_means_game_seeds_in_8_seat_rotations(module, capsys):
    with pytest.raises(SystemExit):
        _module(module).main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "seat rotations" in text and "N x 8 games" in text, text


def _parsed(module: str, argv):
    """``(args, extra)`` of the module's ``parse_args(argv)`` (extra: its third value, or for a CLI that checks
    some arguments after importing the library, what its ``check_after_import`` returns: evaluate's rules)."""
    cli = _module(module)
    parsed = cli.parse_args(argv)
    if hasattr(cli, "check_after_import"):
        return parsed[1], cli.check_after_import(*parsed[:2])
    return parsed[1], parsed[2] if len(parsed) > 2 else None


#: (module, argv, the option that writes): every command that writes takes --out
WRITERS = [
    ("experiments.train", ["--preset=smoke"]),
    ("experiments.sweep", ["--preset=smoke"]),
    ("experiments.pipeline", []),
    ("experiments.record", ["greedy", "--vs", "greedy"]),
    ("experiments.rate", ["runs/a"]),
    ("experiments.baseline", ["freeze", "runs/a", "--name", "a-v1"]),
    ("benchmarks.harness", ["--what", "learning"]),
]


@pytest.mark.parametrize("module, argv", WRITERS)
def test_out_names_where_a_command_writes(module, argv, capsys):
    args, _ = _parsed(module, [*argv, "--out", "somewhere"])
    assert str(args.out) == "somewhere" and capsys.readouterr().err == ""


@pytest.mark.parametrize("module", ["experiments.plot", "experiments.render", "experiments.export"])
def test_out_in_the_file_writers_help(module, capsys):
    with pytest.raises(SystemExit):
        _module(module).main(["--help"])
    assert "--out" in capsys.readouterr().out


#: (module, argv with a flag earlier versions accepted as an alias, the flag, what replaced it)
REMOVED = [
    ("experiments.train", ["--preset=smoke", "--run-dir", "R"], "--run-dir", "--out"),
    ("experiments.sweep", ["--preset=smoke", "--run-dir", "R"], "--run-dir", "--out"),
    ("experiments.pipeline", ["--dir", "R"], "--dir", "--out"),
    ("benchmarks.harness", ["--what", "learning", "--run-dir", "R"], "--run-dir", "--out"),
    ("experiments.evaluate", ["--rule", "max_rounds=3"], "--rule", "--set"),
    ("experiments.evaluate", ["runs/a", "--greedy-policy"], "--greedy-policy", "--deterministic"),
    ("experiments.evaluate", ["runs/a", "--step", "5"], "--step", "the positional player RUN_DIR:STEP"),
    ("experiments.evaluate", ["--checkpoint=runs/a"], "--checkpoint", "the positional player RUN_DIR[:STEP]"),
    ("experiments.record", ["greedy", "--vs", "greedy", "--out", "D", "--rule", "max_rounds=3"], "--rule", "--set"),
    (
        "experiments.record",
        ["greedy", "--vs", "greedy", "--out", "D", "--greedy-policy"],
        "--greedy-policy",
        "--deterministic",
    ),
]


@pytest.mark.parametrize("module, argv, old, new", REMOVED, ids=[f"{m}{a[-2:]}" for m, a, *_ in REMOVED])
def test_removed_aliases_are_refused_naming_their_replacement(module, argv, old, new, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parsed(module, argv)
    err = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and len(err) == 2 and err[1].endswith("--help)"), err
    assert "unrecognized arguments" in err[0] and f"{old} was removed: use {new}" in err[0], err


def test_removed_aliases_are_not_in_the_help(capsys):
    with pytest.raises(SystemExit):
        evaluate.main(["--help"])
    out = capsys.readouterr().out
    assert "--deterministic" in out and "--greedy-policy" not in out and "--checkpoint" not in out
    assert "deprecated" not in out


def test_evaluate_takes_the_player_positionally():
    args, rules = _parsed("experiments.evaluate", ["runs/a:5", "--vs", "greedy", "--vs", "baseline:ppo_small-v1"])
    assert args.player == "runs/a:5" and rules == {}
    assert args.lineups == {"greedy": ["greedy"] * 7, "baseline:ppo_small-v1": ["baseline:ppo_small-v1"] * 7}
    args, _ = _parsed("experiments.evaluate", ["expert"])
    assert args.player == "expert" and list(args.lineups) == ["random", "greedy"]
    args, _ = _parsed("experiments.evaluate", ["--games", "4"])
    assert args.player is None and len(args.seats) == 8


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--vs", "greedy"], "--vs needs a PLAYER (python -m experiments.evaluate RUN_DIR[:STEP] --vs greedy)"),
        (["--deterministic"], "--deterministic needs a PLAYER"),
        (["runs/a", "--seats", "greedy"], "--seats was removed: use BOT --vs BOTS"),
        (["runs/a", "--vs", "greedy,random"], "7 comma-separated"),
        (["--seats", "greedy,random"], "--seats was removed: use BOT --vs BOTS"),
        (["--games", "0"], "--games must be >= 1"),
        (["runs/a", "--set", "lr=3e-4"], "--set lr: not a game rule"),
        (["--set", "max_round=3"], "did you mean max_rounds"),
        (["--set", "max_rounds=2.5"], "GameConfig.max_rounds must be an int"),
        (["--set", "max_rounds"], "expected NAME=VALUE"),
        (["--set", "max_rounds=1000"], "--set: GameConfig.max_rounds must be an int in [1, 200]"),
        (["baseline:ppo_small-v1", "--set", "max_rounds=3"], "a policy plays with the rules it trained with"),
    ],
)
def test_evaluate_bad_input_is_one_line(argv, message, capsys):
    err = _one_error_line(lambda: evaluate.main([*argv, "--quiet"]), capsys)
    assert message in err, err


# ---------------------------------------------------------------- one lineup: PLAYER --vs OPPONENTS

#: (the old --players text of record and replay, PLAYER, --vs): the same 8 seats' players
LINEUPS = [
    ("greedy", "greedy", "greedy"),
    ("expert,greedy,greedy,greedy,greedy,greedy,greedy,greedy", "expert", "greedy"),
    (
        "expert,greedy,random,greedy,expert_public,random,greedy,search",
        "expert",
        "greedy,random,greedy,expert_public,random,greedy,search",
    ),
    ("baseline:ppo_small-v1", "baseline:ppo_small-v1", "baseline:ppo_small-v1"),
]


@pytest.mark.parametrize("module, out", [("experiments.replay", "g.json"), ("experiments.record", "data")])
@pytest.mark.parametrize("players, player, vs", LINEUPS)
def test_player_vs_seats_the_lineup_players_did(module, out, players, player, vs):
    """``PLAYER --vs OPPONENTS`` is the lineup ``--players`` gave: seat (lineup position) 0 first, as the library
    reads both (``seat_players``: one player for all 8, or 8)."""
    from agents.replays.record import seat_players

    args, _ = _parsed(module, [player, "--vs", vs, "--out", out])
    assert args.players == seat_players(players.split(",")) and args.players[0] == player


#: the old --seats of evaluate's games of bots -> BOT --vs BOTS
BOT_TABLES = [
    "greedy,random,greedy,random,greedy,random,greedy,random",  # the default table
    "expert,greedy,greedy,greedy,greedy,greedy,greedy,greedy",
    "expert,greedy,random,search,expert_public,greedy,random,expert",
]


@pytest.mark.parametrize("seats", BOT_TABLES)
def test_evaluate_bot_vs_bots_is_the_table_seats_was(seats):
    first, *others = seats.split(",")
    args, rules = _parsed("experiments.evaluate", [first, "--vs", ",".join(others)])
    assert args.seats == tuple(seats.split(",")) and args.player == first and rules == {}
    if len(set(others)) == 1:  # one bot for the 7 other seats
        assert _parsed("experiments.evaluate", [first, "--vs", others[0]])[0].seats == tuple(seats.split(","))


@pytest.mark.parametrize(
    "argv",
    [
        ["expert"],  # two lineups (random, then greedy): two tables
        ["expert", "--vs", "greedy", "--vs", "random"],
        ["expert", "--vs", "baseline:ppo_small-v1"],  # a policy at the table
        ["baseline:ppo_small-v1", "--vs", "greedy"],
        ["--compare", "greedy", "expert", "--vs", "greedy"],
    ],
)
def test_evaluate_other_tables_are_no_bot_table(argv):
    assert _parsed("experiments.evaluate", argv)[0].seats is None


@evaluate_group
def test_evaluate_bot_vs_bots_reports_what_games_of_bots_report(capsys):
    """``greedy --vs random,greedy,...`` plays the default table of games of bots: the same seats, ranks and
    placements as ``evaluate`` without a PLAYER, and the player's summary besides."""
    table = evaluate.main([*TINY, "--quiet"])
    vs = "random,greedy,random,greedy,random,greedy,random"
    result = evaluate.main(["greedy", "--vs", vs, *TINY, "--quiet"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    for key in ("games", "rotations", "seats", "rules", "seed", "mean_placement", "placements", "ranks"):
        assert result[key] == table[key], key
    assert result["player"] == "greedy" and result["games_per_rotation"] == 2
    seat0 = [rank for game in result["ranks"] for rotation in game for rank in rotation[:1]]
    assert result[f"vs_{vs}"]["mean_placement"] == pytest.approx(sum(seat0) / len(seat0))


@pytest.mark.parametrize("module", ["experiments.train", "experiments.sweep"])
@pytest.mark.parametrize(
    "vs, opponents",
    [
        ("greedy", "greedy"),
        ("self", "self"),
        ("self,greedy,greedy,self,random,greedy,expert,greedy", "self,greedy,greedy,self,random,greedy,expert,greedy"),
        ("greedy,greedy,greedy,greedy,greedy,expert,expert", "self,greedy,greedy,greedy,greedy,greedy,expert,expert"),
    ],
)
def test_training_vs_is_the_opponents_field(module, vs, opponents):
    """train's and sweep's ``--vs`` sets ``task.opponents`` as ``--set opponents=...`` does (7 names: the seats
    after the learner's seat 0)."""
    _, by_vs = _parsed(module, ["--preset=smoke", "--vs", vs, "--out", "R", "--set", "lr=1e-3"])
    _, by_set = _parsed(module, ["--preset=smoke", "--set", f"opponents={opponents}", "--out", "R", "--set", "lr=1e-3"])
    assert by_vs == by_set == {"lr": "1e-3", "opponents": opponents}


def test_train_vs_builds_the_config_set_builds():
    from experiments import train

    parser, args, overrides = train.parse_args(["--preset=smoke", "--vs", "expert", "--out", "R"])
    config = train.build_config(parser, args, overrides)
    assert config.task.opponents == "expert" and config.task.seat_kinds == ("self",) + ("expert",) * 7
    assert config == train.build_config(*train.parse_args(["--preset=smoke", "--set", "opponents=expert"]))


#: (module, a removed lineup flag, what replaced it, the other arguments a call needs)
REMOVED_LINEUP_FLAGS = [
    ("experiments.replay", "--players", "PLAYER --vs OPPONENTS", ["--out", "g.json"]),
    ("experiments.record", "--players", "PLAYER --vs OPPONENTS", ["--out", "data"]),
    ("experiments.evaluate", "--seats", "BOT --vs BOTS", []),
]


@pytest.mark.parametrize("module, flag, new, argv", REMOVED_LINEUP_FLAGS)
@pytest.mark.parametrize(
    "given", [["{flag}", "greedy"], ["{flag}=greedy,random"], ["{flag}"], ["greedy", "--vs", "greedy", "{flag}", "x"]]
)
def test_a_removed_lineup_flag_is_refused_naming_its_replacement(module, flag, new, argv, given, capsys):
    """With a value or none, alone or beside PLAYER --vs: the error names the replacement, before any other (a
    missing PLAYER or --vs); the flag is not in the help."""
    with pytest.raises(SystemExit) as exit_info:
        _parsed(module, [*argv, *(word.format(flag=flag) for word in given)])
    err = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and len(err) == 2 and err[1].endswith("--help)"), err
    assert f"error: {flag} was removed: use {new}" in err[0], err
    with pytest.raises(SystemExit):
        _module(module).main(["--help"])
    assert flag not in capsys.readouterr().out


#: what a command line no longer says outside the history (docs/results.md, generated from the records that ran,
#: and the logs): record's and replay's --players, evaluate's --seats
_OLD_LINEUP = re.compile(
    r"python\s+-m\s+experiments\.(?:replay|record|evaluate)\b(?:[^\n`]|\\\n)*?--(?:players|seats)\b"
)


def test_no_current_command_line_uses_a_removed_lineup_flag():
    historic = {ROOT / "docs" / "results.md", *(ROOT / "docs").glob("log-*.md")}
    texts = [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs").rglob("*.sh"),
        *(ROOT / "notebooks").glob("*.ipynb"),
        *(ROOT / "experiments").glob("*.py"),
    ]
    stale = [
        f"{path.relative_to(ROOT)}: {match.group(0)[:80]}"
        for path in texts
        if path not in historic
        for match in _OLD_LINEUP.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not stale, stale


def test_baseline_freeze_never_writes_into_an_installed_package(tmp_path, monkeypatch, capsys):
    from agents.policies import baselines
    from experiments import baseline

    assert baseline.source_tree_directory() == baselines.DIRECTORY.resolve()  # this checkout: the default
    installed = tmp_path / "lib" / "site-packages" / "agents" / "policies" / "baseline_policies"
    monkeypatch.setattr(baselines, "DIRECTORY", installed)
    assert baseline.source_tree_directory() is None
    err = _one_error_line(lambda: baseline.main(["freeze", "runs/a", "--name", "a-v1"]), capsys)
    assert "give --out DIR" in err and not installed.exists()


# ---------------------------------------------------------------- evaluate on tiny games


@evaluate_group
def test_evaluate_main_quiet(capsys):
    """Bot games: 2 game seeds x 8 rotations of the default table's 8 bots."""
    result = evaluate.main([*TINY, "--quiet"])
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == result
    assert err == ""
    assert result["games"] == 2 and result["rotations"] == 8 and len(result["seats"]) == 8
    assert result["rules"] == {"max_rounds": 3, "steps_per_round": 2}
    ranks = result["ranks"]
    assert len(ranks) == 2 and all(
        len(game) == 8 and all(sorted(r) == list(range(1, 9)) for r in game) for game in ranks
    )
    assert set(result["mean_placement"]) == {"greedy", "random"}
    assert sum(result["mean_placement"].values()) == pytest.approx(9.0)  # 4 seats each: the means average to 4.5
    assert all(p["games"] == 2 * 8 * 4 for p in result["placements"].values()) and result["seconds"] > 0


@evaluate_group
def test_evaluate_cli_says_what_it_does_first(capfd):
    """What ``python -m experiments.evaluate`` prints, in order (its ``main``, run here: the process adds nothing)."""
    capfd.readouterr()
    returned = evaluate.main(TINY)
    out, err = capfd.readouterr()
    assert "playing 2 game seeds x 8 rotations of greedy,random," in err
    assert err.index("compiling") < err.index("played 16 games in ")
    result = json.loads(out.strip().splitlines()[-1])
    assert result == returned and result["games"] == 2


@evaluate_group
def test_evaluate_a_bot_as_the_player(capsys):
    """A bot is a player too: ``random --vs greedy`` seats it against 7 greedy bots, every seed in 8 rotations."""
    result = evaluate.main(["random", "--vs", "greedy", *TINY, "--quiet"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    assert result["player"] == "random" and result["games_per_rotation"] == 2
    summary = result["vs_greedy"]
    assert summary["games"] == 16 and 1 <= summary["mean_placement"] <= 8 and summary["ci95"] is not None


def test_benchmark_sweep_quick_on_cpu_full_elsewhere():
    quick = default_sweep("cpu")
    full = default_sweep("gpu")
    assert quick["name"] == "quick" and full["name"] == "full"
    assert quick["num_envs"] == [1, 64]
    assert full["num_envs"] == [1, 64, 1024, 4096]
    assert full["render_batch"] == [1, 64, 256] and full["fights"] == 1024 and full["skip_envs"] == 256
    assert quick["fights"] < full["fights"] and quick["skip_envs"] < full["skip_envs"]
    assert default_sweep("cpu", full=True) == full
    assert default_sweep("tpu") == full
    quick["num_envs"].append(7)  # a fresh copy: callers may change it
    assert default_sweep("cpu")["num_envs"] == [1, 64]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--what", "env", "--set", "lr=1e-4"], "--set applies to --what train and --what learning"),
        (["--what", "learning", "--presets", "ppo_small,smoke"], "trains one preset"),
        (["--what", "env", "--num-envs", "1,x"], "comma-separated ints"),
        (["--what", "combat", "--fights", "0"], "must be positive"),
        (["--what", "combat", "--combat-batch", "64,100"], "multiples of 8"),
        (["--what", "train", "--updates", "0", "--presets", "none"], "--updates must be positive"),
        (["--what", "sweep", "--presets", "ppo_gymnax"], "is a gymnax preset"),
        (["--what", "memory", "--devices", "1,x"], "--devices must be comma-separated ints"),
        (["--what", "sb3", "--opponents", "nobody"], "--opponents must be comma-separated bots"),
    ],
)
def test_benchmark_modes_refuse_bad_input_before_any_work(argv, message, capsys):
    from benchmarks.harness.__main__ import main

    err = _one_error_line(lambda: main([*argv, "--quiet"]), capsys)
    assert message in err, err


def test_compare_revisions_refuses_bad_input():
    from benchmarks import compare_revisions

    with pytest.raises(SystemExit, match="no-such-revision"):
        compare_revisions.main(["--baseline", "no-such-revision", "--quiet"])
    with pytest.raises(SystemExit):  # argparse: --num-envs must be positive ints
        compare_revisions.main(["--baseline", "HEAD", "--num-envs", "64,0"])
    with pytest.raises(SystemExit):  # argparse: an unknown workload
        compare_revisions.main(["--baseline", "HEAD", "--workload", "lategame"])
    assert compare_revisions.DEFAULT_ROUNDS == {"opening": 1, "midgame": 4} and compare_revisions.MIDGAME_SKIP == 10


@evaluate_group
def test_compare_cli_tests_two_bots_on_tiny_games(capsys):
    """``--compare random greedy``: each against 7 random bots on the same 2 game seeds; the table on stderr, the
    JSON (with the per-seed placements it tested) on stdout."""
    result = evaluate.main(["--compare", "random", "greedy", "--vs", "random", "--no-head-to-head", *TINY])
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == result
    assert "A = random, B = greedy: 2 game seeds x 8 rotations" in err and "vs random" in err
    assert list(result["settings"]) == ["vs random"] and result["games_per_rotation"] == 2
    setting = result["settings"]["vs random"]
    # random in every seat plays one game per seed whatever the rotation: its 8 positions take places 1..8
    assert setting["per_seed_a"] == [4.5, 4.5]
    assert setting["placement"]["mean_b"] == pytest.approx(sum(setting["per_seed_b"]) / 2)
    assert setting["placement"]["mean_b"] < 4.5
    assert setting["placement"]["test"] == "paired t-test" and setting["placement"]["df"] == 1
    assert result["rank_points"] == [90.0, 45.0, 0.0, -135.0] and setting["points"]["mean_a"] == 0.0
    # one setting tested: Holm adjusts nothing; the verdict (from the adjusted p) ends the table on stderr
    assert setting["placement"]["p_holm"] == setting["placement"]["p_value"]
    assert setting["points"]["p_holm"] == setting["points"]["p_value"]
    assert "p (Holm)" in err and result["verdict"]["text"] in err and "1 setting tested" in result["verdict"]["text"]


@evaluate_group
def test_compare_cli_over_training_seeds_pairs_the_lists_in_order(capsys):
    """``--compare random,random greedy,greedy``: two pairs, each compared as ``--compare random greedy`` is (the same
    game seeds, so the same numbers), then tested over the pairs: equal pairs leave no spread over seeds."""
    result = evaluate.main(
        ["--compare", "random,random", "greedy,greedy", "--vs", "random", "--no-head-to-head", *TINY]
    )
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == result
    assert result["a"] == "random,random" and result["b"] == "greedy,greedy" and len(result["pairs"]) == 2
    first, second = (pair["settings"]["vs random"]["placement"] for pair in result["pairs"])
    assert first == second and result["pairs"][0]["a"] == "random" and result["pairs"][0]["b"] == "greedy"
    over = result["settings"]["vs random"]
    assert over["per_pair_a"] == [4.5, 4.5] and over["per_pair_b"] == [first["mean_b"]] * 2
    placement = over["placement"]
    assert placement["difference"] == pytest.approx(first["difference"]) and placement["ci95"] == 0.0
    assert placement["p_value"] == 0.0 and result["verdict"]["a_better"] == []  # B (greedy) places better
    assert err.count("A = random, B = greedy: 2 game seeds") == 2
    assert "A = random,random, B = greedy,greedy: 2 pairs of training seeds" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--compare", "random,greedy", "greedy"], "A lists 2 players and B 1"),
        (["--compare", "random,", "greedy,random"], "an empty name"),
        (["--compare", "random,no/such/run", "greedy,random"], "no/such/run"),
        (["--compare", "random", "greedy", "--games", "1"], "--games >= 2"),
        (["--compare", "random", "greedy", "--rank-points", "3,2,1"], "1, 2, 4 or 8 finite values"),
        (["--compare", "random", "greedy", "--difference", "0"], "--difference must be > 0"),
        (["--compare", "random", "greedy", "runs/x"], "not a PLAYER"),
        (["--compare", "random", "greedy", "--checkpoint", "runs/x"], "--checkpoint was removed"),
        (["--compare", "random", "no/such/run"], "no/such/run"),
        (["--compare", "baseline:ppo_small-v1", "random", "--set", "max_rounds=3"], "rules apply to games of bots"),
    ],
)
def test_compare_cli_bad_input_is_one_line(args, message, capsys):
    err = _one_error_line(lambda: evaluate.main([*args, "--quiet"]), capsys)
    assert message in err, err


@pytest.mark.parametrize(
    "module", ["experiments.evaluate", "experiments.record", "experiments.replay", "experiments.play"]
)
def test_help_names_every_bot_from_the_code(module, capsys):
    from agents.policies.load import PLAYER_BOTS

    with pytest.raises(SystemExit):
        _module(module).main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(bot in text for bot in PLAYER_BOTS) and "baseline:NAME" in text, text


def test_an_unknown_set_key_points_to_the_clis_list_fields(capsys):
    from experiments import train

    with pytest.raises(SystemExit) as exit_info:
        train.main(["--preset=smoke", "--set", "nope=1", "--out", "unused"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "unknown config key(s) 'nope'" in err, err
    assert "python -m experiments.train --list-fields lists them" in err and "field_docs" not in err


# ---------------------------------------------------------------- errors before JAX

#: bad invocations a CLI answers from its arguments alone: (module, argv, a part of the one-line message)
BEFORE_JAX = [
    ("experiments.train", ["--preset=smok"], "unknown preset 'smok'; did you mean smoke?"),
    ("experiments.train", ["--preset=smoke", "--set", "lrr=1"], "unknown config key(s) 'lrr' (did you mean lr?)"),
    ("experiments.train", ["--preset=smoke", "--set", "zzzq=1"], "python -m experiments.train --list-fields"),
    ("experiments.train", ["--preset=smoke", "--out", "/proc/no/such/run"], "--out /proc/no/such/run"),
    ("experiments.train", ["--resume"], "--resume needs --out RUN_DIR"),
    ("experiments.evaluate", ["runs/no-such-dir", "--vs", "greedy"], "unknown player 'runs/no-such-dir'"),
    ("experiments.evaluate", ["greedy", "--vs", "grredy"], "did you mean greedy?"),
    ("experiments.evaluate", ["--games", "0"], "--games must be >= 1"),
    ("experiments.evaluate", ["greedy", "--save-replays", "2", "/proc/no/dir"], "--save-replays DIR"),
    ("experiments.replay", ["greedy", "--vs", "greedy", "--out", "game.mp4"], "this suffix is not one of them"),
    (
        "experiments.replay",
        ["greedy", "--vs", "greedy", "--top-k", "0", "--out", "g.json"],
        "--top-k must be in 1..258",
    ),
    (
        "experiments.replay",
        ["greedy", "--vs", "greedy", "--set", "max_round=3", "--out", "g.json"],
        "did you mean max_rounds",
    ),
    ("experiments.replay", ["--players", "greedy", "--out", "g.json"], "--players was removed: use PLAYER --vs"),
    ("experiments.replay", ["greedy", "--vs", "greedy,random", "--out", "g.json"], "--vs needs 1 or 7"),
    ("experiments.replay", ["expert,greedy", "--vs", "greedy", "--out", "g.json"], "the others are --vs's"),
    ("experiments.evaluate", ["greedy", "--set", "lr=3e-4"], "--set lr: not a game rule"),
    ("experiments.ladder", ["no-such-player"], "unknown player 'no-such-player'"),
    ("experiments.ladder", ["greedy", "--ladder", "ladder-v9"], "no such version (shipped: ladder-v1)"),
    ("experiments.export", ["greedy", "--out", "out"], "is a scripted bot, not a trained policy"),
    ("experiments.rate", ["runs/no-such-run"], "unknown player 'runs/no-such-run'"),
    ("experiments.record", ["grredy", "--vs", "greedy", "--out", "data"], "did you mean greedy?"),
    ("experiments.record", ["greedy", "--vs", "grredy", "--out", "data"], "did you mean greedy?"),
    ("experiments.record", ["--players", "greedy", "--out", "data"], "--players was removed: use PLAYER --vs"),
    ("experiments.evaluate", ["--seats", "expert,greedy"], "--seats was removed: use BOT --vs BOTS"),
    (
        "experiments.train",
        ["--preset=smoke", "--vs", "greedy", "--set", "opponents=self"],
        "--vs sets task.opponents, and so does --set opponents=...",
    ),
    (
        "experiments.sweep",
        ["--preset=smoke", "--vs", "greedy", "--set", "task.opponents=self"],
        "--vs sets task.opponents, and so does --set task.opponents=...",
    ),
    ("experiments.play", ["--vs", "grredy"], "did you mean greedy?"),
    ("experiments.sweep", ["--preset=smok"], "did you mean smoke?"),
    ("experiments.sweep", ["--preset=smoke", "--set", "lrr=1e-4,3e-4"], "(did you mean lr?)"),
    ("experiments.sweep", ["--preset=smoke", "--seeds", "x"], "expected a count or a comma-separated list"),
    ("experiments.play", ["--vs", "greedy", "--seat", "9"], "--seat must be in 0..7"),
    ("experiments.play", ["--vs", "greedy", "--out", "game.html"], "the game is saved as a .json replay"),
    (
        "experiments.record",
        ["greedy", "--vs", "greedy", "--out", "data", "--set", "max_round=3"],
        "did you mean max_rounds",
    ),
    ("experiments.record", ["greedy", "--vs", "greedy", "--out", "data", "--games", "0"], "--games must be >= 1"),
    ("experiments.rate", ["greedy", "--bots", "grredy"], "--bots: unknown bot(s) ['grredy']"),
    ("experiments.export", ["baseline:ppo_small-v3", "--out", "/proc/no/dir"], "--out /proc/no/dir"),
]


def _run_without_jax(tmp_path, module, argv):
    """``python -m module *argv`` in a process where ``import jax`` fails: (returncode, stderr, seconds)."""
    import subprocess
    import time

    blocker = tmp_path / "no_jax"
    (blocker / "jax").mkdir(parents=True, exist_ok=True)
    (blocker / "jax" / "__init__.py").write_text("raise ImportError('imported jax before checking the arguments')\n")
    env = {**__import__("os").environ, "PYTHONPATH": f"{blocker}:{ROOT}"}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", module, *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    return out.returncode, out.stderr, time.perf_counter() - start


@pytest.mark.parametrize("module, argv, message", BEFORE_JAX)
def test_bad_arguments_are_answered_before_jax_is_imported(module, argv, message, tmp_path):
    code, err, _ = _run_without_jax(tmp_path, module, argv)
    assert code == 2 and message in err and "ImportError" not in err, err
    assert len([line for line in err.strip().splitlines() if not line.startswith("(see ")]) == 1, err


def test_a_bad_argument_costs_well_under_two_seconds(tmp_path):
    """The fastest of three runs (the suite runs beside this test; alone each takes about 0.15 s on 2 cores)."""
    seconds = min(_run_without_jax(tmp_path, "experiments.train", ["--preset=smok"])[2] for _ in range(3))
    assert seconds < 2.0, seconds


def test_the_clis_copy_of_the_names_is_current():
    from experiments import names

    assert names.generate() == names.names(), "experiments/cli_names.json is stale: python -m experiments.names --write"
