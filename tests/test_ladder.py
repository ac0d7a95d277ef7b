"""The ladder (agents.arena.ladder, experiments.ladder): the shipped version's population is the fit of its committed
games, its members are the pinned ones, a rating is deterministic and consistent with its games, and bad input is
one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from agents.arena import ladder
from agents.arena.game_fingerprint import game_fingerprint
from experiments import ladder as ladder_cli
from tests.xla_flags import USER_COMPILER_OPTIONS

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "docs" / "results" / "ladder_v1_population.games.json"


def test_ladder_v1_is_the_fit_of_its_committed_games():
    shipped = ladder.load_ladder("ladder-v1")  # the pins hold: every baseline member is the one it was fitted with
    games = json.loads(EVIDENCE.read_text())
    assert [m["spec"] for m in shipped["members"]] == games["members"] == list(ladder.LADDER_V1_MEMBERS)
    assert np.asarray(games["ranks"]).shape == (shipped["fit"]["lineups"], 8, 8)
    refit = ladder.population_from_games(
        games["members"],
        games["lineups"],
        games["ranks"],
        shipped["fit"]["seed"],
        shipped["fit"]["bootstrap_draws"],
        shipped["scale"]["prior_sd"],
    )
    assert refit["scale"] == shipped["scale"]
    assert {k: refit["fit"][k] for k in refit["fit"] if k != "game_sha256"} == {
        k: shipped["fit"][k] for k in refit["fit"] if k != "game_sha256"
    }
    for mine, theirs in zip(refit["members"], shipped["members"]):
        assert mine.pop("strength") == pytest.approx(theirs.pop("strength"), abs=1e-6)
        assert mine == theirs
    expert = next(m for m in shipped["members"] if m["spec"] == "expert")
    assert expert["points"] == 1000.0 and expert["ci95"] == [1000.0, 1000.0]
    for member in shipped["members"]:
        assert member["ci95"][0] <= member["points"] <= member["ci95"][1]
    # random placed last in every game: no finite likelihood maximum, so its row says its points are the prior's
    assert "set by the prior" in next(m for m in shipped["members"] if m["spec"] == "random")["note"]


def test_points_are_the_documented_scale():
    assert ladder.points(1.5, 1.5) == 1000.0
    assert ladder.points(1.5 + np.log(10.0), 1.5) == pytest.approx(1400.0)  # 400 points per factor of 10


def test_a_member_that_is_not_the_pinned_one_is_refused(tmp_path, monkeypatch):
    shipped = json.loads((ladder.LADDERS / "ladder-v1.json").read_text())
    member = next(m for m in shipped["members"] if m["spec"] == "baseline:ppo_small-v2")
    member["sha256"] = "0" * 64
    (tmp_path / "ladder-v1.json").write_text(json.dumps(shipped))
    monkeypatch.setattr(ladder, "LADDERS", tmp_path)
    with pytest.raises(ladder.LadderError, match="ppo_small-v2 is not the policy the ladder was fitted with"):
        ladder.load_ladder("ladder-v1")
    with pytest.raises(ladder.LadderError, match="no ladder 'ladder-v9'; shipped: ladder-v1"):
        ladder.load_ladder("ladder-v9")


def test_a_changed_game_or_bot_source_is_noted_when_it_plays_differently(monkeypatch):
    shipped = ladder.load_ladder("ladder-v1")
    current = {
        **shipped,
        "fit": {**shipped["fit"], "game_sha256": ladder.game_pin()},
        "members": [{**m, "sha256": ladder.member_pin(m["spec"])} for m in shipped["members"]],
    }
    fingerprints = []  # the fingerprint's rules, each time it is computed
    fitted = shipped["fit"]["game_fingerprint"]

    def fingerprint(rules, answer):
        fingerprints.append(rules)
        return answer

    monkeypatch.setattr(ladder, "remembered_fingerprint", lambda rules: fingerprint(rules, fitted))
    assert ladder.drift_notes(current) == [] and fingerprints == []  # the same source: nothing to check
    game = {**current, "fit": {**current["fit"], "game_sha256": "f" * 64}}
    bots = {
        **current,
        "members": [
            {**m, "sha256": "e" * 64} if m["spec"] in ("expert", "expert_public", "greedy", "random") else m
            for m in current["members"]
        ],
    }
    # another source that plays the fingerprint games as fitted: no note
    assert ladder.drift_notes(game) == [] and ladder.drift_notes(bots) == []
    assert fingerprints == [shipped["fit"]["rules"]] * 2
    # ... and one that plays them differently
    monkeypatch.setattr(ladder, "remembered_fingerprint", lambda rules: fingerprint(rules, "0" * 64))
    for changed in (game, bots):
        (note,) = ladder.drift_notes(changed)
        assert "play differently" in note and "not on the ladder's scale" in note
    # a ladder fitted without a fingerprint notes any changed source
    unprinted = {**game, "fit": {k: v for k, v in game["fit"].items() if k != "game_fingerprint"}}
    assert [n for n in ladder.drift_notes(unprinted) if "game's source" in n]
    unprinted = {**bots, "fit": {k: v for k, v in bots["fit"].items() if k != "game_fingerprint"}}
    assert [n for n in ladder.drift_notes(unprinted) if "bots' source" in n]


@pytest.mark.xdist_group("ladder")
def test_the_game_plays_the_fingerprint_games_as_when_ladder_v1_was_fitted():
    """Fails when a change alters how the game or its bots play: ladder-v1's ratings would not hold for it (fit a new
    ladder version, docs/evaluation.md)."""
    shipped = ladder.load_ladder("ladder-v1")
    assert game_fingerprint(shipped["fit"]["rules"]) == shipped["fit"]["game_fingerprint"]  # computed, not remembered
    # the fingerprint is of the games played: other games under the same rules give another one
    assert game_fingerprint(shipped["fit"]["rules"], seed=1) != shipped["fit"]["game_fingerprint"]


def test_a_fingerprint_is_remembered_per_game_source_rules_and_jax(tmp_path, monkeypatch):
    from agents.arena import game_fingerprint as fp

    computed = []
    monkeypatch.setattr(fp, "CACHE", tmp_path / "fingerprints")
    monkeypatch.setattr(fp, "game_fingerprint", lambda rules: computed.append(rules) or "a" * 64)
    monkeypatch.delenv("JAXGAME_NO_CACHE", raising=False)
    assert fp.remembered_fingerprint({"max_rounds": 40}) == "a" * 64 and len(computed) == 1
    assert fp.remembered_fingerprint({"max_rounds": 40}) == "a" * 64 and len(computed) == 1  # read back
    assert fp.remembered_fingerprint({"max_rounds": 30}) == "a" * 64 and len(computed) == 2  # other rules
    (kept,) = [p for p in (tmp_path / "fingerprints").glob("*.json") if fp._key({"max_rounds": 40}) in p.name]
    kept.write_text("{not json")  # a damaged entry is recomputed
    assert fp.remembered_fingerprint({"max_rounds": 40}) == "a" * 64 and len(computed) == 3
    monkeypatch.setattr(fp.jax, "__version__", "0.0.0")  # another JAX: its own entry
    assert fp.remembered_fingerprint({"max_rounds": 40}) == "a" * 64 and len(computed) == 4
    monkeypatch.setenv("JAXGAME_NO_CACHE", "1")
    fp.remembered_fingerprint({"max_rounds": 40})
    assert len(computed) == 5


def _same(a, b):
    return {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}


def _docs_policy():
    """The outside policy of docs/evaluation.md ("Trained elsewhere"), run from the page's own code block."""
    text = (ROOT / "docs" / "evaluation.md").read_text()
    block = text.split("**Trained elsewhere:**", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert "result = rate_on_ladder(MyPolicy(" in block
    namespace = {}  # the page's call, its arguments kept: dict(policy=MyPolicy(...), games=64)
    exec(
        compile(block.replace("result = rate_on_ladder(", "result = dict(policy=", 1), "docs/evaluation.md", "exec"),
        namespace,
    )
    return namespace["result"]["policy"]


@pytest.mark.xdist_group("ladder")
def test_an_outside_policy_is_rated_deterministically_and_consistently_with_its_games():
    policy = _docs_policy()  # zero logits: a uniformly random legal action, like the random bot
    # run-bound (two ratings of 16 games on one compiled table): compiled as users do, -O0 would run it 4x slower
    options = USER_COMPILER_OPTIONS
    result = ladder.rate_on_ladder(policy, games=2, batch=2, draws=100, seed=5, compiler_options=options)
    again = ladder.rate_on_ladder(policy, games=2, batch=2, draws=100, seed=5, compiler_options=options)
    assert _same(result, again) and result["player"] == "mine"
    assert result["rated_games"] + result["unfinished_games"] == 16
    assert sum(row["games"] for row in result["vs_members"].values()) == 7 * result["rated_games"]
    assert result["ci95"][0] <= result["rating"] <= result["ci95"][1]
    shipped = {m["spec"]: m["points"] for m in ladder.load_ladder()["members"]}
    # random legal play: below every member but random itself, as far as 16 games can show
    assert result["rating"] < shipped["greedy"] and result["mean_placement"] > 6.5
    for row in result["vs_members"].values():
        assert 0 <= row["above_rate"] <= 1 and 1 <= row["placement"] <= 8
    text = ladder.ladder_table(result)
    assert text.startswith("mine on ladder-v1: ") and "expert = 1000" in text
    last_everywhere = result["mean_placement"] == 8.0
    assert last_everywhere == any("a bound, not a measurement" in n for n in result["notes"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no-such-player"], "unknown player 'no-such-player'"),
        ([], "give a PLAYER to rate, or --show / --fit"),
        (["greedy", "--games", "1"], "--games must be >= 2"),
        (["greedy", "--ladder", "ladder-v9"], "--ladder ladder-v9: no such version (shipped: ladder-v1)"),
        (["--fit", "--out", "x"], "--fit needs --version NAME"),
        (["--fit", "--version", "ladder-v1", "--out", "x"], "ladder-v1 is shipped already"),
        (["greedy", "--show"], "--show takes no PLAYER"),
        (["greedy", "--agreement"], "--agreement takes no PLAYER"),
        (["--show", "--fit"], "not allowed with argument"),
        (["--show", "--deterministic"], "--deterministic applies to a rated PLAYER"),
        (["greedy", "--deterministic"], "deterministic play is for a policy; greedy is a bot"),
        (["greedy", "--all-checkpoints", "--out", "x"], "--all-checkpoints rates a training run's checkpoints"),
        (["baseline:ppo_small-v1", "--all-checkpoints", "--out", "x"], "give RUN_DIR, not baseline:ppo_small-v1"),
        (["--show", "--all-checkpoints"], "does not go with --show"),
        (["greedy", "--out", "/proc/no/such.json"], "--out"),
        (["greedy", "--members", "expert,greedy"], "--members names a new version's population: it goes with --fit"),
        (
            ["--fit", "--version", "ladder-v2", "--out", "x", "--members", "expert,greedy,random"],
            "at least 8 different",
        ),
        (
            [
                "--fit",
                "--version",
                "ladder-v2",
                "--out",
                "x",
                "--members",
                "greedy,random,search,expert_public,"
                "baseline:ppo_small-v1,baseline:ppo_small-v2,baseline:ppo_small-v3,baseline:ppo_large-v1",
            ],
            "expert among them",
        ),
        (["--fit", "--version", "ladder-v2", "--out", "x", "--members", "expert,nobody"], "unknown player 'nobody'"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        ladder_cli.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err, err


def test_a_bot_outside_the_population_joins_its_tables_as_one_more_bot():
    members = list(ladder.LADDER_V1_MEMBERS)
    specs = [m for m in members if not m.startswith("baseline:")]  # the bots alone: no policy is loaded
    _, bots, participant = ladder._participants(specs, extra_bot="search")
    assert bots == ["random", "greedy", "expert", "expert_public", "search"]
    assert participant == {"random": 0, "greedy": 1, "expert": 2, "expert_public": 3, "search": 4}
    assert ladder._candidate("search", members) == ("search", "search", None)
    assert ladder.member_pin("search") != ladder.member_pin("expert")  # pinned by its own source file


def test_show_prints_the_population(capsys):
    summary = ladder_cli.main(["--show"])
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1])["version"] == "ladder-v1" == summary["version"]
    assert "ladder-v1: " in err and "baseline:ppo_large-v1" in err


def test_the_packaged_ladders_are_json_files_in_the_package(tmp_path):
    assert ladder.available() == ["ladder-v1"]
    copy = tmp_path / "copy.json"
    shutil.copy(ladder.LADDERS / "ladder-v1.json", copy)
    assert json.loads(copy.read_text())["scale"]["anchor"] == "expert"


def test_a_learning_curve_rates_every_kept_checkpoint_on_the_same_games(tmp_path):
    """``--all-checkpoints``: each kept step rated (here by a stand-in of rate_on_ladder) on the same game seeds,
    oldest first, and drawn with the members as reference lines."""
    from agents.policies.load import PolicyError
    from agents.storage.checkpoints import CheckpointStore

    run_dir = tmp_path / "run"
    with CheckpointStore(run_dir / "checkpoints", keep=5) as store:
        for step in (30, 10, 20):
            store.save(step, {"w": np.ones(2, np.float32)}, {"step": step})
    calls = []

    def stand_in(spec, **kwargs):
        calls.append((spec, kwargs["games"], kwargs["seed"], kwargs["deterministic"]))
        update = int(spec.rsplit(":", 1)[1])
        return {
            "rating": 800.0 + update,
            "ci95": [780.0 + update, 830.0 + update],
            "half_width": 25.0,
            "mean_placement": 6.0 - update / 10,
        }

    result = ladder.rate_checkpoints_on_ladder(run_dir, games=4, seed=7, rate=stand_in, deterministic=True)
    assert calls == [(f"{run_dir}:{s}", 4, 7, True) for s in (10, 20, 30)]
    assert [p["update"] for p in result["curve"]] == [10, 20, 30]
    assert result["curve"][1] == {
        "update": 20,
        "rating": 820.0,
        "ci95": [800.0, 850.0],
        "half_width": 25.0,
        "mean_placement": 4.0,
    }
    png = tmp_path / "curve.png"
    ladder.plot_ladder_curve(png, result)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    with pytest.raises(PolicyError, match="no checkpoints/ there"):
        ladder.rate_checkpoints_on_ladder(tmp_path / "nothing", rate=stand_in)


def test_all_checkpoints_needs_an_out_directory(tmp_path, capsys):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(SystemExit) as exit_info:
        ladder_cli.main([str(tmp_path / "run"), "--all-checkpoints"])
    assert exit_info.value.code == 2 and "--all-checkpoints needs --out DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ladder_cli.main([f"{tmp_path / 'run'}:3", "--all-checkpoints", "--out", str(tmp_path / "o")])
    assert "give RUN_DIR" in capsys.readouterr().err


def test_a_run_of_independent_learners_and_a_bot_played_deterministically_are_refused_before_any_game():
    """The ladder rates one policy: a policy object of independent learners (one parameter set per seat) is refused
    by name, before any table is built; so is ``deterministic`` for a bot."""
    import dataclasses

    from agents.config import TrainConfig
    from agents.policies.load import PolicyError

    @dataclasses.dataclass(frozen=True)
    class Stand:
        name: str
        network: object
        params: object
        config: object

    independent = Stand("mine", None, {}, TrainConfig.from_fields(independent=True))
    with pytest.raises(PolicyError, match="mine is a run of independent learners"):
        ladder.rate_on_ladder(independent, games=2)
    with pytest.raises(PolicyError, match="deterministic play is for a policy; greedy is a bot"):
        ladder.rate_on_ladder("greedy", games=2, deterministic=True)
