"""The shipped baseline policies (``agents.policies.baselines``): ``python -m experiments.baseline``.

    python -m experiments.baseline list                       # the versions, where they came from, their results,
                                                              # whether today's code loads them, their ladder points
    python -m experiments.baseline freeze runs/mine:120 --name mine-v1 --results eval.json
    python -m experiments.baseline freeze runs/mine --name mine-v1 --out /tmp/baselines
    python -m experiments.baseline card                       # write every version's model card again
    python -m experiments.baseline card ppo_small-v1 --check  # exit 1 if its card differs from what NAME.json gives

``freeze`` writes a run's policy (``RUN_DIR`` for its latest good checkpoint, ``RUN_DIR:STEP``) into the directory
``--out`` as a new version (``NAME.msgpack``, ``NAME.json`` and its standalone export ``NAME/``:
``agents.policies.export.freeze_baseline``). Without ``--out`` it writes into the source tree's
``agents/policies/baseline_policies/`` when the package is a checkout (an editable install inside a git work
tree), and otherwise refuses: it never writes into an installed package (site-packages). ``--results`` is a JSON
file of what it measured (e.g. the output of ``experiments.evaluate RUN_DIR``), kept beside it. Versions are never
overwritten. Anywhere a player is named (``experiments.evaluate``, ``experiments.rate``), ``baseline:NAME`` plays a
version of ``agents/policies/baseline_policies/``.

``freeze`` also writes the version's model card ``NAME.MODEL_CARD.md`` (``agents.policies.card``: training, strength
per lineup with intervals, what it loses to, the observation it needs), generated from ``NAME.json``. ``card``
writes the cards of the versions named (default: all) again, into the source tree's directory or ``--dir``;
``card --check`` writes nothing and exits 1 naming each card that is missing or out of date.
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.arena import ladder
from agents.policies import baselines, card
from agents.policies.export import freeze_baseline
from agents.policies.load import PLAYER_BOTS, PolicyError, load_policy
from agents.storage.checkpoints import NoGoodCheckpointError
from experiments.common import check_out, fail, handles_ctrl_c, make_parser, player_spec, quiet_logs
from jaxgame import layout


def source_tree_directory(directory: Path | None = None) -> Path | None:
    """``directory`` (default: the package's ``baseline_policies/``) when it lies in a git work tree outside any
    ``site-packages``/``dist-packages`` (a checkout, installed editable or run from source), else None."""
    directory = Path(directory or baselines.DIRECTORY).resolve()
    if {"site-packages", "dist-packages"} & set(directory.parts):
        return None
    return directory if any((parent / ".git").exists() for parent in directory.parents) else None


def parse_args(argv=None):
    parser = make_parser("experiments.baseline", __doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the shipped versions")
    freeze = commands.add_parser("freeze", help="write a run's policy as a new version")
    freeze.add_argument("run", metavar="RUN_DIR[:STEP]")
    freeze.add_argument("--name", required=True, help="the new version, e.g. mine-v1 (a name taken is refused)")
    freeze.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="the directory it goes to (default: the source tree's agents/policies/baseline_policies/ "
        "in a checkout; an installed package refuses)",
    )
    freeze.add_argument("--results", type=Path, help="a JSON file of what the policy measured, kept beside it")
    cards = commands.add_parser("card", help="write the versions' model cards again (or --check them)")
    cards.add_argument("names", nargs="*", metavar="NAME", help="the versions (default: all in the directory)")
    cards.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="the versions' directory (default: the source tree's agents/policies/baseline_policies/, "
        "or for --check the package's)",
    )
    cards.add_argument("--check", action="store_true", help="write nothing; exit 1 if a card is missing or stale")
    return parser, parser.parse_args(argv)


def freeze(parser, args) -> Path:
    """``freeze``: the run's policy as version ``--name`` in ``--out`` (or the source tree's directory)."""
    if args.run.strip() in PLAYER_BOTS or args.run.strip().startswith(baselines.PREFIX):
        fail(parser, f"{args.run!r} is not a training run (RUN_DIR or RUN_DIR:STEP)")
    out = args.out or source_tree_directory()
    if out is None:
        fail(
            parser,
            f"give --out DIR: the package is installed ({baselines.DIRECTORY}), not a source checkout, and "
            "freeze never writes into an installed package",
        )
    parsed = player_spec(parser, args.run)  # an unknown one named, with the closest valid players
    check_out(parser, out)  # before anything is loaded
    try:
        results = json.loads(args.results.read_text()) if args.results else None
    except (OSError, ValueError) as err:
        fail(parser, f"--results {args.results}: {err}")
    try:
        path = freeze_baseline(load_policy(*parsed), args.name, results, out)
    except (baselines.BaselineError, PolicyError, OSError) as err:  # OSError: --out cannot be written
        fail(parser, err)
    except NoGoodCheckpointError as err:
        fail(parser, err, status=1)
    print(json.dumps({"baseline": args.name, "json": str(path)}))
    return path


def cards(parser, args) -> dict:
    """``card``: each named version's card written again (or, with ``--check``, compared), as ``{name: path}``."""
    directory = args.dir or (baselines.DIRECTORY if args.check else source_tree_directory())
    if directory is None:
        fail(
            parser,
            f"give --dir DIR: the package is installed ({baselines.DIRECTORY}), not a source checkout, and "
            "card never writes into an installed package",
        )
    shipped = baselines.available(directory)
    unknown = [name for name in args.names if name not in shipped]
    if unknown:
        fail(
            parser, f"no baseline {', '.join(map(repr, unknown))} in {directory}; there: {', '.join(shipped) or 'none'}"
        )
    names = args.names or shipped
    if args.check:
        stale = [name for name in card.stale_cards(directory) if name in names]
        if stale:
            where = f" --dir {args.dir}" if args.dir else ""
            fail(
                parser,
                f"model cards missing or out of date in {directory}: {', '.join(stale)} (write them: "
                f"python -m experiments.baseline card {' '.join(stale)}{where})",
                status=1,
            )
        out = {name: str(card.card_path(name, directory)) for name in names}
    else:
        out = {name: str(card.write_card(name, directory)) for name in names}
    print(json.dumps(out))
    return out


