"""Learning curves of runs (their ``metrics.jsonl``, ``agents.storage.metrics``) as one PNG; matplotlib's Agg canvas.

    plot_runs(["runs/a", "runs/b"], "curves.png", x="env_steps", metrics=None)  # one line per run
    plot_bands([("lr=1e-3", [records, ...]), ...], "curves.png")                # mean +- std per group

One subplot per metric in a grid of up to 3 columns, one colour per run (or group) in every panel.
Placement panels (1 best .. 8 worst) get a dashed line at 4.5, the mean placement of an average seat; an
evaluation's placement gets its 95% band (the ``<metric>_ci95`` half-width the run logged beside it). By
default a run whose 8 seats are all its own learners (self-play, independent learners) does not draw
``train/episode_return`` and ``train/placement``: they are constant by construction (the mean of
every seat's return or rank); they mean something where some seats are bots or snapshots.
The x axis is a record field (``env_steps``, ``update``, ``wall_s``) or ``samples_per_learner``, derived from
env_steps and the run's config (``learner_samples_per_env_step``): the seat-steps each set of parameters has trained
on, so that a run of 8 independent learners (each learns from its own seat only) and a shared-parameter run (every
trained seat's samples train the one network) line up at equal data per learner (``plot_bands`` takes record fields
only). Null, NaN and non-numeric values are skipped point by point. Drawing uses the Agg canvas (no display, and no
change to pyplot's backend when imported from a notebook); the PNG's parent directories are created.
``python -m experiments.plot`` is the command line.
"""

from __future__ import annotations

import difflib
import math
import os

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from agents.config import TaskConfig, flat_dict
from agents.storage.metrics import METRICS_FILE, load_metrics, run_label
from agents.storage.outputs import check_writable

X_FIELDS = ("env_steps", "update", "wall_s", "samples_per_learner")
SAMPLES_PER_LEARNER = "samples_per_learner"  # derived per record from env_steps and the run's config
#: what an x axis counts, where the name does not say it
X_LABELS = {SAMPLES_PER_LEARNER: "samples per learner (seat steps one parameter set trained on)"}
DEFAULT_METRICS = (
    "eval/placement_vs_random",
    "eval/placement_vs_greedy",
    "eval/placement_vs_expert",
    "train/episode_return",
    "train/placement",
    "loss/entropy",
    "loss/value",
    "loss/policy",
    "loss/approx_kl",
    "perf/sps",
)
#: constant by construction when every seat is the run's learner (see the module docstring)
SELF_PLAY_CONSTANT = ("train/episode_return", "train/placement")
#: what a panel's y axis counts, where the name does not say it
Y_LABELS = {"perf/sps": "env steps/s (one step = 8 seats)", "perf/seat_sps": "seat steps/s"}
CI_SUFFIX = "_ci95"
MEAN_PLACEMENT = 4.5  # mean placement of an average seat among 8
MARKER_MAX_POINTS = 50  # series this short (e.g. eval chunks) also get markers


def _number(v) -> float | None:
    """``v`` as a finite float, or None (null, NaN, inf, bool, string...)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def series(records: list[dict], metric: str, x: str = "env_steps") -> tuple[list[float], list[float]]:
    """(xs, ys) of the records where both ``x`` and ``metric`` are finite numbers, in file order."""
    xs, ys = [], []
    for r in records:
        xv, yv = _number(r.get(x)), _number(r.get(metric))
        if xv is not None and yv is not None:
            xs.append(xv)
            ys.append(yv)
    return xs, ys


def available_metrics(runs: list[list[dict]], x: str = "env_steps") -> list[str]:
    """Sorted keys that have at least one plottable point (against ``x``) in some run (the ``_ci95``
    half-widths drawn as bands are not metrics of their own)."""
    names = {k for records in runs for r in records for k in r if k != x and not k.endswith(CI_SUFFIX)}
    return sorted(k for k in names if any(series(records, k, x)[0] for records in runs))


def all_seats_learn(meta: dict) -> bool:
    """Whether a run's 8 game seats are all its learner (self-play or independent learners, no league)."""
    config = flat_dict(meta.get("config", {})) if isinstance(meta, dict) else {}
    env = str(config.get("env", "autochess"))
    return (
        not env.startswith("gymnax:") and config.get("opponents", "self") == "self" and not config.get("league_size", 0)
    )


