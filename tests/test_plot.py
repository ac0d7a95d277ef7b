"""experiments.plot: learning curves from fake runs' metrics.jsonl (no training, no jax)."""

import json
import math

import pytest
from PIL import Image

from agents.run import plotting
from agents.storage import metrics
from experiments import plot


def _record(update: int, eval_chunk: bool = False, placement: bool = True) -> dict:
    r = {
        "update": update,
        "env_steps": 4096 * update,
        "seat_steps": 8 * 4096 * update,
        "wall_s": 1.5 * update,
        "sps": 3300.0,
        "train/episodes": 2,
        "train/episode_return": -0.1 + 0.01 * update,
        "train/episode_length": 300.5,
        "loss/policy": 0.01,
        "loss/value": 0.3 / update,
        "loss/entropy": 2.1 - 0.01 * update,
        "loss/approx_kl": 0.01,
        "loss/clip_frac": 0.1,
        "train/lr": 3e-4,
        "perf/sps": 3300.0,
        "perf/seat_sps": 26400.0,
    }
    if placement:
        r["train/placement"] = 4.5 - 0.05 * update
    if eval_chunk:
        r["eval/placement_vs_random"] = 3.0
        r["eval/placement_vs_random_ci95"] = 0.4
        r["eval/placement_vs_greedy"] = 5.0
        r["eval/placement_vs_greedy_ci95"] = None  # one game seed: no interval
    return r