def loads(name: str) -> dict:
    """``{"loads": True, "obs": kind, "layout_version": v, "layout_current": bool}`` when today's code loads the
    version (its digest, its network, its parameters' shapes), else ``{"loads": False, "load_error": the one-line
    reason}``. ``layout_version``: the observation layout its export reads (1 for an export written before layout
    versions existed, as ``exported_loader`` reads it); ``layout_current``: whether today's game writes that layout."""
    try:
        baseline = baselines.load_baseline(name)
    except (baselines.BaselineError, ValueError, OSError) as err:
        return {"loads": False, "load_error": " ".join(str(err).split())}
    try:
        version = int(json.loads((baselines.DIRECTORY / name / "spec.json").read_text()).get("layout_version", 1))
    except (OSError, ValueError):
        version = None
    return {
        "loads": True,
        "obs": baseline.config.task.obs,
        "layout_version": version,
        "layout_current": version == layout.LAYOUT_VERSIONS[baseline.config.task.obs],
    }


def on_ladder(name: str) -> dict:
    """``{"ladder": {"version", "points", "ci95"}}`` for a member of the current ladder version, ``{}`` for another
    baseline, ``{"ladder": {"version", "error"}}`` when the ladder cannot be read (a member not the pinned one)."""
    try:
        members = ladder.load_ladder()["members"]
    except ladder.LadderError as err:
        return {"ladder": {"version": ladder.CURRENT_LADDER, "error": " ".join(str(err).split())}}
    member = next((m for m in members if m["spec"] == baselines.PREFIX + name), None)
    if member is None:
        return {}
    return {"ladder": {"version": ladder.CURRENT_LADDER, "points": member["points"], "ci95": member["ci95"]}}


@handles_ctrl_c
def main(argv=None):
    quiet_logs()
    parser, args = parse_args(argv)
    if args.command == "list":
        out = {
            name: {
                **{k: v for k, v in baselines.describe(name).items() if k != "config"},
                **loads(name),
                **on_ladder(name),
            }
            for name in baselines.available()
        }
        print(json.dumps(out, indent=1))
        return out
    if args.command == "card":
        return cards(parser, args)
    return freeze(parser, args)


if __name__ == "__main__":
    main()