def learner_samples_per_env_step(meta: dict) -> int:
    """Seat-steps one set of parameters trains on per env step, from a run's meta line config (the PPO/A2C update's
    split, ``agents.algorithms.ppo.PPO.optimize``): with shared parameters every "self" seat's sample trains the one
    network (8 in self-play, 1 with 7 bot opponents, 1 for a gymnax env); with ``independent`` learners seat p's
    parameters train on seat p's samples only, 1 per env step (1/8 of the run's seat_steps).

    ValueError when the meta has no config, or for a run whose learner data per env step is not a fixed count: a
    league (its seats' roles change from game to game) or a ``bc_dataset`` run (it learns from a fixed dataset).
    """
    config = flat_dict(meta.get("config", {})) if isinstance(meta, dict) else {}
    if not config:
        raise ValueError("x='samples_per_learner' needs the run's config (the metrics.jsonl meta line); none found")
    if config.get("league_size", 0):
        raise ValueError(
            f"x='samples_per_learner' is not defined for a league run (league_size="
            f"{config['league_size']}): its learner seats change from game to game"
        )
    if config.get("bc_dataset"):
        raise ValueError(
            "x='samples_per_learner' is not defined for a bc_dataset run: it learns from a fixed "
            f"dataset ({config['bc_dataset']!r}), not from env steps"
        )
    if config.get("independent", False):
        return 1  # one learner per seat, vmapped over the seat axis of the [T, N, P] batch
    task = TaskConfig(env=str(config.get("env", "autochess")), opponents=str(config.get("opponents", "self")))
    return sum(kind == "self" for kind in task.seat_kinds)


def with_samples_per_learner(meta: dict, records: list[dict]) -> list[dict]:
    """Copies of ``records`` with ``samples_per_learner`` = env_steps x ``learner_samples_per_env_step(meta)``
    (a float; left out of a record without a numeric env_steps)."""
    per_step = learner_samples_per_env_step(meta)
    out = []
    for r in records:
        steps = _number(r.get("env_steps"))
        out.append(r if steps is None else {**r, SAMPLES_PER_LEARNER: steps * per_step})
    return out


def _band(ax, records, metric, x, color) -> int:
    """The 95% band of an evaluation's placement, where the run logged its half-width; returns its points."""
    points = [(_number(r.get(x)), _number(r.get(metric)), _number(r.get(metric + CI_SUFFIX))) for r in records]
    points = [p for p in points if None not in p]
    if points:
        xs, ys, half = (np.array(v) for v in zip(*points))
        ax.fill_between(xs, ys - half, ys + half, color=color, alpha=0.2, linewidth=0)
    return len(points)


def _short(v: float, _pos=None) -> str:
    """Compact tick label: 40960 -> 41k, 2.5e6 -> 2.5M, 12.5 -> 12.5."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.3g}"


def _label(run_dir: str) -> str:
    """``run_label``, but a metrics file named after its run (``docs/results/ppo_small_v1.metrics.jsonl``) is
    labelled by its own name (``ppo_small_v1``), not by the folder it shares with other runs' files."""
    name = os.path.basename(run_dir)
    if os.path.isfile(run_dir) and name.endswith(".jsonl") and name != METRICS_FILE:
        return name.removesuffix(".jsonl").removesuffix(".metrics")
    return run_label(run_dir)


def _labels(run_dirs: list[str]) -> list[str]:
    """Run dir names, prefixed by their parent's name when two runs share a name."""
    labels = [_label(d) for d in run_dirs]
    if len(set(labels)) < len(labels):
        labels = [
            os.path.join(run_label(os.path.dirname(os.path.abspath(d.rstrip(os.sep)))), label)
            for d, label in zip(run_dirs, labels)
        ]
    return labels


def plot_runs(run_dirs, out: str, x: str = "env_steps", metrics=None) -> dict:
    """Draw one panel per metric, one line per run, and save the PNG to ``out``.

    ``metrics``: list of keys (default: the present ones of DEFAULT_METRICS,
    or every available key when none of those is present). Raises
    ``agents.storage.outputs.UnwritableOutputError`` (a ValueError, before anything is loaded) when ``out``
    cannot be written, FileNotFoundError for a run without metrics file and ValueError for an
    unknown ``x``, for ``x="samples_per_learner"`` on a run it is not defined for (naming the run), for metric
    names that no run has (with the closest names), or when nothing is plottable. Returns ``{"out", "runs",
    "metrics", "points", "bands"}`` where ``points[metric]`` counts the points drawn over all runs and
    ``bands[metric]`` the points with a 95% band.
    """
    run_dirs = [str(d) for d in run_dirs]
    if not run_dirs:
        raise ValueError("no run directories given")
    if x not in X_FIELDS:
        raise ValueError(f"x must be one of {', '.join(X_FIELDS)}, not {x!r}")
    check_writable(out, "file")  # before anything is loaded: an UnwritableOutputError (a ValueError), one line
    loaded = [load_metrics(d) for d in run_dirs]
    labels = _labels(run_dirs)
    if x == SAMPLES_PER_LEARNER:
        loaded = [(meta, _derived(meta, records, label)) for (meta, records), label in zip(loaded, labels)]
    runs = [records for _, records in loaded]
    available = available_metrics(runs, x)
    if metrics is None:
        constant = all(all_seats_learn(meta) for meta, _ in loaded)
        metrics = [m for m in DEFAULT_METRICS if m in available and not (constant and m in SELF_PLAY_CONSTANT)]
        metrics = metrics or available
        if not metrics:
            raise ValueError(f"no plottable records (with a numeric {x!r}) in {', '.join(run_dirs)}")
    else:
        metrics = list(dict.fromkeys(m.strip() for m in metrics if m.strip()))
        unknown = [m for m in metrics if m not in available]
        if unknown or not metrics:
            close = [c for m in unknown for c in difflib.get_close_matches(m, available, n=2)]
            hint = f"did you mean {' or '.join(dict.fromkeys(close))}? " if close else ""
            raise ValueError(
                f"unknown metric(s) {', '.join(unknown) or '(none given)'}; {hint}"
                f"available: {', '.join(available) or '(none)'}"
            )

    fig, axes = _figure(len(metrics))
    points: dict[str, int] = {}
    bands: dict[str, int] = {}
    handles: dict[str, object] = {}
    for ax, metric in zip(axes, metrics):
        points[metric] = bands[metric] = 0
        for i, (records, label) in enumerate(zip(runs, labels)):
            xs, ys = series(records, metric, x)
            if not xs:
                continue
            points[metric] += len(xs)
            marker = "o" if len(xs) <= MARKER_MAX_POINTS else None
            (line,) = ax.plot(xs, ys, color=f"C{i % 10}", marker=marker, markersize=3, linewidth=1.2, label=label)
            bands[metric] += _band(ax, records, metric, x, f"C{i % 10}")
            handles.setdefault(label, line)
        _style(ax, metric, x)
    _finish(fig, axes, len(metrics), handles, out)
    return {"out": out, "runs": labels, "metrics": metrics, "points": points, "bands": bands}