@pytest.fixture
def runs(tmp_path):
    """Two run dirs: an autochess one with bot seats (eval chunks, nulls, a NaN, a partial last line) and a
    gymnax-like one."""
    ac = tmp_path / "runs" / "ppo_autochess"
    ac.mkdir(parents=True)
    config = {"env": "autochess", "opponents": "greedy", "league_size": 0}
    lines = [json.dumps({"meta": {"config": config, "seed": 0, "versions": {"jax": "x"}}})]
    for u in range(1, 11):
        r = _record(u, eval_chunk=u % 5 == 0)
        if u == 3:  # no episode finished in this chunk
            r["train/episode_return"] = None
            r["train/placement"] = None
        if u == 4:
            r["loss/value"] = math.nan  # json.dumps writes NaN, json.loads reads it back
        lines.append(json.dumps(r))
    partial = json.dumps(_record(11))[:40]  # killed mid-write
    (ac / "metrics.jsonl").write_text("\n".join(lines) + "\n" + partial)

    gx = tmp_path / "runs" / "ppo_cartpole"
    gx.mkdir()
    lines = [json.dumps({"meta": {"config": {"env": "gymnax:CartPole-v1"}, "seed": 1}})]
    lines += [json.dumps(_record(u, placement=False)) for u in range(1, 6)]
    (gx / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return ac, gx


def _summary(capsys) -> tuple[dict, str]:
    captured = capsys.readouterr()
    out_lines = [line for line in captured.out.splitlines() if line.strip()]
    assert len(out_lines) == 1
    return json.loads(out_lines[0]), captured.err


def _check_png(path):
    assert path.is_file()
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        assert im.format == "PNG"
        assert im.size[0] > 0 and im.size[1] > 0


def test_load_metrics_skips_partial_line(runs):
    ac, gx = runs
    with pytest.warns(RuntimeWarning, match="unparsable"):
        meta, records = metrics.load_metrics(str(ac))
    assert meta["config"]["opponents"] == "greedy"
    assert [r["update"] for r in records] == list(range(1, 11))
    meta, records = metrics.load_metrics(str(gx / "metrics.jsonl"))  # the file itself works too
    assert meta["seed"] == 1 and len(records) == 5
    with pytest.raises(FileNotFoundError):
        metrics.load_metrics(str(ac.parent / "nope"))


def test_cli_default_metrics(runs, tmp_path, capsys):
    ac, gx = runs
    out = tmp_path / "plots" / "sub" / "curves.png"  # parent dirs do not exist yet
    ret = plot.main([str(ac), str(gx), "--out", str(out)])
    summary, err = _summary(capsys)
    assert summary == ret
    _check_png(out)
    assert "unparsable" in err and "ppo_autochess" in err  # the partial line was skipped with a warning
    assert summary["out"] == str(out)
    assert summary["runs"] == ["ppo_autochess", "ppo_cartpole"]
    assert summary["metrics"] == [m for m in plotting.DEFAULT_METRICS if m != "eval/placement_vs_expert"]
    assert "eval/placement_vs_random_ci95" not in summary["metrics"]  # a band, not a metric of its own
    assert summary["bands"]["eval/placement_vs_random"] == 2 and summary["bands"]["eval/placement_vs_greedy"] == 0
    pts = summary["points"]
    assert pts["eval/placement_vs_random"] == 2  # updates 5 and 10 only
    assert pts["eval/placement_vs_greedy"] == 2
    assert pts["train/placement"] == 9  # autochess only, one null
    assert pts["train/episode_return"] == 9 + 5  # one null
    assert pts["loss/value"] == 9 + 5  # one NaN
    assert pts["loss/entropy"] == 10 + 5  # the partial 11th record is not there
    assert pts["perf/sps"] == 15


def test_cli_gymnax_only_and_x(runs, tmp_path, capsys):
    _, gx = runs
    out = tmp_path / "gx.png"
    plot.main([str(gx), "--out", str(out), "--x", "wall_s"])
    summary, _ = _summary(capsys)
    _check_png(out)
    assert summary["runs"] == ["ppo_cartpole"]
    assert not any("placement" in m for m in summary["metrics"])
    assert summary["metrics"] == [m for m in plotting.DEFAULT_METRICS if "placement" not in m]
    assert set(summary["points"].values()) == {5}


def test_self_play_runs_do_not_draw_what_is_constant_by_construction(runs, tmp_path, capsys):
    """Every seat the learner: the mean return and placement over the seats are 0 and 4.5 whatever it
    learns, so the default panels leave them out (asked for by name, they are drawn)."""
    ac, _ = runs
    lines = (ac / "metrics.jsonl").read_text().splitlines()
    meta = json.loads(lines[0])
    meta["meta"]["config"]["opponents"] = "self"
    (ac / "metrics.jsonl").write_text("\n".join([json.dumps(meta), *lines[1:-1]]) + "\n")
    plot.main([str(ac), "--out", str(tmp_path / "self.png")])
    summary, _ = _summary(capsys)
    assert not set(plotting.SELF_PLAY_CONSTANT) & set(summary["metrics"])
    assert "eval/placement_vs_greedy" in summary["metrics"] and "loss/entropy" in summary["metrics"]
    plot.main([str(ac), "--out", str(tmp_path / "asked.png"), "--metrics", "train/placement"])
    assert _summary(capsys)[0]["points"] == {"train/placement": 9}


def test_cli_explicit_metrics(runs, tmp_path, capsys):
    ac, gx = runs
    out = tmp_path / "two.png"
    plot.main([str(ac), str(gx), "--out", str(out), "--x", "update", "--metrics", "loss/clip_frac, train/placement"])
    summary, _ = _summary(capsys)
    _check_png(out)
    assert summary["metrics"] == ["loss/clip_frac", "train/placement"]
    assert summary["points"] == {"loss/clip_frac": 15, "train/placement": 9}


def test_plot_runs_api(runs, tmp_path):
    ac, _ = runs
    out = tmp_path / "api.png"
    summary = plotting.plot_runs([ac], str(out), metrics=["eval/placement_vs_greedy"])
    _check_png(out)
    assert summary["points"] == {"eval/placement_vs_greedy": 2}
    with pytest.raises(ValueError, match="x must be one of"):
        plotting.plot_runs([ac], str(out), x="seconds")


def test_cli_errors(runs, tmp_path, capsys):
    ac, gx = runs
    missing = tmp_path / "runs" / "not_a_run"
    missing.mkdir()
    with pytest.raises(SystemExit) as e:
        plot.main([str(ac), str(missing), "--out", str(tmp_path / "x.png")])
    assert e.value.code == 2
    assert "not_a_run" in capsys.readouterr().err

    with pytest.raises(SystemExit) as e:
        plot.main([str(gx), "--out", str(tmp_path / "x.png"), "--metrics", "train/placement,loss/nope"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "loss/nope" in err and "train/placement" in err and "available" in err
    assert "loss/entropy" in err  # the available names are listed

    with pytest.raises(SystemExit):
        plot.main([str(ac), "--out", str(tmp_path / "x.png"), "--x", "seconds"])
    assert not (tmp_path / "x.png").exists()


def test_tick_labels_and_duplicate_run_names(tmp_path):
    assert [plotting._short(v) for v in (12.5, 40960, 2.5e6, 0)] == ["12.5", "41k", "2.5M", "0"]
    a, b = tmp_path / "a" / "seed0", tmp_path / "b" / "seed0"
    for d in (a, b):
        d.mkdir(parents=True)
        (d / "metrics.jsonl").write_text(json.dumps(_record(1)) + "\n" + json.dumps(_record(2)) + "\n")
    summary = plotting.plot_runs([a, b], str(tmp_path / "dup.png"), metrics=["loss/entropy"])
    assert summary["runs"] == ["a/seed0", "b/seed0"]
    assert summary["points"] == {"loss/entropy": 4}


def _run(path, config: dict, updates=(5, 10)) -> None:
    """A metrics.jsonl of ``config`` with an evaluation at each of ``updates`` (seat_steps = 8 x env_steps)."""
    path.mkdir(parents=True)
    lines = [json.dumps({"meta": {"config": config, "seed": 0}})]
    lines += [json.dumps(_record(u, eval_chunk=True)) for u in updates]
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def _drawn_x(monkeypatch) -> dict:
    """Patches the figure's save to record {run label: x data} of the first panel's lines."""
    drawn = {}

    def finish(fig, axes, num_panels, handles, out):
        lines = [line for line in axes[0].get_lines() if not line.get_label().startswith("_")]  # not the 4.5 line
        drawn.update({line.get_label(): list(line.get_xdata()) for line in lines})

    monkeypatch.setattr(plotting, "_finish", finish)
    return drawn


def test_samples_per_learner_is_one_eighth_for_independent_learners(tmp_path, monkeypatch, capsys):
    """Same seat_steps: a shared-parameter self-play run trains its one network on all 8 seats' samples, each of 8
    independent learners on its own seat's, so the independent run's x is 8x smaller; a run with 7 bot seats trains
    on its one learner seat."""
    shared, independent, bots = tmp_path / "shared", tmp_path / "independent", tmp_path / "bots"
    _run(shared, {"env": "autochess", "opponents": "self", "independent": False})
    _run(independent, {"ppo": {"num_steps": 32}, "net": {"independent": True}})  # the nested config form
    _run(bots, {"opponents": "greedy"})
    drawn = _drawn_x(monkeypatch)
    plot.main(
        [
            str(shared),
            str(independent),
            str(bots),
            "--out",
            str(tmp_path / "spl.png"),
            "--x",
            "samples_per_learner",
            "--metrics",
            "eval/placement_vs_greedy",
        ]
    )
    assert _summary(capsys)[0]["points"] == {"eval/placement_vs_greedy": 6}
    seat_steps = [8 * 4096 * u for u in (5, 10)]
    assert drawn["shared"] == seat_steps
    assert drawn["independent"] == [s / 8 for s in seat_steps]
    assert [a / b for a, b in zip(drawn["shared"], drawn["independent"])] == [8.0, 8.0]
    assert drawn["bots"] == [s / 8 for s in seat_steps]
    records = metrics.load_metrics(str(shared))[1]
    assert plotting.series(records, "eval/placement_vs_greedy", "env_steps")[0] == [4096 * 5, 4096 * 10]  # unchanged


def test_samples_per_learner_refusals(tmp_path, capsys):
    league, bare = tmp_path / "league_run", tmp_path / "bare"
    _run(league, {"opponents": "self", "league_size": 8})
    bare.mkdir()
    (bare / "metrics.jsonl").write_text(json.dumps(_record(5, eval_chunk=True)) + "\n")  # no meta line
    for run, words in ((league, ("league_run", "league_size=8")), (bare, ("bare", "meta line"))):
        with pytest.raises(ValueError, match="samples_per_learner") as e:
            plotting.plot_runs([run], str(tmp_path / "x.png"), x="samples_per_learner")
        assert all(w in str(e.value) for w in words)
    with pytest.raises(SystemExit) as e:
        plot.main([str(league), "--out", str(tmp_path / "x.png"), "--x", "samples_per_seat"])
    assert e.value.code == 2
    assert "samples_per_seat" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_metrics_files_named_after_their_runs_are_labelled_by_name(tmp_path):
    """docs/results keeps many runs' files in one folder: each line is labelled by its file's name, not the folder's."""
    folder = tmp_path / "results"
    folder.mkdir()
    for name in ("ppo_small_v1", "independent_v1"):
        (folder / f"{name}.metrics.jsonl").write_text(json.dumps(_record(1)) + "\n" + json.dumps(_record(2)) + "\n")
    paths = [folder / "ppo_small_v1.metrics.jsonl", folder / "independent_v1.metrics.jsonl"]
    summary = plotting.plot_runs(paths, str(tmp_path / "named.png"), metrics=["loss/entropy"])
    assert summary["runs"] == ["ppo_small_v1", "independent_v1"]


def test_a_legend_wider_than_the_panels_is_not_cut_off(tmp_path):
    """Six long run names on one panel: the legend is wider than the panel, and the saved image grows to hold it,
    so no legend text touches the image's left or right edge (it did when the figure kept its width)."""
    config = {"env": "autochess", "opponents": "greedy", "league_size": 0}
    run_dirs = []
    for i in range(6):
        run_dir = tmp_path / f"a_rather_long_run_name_number_{i}_of_six_runs"
        run_dir.mkdir()
        lines = [json.dumps({"meta": {"config": config}})] + [json.dumps(_record(u, eval_chunk=True)) for u in (5, 10)]
        (run_dir / "metrics.jsonl").write_text("\n".join(lines) + "\n")
        run_dirs.append(str(run_dir))
    out = tmp_path / "wide.png"
    plotting.plot_runs(run_dirs, str(out), metrics=["eval/placement_vs_greedy"])
    _check_png(out)
    with Image.open(out) as im:
        gray = im.convert("L")
        width, height = gray.size
        edges = [gray.getpixel((x, y)) for x in (0, 1, width - 2, width - 1) for y in range(height)]
    assert min(edges) > 200, "legend or panel drawn up to the image's edge: cut off"