def _derived(meta: dict, records: list[dict], label: str) -> list[dict]:
    """``with_samples_per_learner``, its ValueError prefixed by the run's label."""
    try:
        return with_samples_per_learner(meta, records)
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None


def _figure(num_panels: int):
    """An Agg figure with a grid of up to 3 columns: (figure, flat array of axes)."""
    ncols = min(3, num_panels)
    nrows = math.ceil(num_panels / ncols)
    fig = Figure(figsize=(5.0 * ncols, 3.6 * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False).ravel()


def _style(ax, metric: str, x: str) -> None:
    if "placement" in metric:
        ax.axhline(MEAN_PLACEMENT, color="gray", linestyle="--", linewidth=1.0, zorder=0)
        ax.set_ylabel("placement (1 best .. 8 worst)")
    elif metric in Y_LABELS:
        ax.set_ylabel(Y_LABELS[metric])
    ax.set_title(metric)
    ax.set_xlabel(X_LABELS.get(x, x))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.xaxis.set_major_formatter(FuncFormatter(_short))
    ax.grid(True, alpha=0.3)


def _finish(fig, axes, num_panels: int, handles: dict, out: str) -> None:
    """Drop unused panels, add the legend and save the PNG (parent directories created)."""
    for ax in axes[num_panels:]:
        ax.remove()
    if handles:
        width = 2 if num_panels == 1 else 4  # legend columns: three long run names overflow one panel
        fig.legend(list(handles.values()), list(handles), loc="outside upper center", ncols=min(len(handles), width))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")  # "tight": a legend wider than the panels is not cut off


def plot_bands(groups, out: str, x: str = "env_steps", metrics=None) -> dict:
    """One panel per metric; per group (e.g. a sweep's grid point) the mean over its runs (e.g. seeds)
    with a +- std band, at the x values all of the group's runs share.

    ``groups``: list of ``(label, [records of run 1, records of run 2, ...])``.
    ``metrics``: keys to draw (default: DEFAULT_METRICS present in some run).
    Returns ``{"out", "groups", "metrics", "points"}`` (points: mean points drawn per metric).
    """
    every_run = [records for _, runs in groups for records in runs]
    available = available_metrics(every_run, x)
    metrics = [m for m in (metrics or DEFAULT_METRICS) if m in available]
    if not metrics:
        raise ValueError(f"nothing to plot: none of the metrics has a numeric point against {x!r}")
    fig, axes = _figure(len(metrics))
    points: dict[str, int] = {}
    handles: dict[str, object] = {}
    for ax, metric in zip(axes, metrics):
        points[metric] = 0
        for i, (label, runs) in enumerate(groups):
            curves = [dict(zip(*series(records, metric, x))) for records in runs]
            shared = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
            if not shared:
                continue
            ys = np.array([[c[v] for v in shared] for c in curves])
            mean, std = ys.mean(axis=0), ys.std(axis=0)
            marker = "o" if len(shared) <= MARKER_MAX_POINTS else None
            (line,) = ax.plot(
                shared,
                mean,
                color=f"C{i % 10}",
                marker=marker,
                markersize=3,
                linewidth=1.2,
                label=f"{label} (n={len(runs)})",
            )
            ax.fill_between(shared, mean - std, mean + std, color=f"C{i % 10}", alpha=0.2, linewidth=0)
            handles.setdefault(line.get_label(), line)
            points[metric] += len(shared)
        _style(ax, metric, x)
    _finish(fig, axes, len(metrics), handles, out)
    return {"out": out, "groups": [label for label, _ in groups], "metrics": metrics, "points": points}


__all__ = [
    "DEFAULT_METRICS",
    "SAMPLES_PER_LEARNER",
    "SELF_PLAY_CONSTANT",
    "X_FIELDS",
    "all_seats_learn",
    "available_metrics",
    "learner_samples_per_env_step",
    "plot_bands",
    "plot_runs",
    "series",
    "with_samples_per_learner",
]
