"""Result records: one JSON file per measured result, and the Markdown generated from them.

A record (the format: docs/results/README.md) names what was measured, the exact commands, the machine, the seeds,
the date, the commit and the numbers, and lists the evidence files (metrics, evaluations, comparisons) beside it.
Pages are generated from the records, never edited by hand, so a number has one home::

    records = load_records("docs/results/records")
    problems = [p for r in records for p in validate(r, "docs/results")]   # [] when every record is sound
    current, _ = load_current_code("docs/results")                        # since when code counts as current
    page = render_page(records, current)                                   # docs/results.md
    readme = replace_block(readme_text, render_readme_table(records, current))   # the README's table

Pure Python (json, re): no JAX. Output is deterministic: records sorted by (date, id), no timestamps.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

#: the kinds of result, in the order the page shows them, with their section titles
KINDS = {
    "learning": "Learning: trained policies",
    "evaluation": "Evaluation: one policy against bots",
    "comparison": "Comparisons: head to head and ratings",
    "throughput": "Throughput",
    "benchmark": "Benchmarks against other code, revisions and memory",
}
#: field -> allowed types, for every record
REQUIRED = {
    "id": str,
    "title": str,
    "kind": str,
    "subject": str,
    "command": list,
    "machine": str,
    "seeds": dict,
    "date": str,
    "commit": str,
    "numbers": dict,
    "single_seed": bool,
    "notes": str,
    "files": list,
}
#: field -> allowed types, when present
OPTIONAL = {
    "preset": (str, type(None)),
    "environment": str,
    "commit_source": str,
    "published_in": str,
    "evaluation": str,
    "compare": str,
    "metrics": str,
    "readme_row": int,
    "ladder": str,
    "ladder_record": str,
    "previous": str,
}
#: a record's numbers: name -> number, or {"value": number, "ci95": number, "note": str} (ci95 and note optional)
VALUE_KEYS = {"value", "ci95", "note"}
#: the README's strength columns, in order (``render_readme_table``): the ladder rating, the placement against 7
#: expert bots, and the placement as 1 vs 7 of the previous shipped version of the same preset (the record's
#: ``previous``); vs random and vs greedy, saturated, are in docs/results.md
README_COLUMNS = {
    "ladder_rating": "ladder points",
    "vs_expert": "vs 7 expert",
    "vs_previous": "1 vs 7 of the previous version",
}
#: numbers key -> key in an ``experiments.evaluate`` JSON (``evaluation``)
EVAL_KEYS = {
    "vs_random": "vs_random",
    "vs_greedy": "vs_greedy",
    "vs_expert": "vs_expert",
    "vs_ppo_small_v1": "vs_baseline:ppo_small-v1",
}
#: setting prefix of a numbers key -> setting in an ``evaluate --compare`` JSON (``compare``)
COMPARE_SETTINGS = {"vs_greedy": "vs greedy", "1v7": "1v7", "7v1": "7v1", "4v4": "4v4"}
START, END = "<!-- results-table:start -->", "<!-- results-table:end -->"
#: the README's ladder table: every record with a ``ladder`` rating (``experiments.ladder``'s JSON), best first
LADDER_START, LADDER_END = "<!-- ladder-table:start -->", "<!-- ladder-table:end -->"
#: docs/evaluation.md's tables: the ladder's members (its ratings beside the population fit's), the agreement table
MEMBERS_START, MEMBERS_END = "<!-- ladder-members:start -->", "<!-- ladder-members:end -->"
AGREEMENT_START, AGREEMENT_END = "<!-- ladder-agreement:start -->", "<!-- ladder-agreement:end -->"
#: numbers key -> (where it is in an ``experiments.ladder`` rating JSON, ``ladder``: a key and, for the interval, an
#: index; the tolerance of the published value)
LADDER_KEYS = {
    "ladder_points": (("rating",), 0.05),
    "ladder_low": (("ci95", 0), 0.05),
    "ladder_high": (("ci95", 1), 0.05),
    "ladder_mean_placement": (("mean_placement",), 0.005),
}
#: in the results directory: ``{"since": "YYYY-MM-DD", "change": str}``, the day of the last change to what or how
#: fast the presets train; a README row whose record is dated earlier ran on older code and says so
CURRENT_CODE_FILE = "current_code.json"

_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMMIT = re.compile(r"^(unknown|[0-9a-f]{7,40})$")
_P_CLAIM = re.compile(r"\bp\s*[=<]")
#: an absolute path of one machine in a record's command (its checkout, a temporary or home directory)
_MACHINE_PATH = re.compile(r"(?<![\w./])/(?:work|tmp|home|root|Users)/[^\s,'\"]*")


def load_records(records_dir) -> list[dict]:
    """Every ``*.json`` record under ``records_dir``, sorted by (date, id). A file that is not JSON raises
    ``ValueError`` naming it."""
    records = []
    for path in sorted(Path(records_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not JSON: {err}") from None
        if isinstance(record, dict):
            record.setdefault("_file", path.name)
        records.append(record)
    return sorted(
        records, key=lambda r: (str(r.get("date", "")), str(r.get("id", ""))) if isinstance(r, dict) else ("", "")
    )


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _number_problems(name, value) -> list[str]:
    if not _NAME.match(str(name)):
        return [f"numbers: the name {name!r} is not lower_case_with_underscores"]
    if _is_number(value):
        return []
    if not isinstance(value, dict) or not set(value) <= VALUE_KEYS or not _is_number(value.get("value")):
        return [f"numbers.{name}: a finite number or {{'value': number, 'ci95': number, 'note': str}}"]
    if "ci95" in value and not (_is_number(value["ci95"]) and value["ci95"] >= 0):
        return [f"numbers.{name}.ci95: a number >= 0"]
    if "note" in value and not (isinstance(value["note"], str) and value["note"]):
        return [f"numbers.{name}.note: a non-empty string"]
    return []


def _seed_problems(seeds: dict) -> list[str]:
    problems = []
    if not set(seeds) <= {"training", "evaluation", "note"}:
        problems.append(f"seeds: unknown keys {sorted(set(seeds) - {'training', 'evaluation', 'note'})}")
    training = seeds.get("training")
    if not isinstance(training, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in training):
        problems.append("seeds.training: a list of integer seeds ([] when no training seed enters)")
    evaluation = seeds.get("evaluation", "missing")
    if evaluation is not None and (not isinstance(evaluation, int) or isinstance(evaluation, bool)):
        problems.append("seeds.evaluation: an integer seed or null")
    if "note" in seeds and not isinstance(seeds["note"], str):
        problems.append("seeds.note: a string")
    return problems


def _field_problems(record: dict) -> list[str]:
    problems = [f"{name}: missing" for name in REQUIRED if name not in record]
    fields = {**REQUIRED, **OPTIONAL}
    problems += [f"{name}: not a record field" for name in record if name not in fields and name != "_file"]
    for name, value in record.items():
        kinds = fields.get(name)
        if kinds is not None and (not isinstance(value, kinds) or (kinds is int and isinstance(value, bool))):
            problems.append(f"{name}: expected {kinds}, got {type(value).__name__}")
    for command in record.get("command", []) if isinstance(record.get("command"), list) else []:
        absolute = _MACHINE_PATH.search(str(command))
        if absolute:
            problems.append(
                f"command: {absolute.group(0)} is a path of the machine it ran on; name paths relative "
                "to the repository (runs/..., docs/...) or as placeholders (DIR)"
            )
    return problems


def validate(record, results_dir=None) -> list[str]:
    """What is wrong with ``record`` (empty: nothing): missing or unknown fields, wrong types, a bad id, kind, date
    or commit, an empty command, malformed numbers or seeds, a p-value in the notes without its test named; and with
    ``results_dir``, evidence files that do not exist there. Each message starts with the record's id."""
    if not isinstance(record, dict):
        return [f"a record is a JSON object, got {type(record).__name__}"]
    problems = _field_problems(record)
    if problems:
        return [f"{record.get('id', record.get('_file', '?'))}: {p}" for p in problems]
    rid = record["id"]
    if not _ID.match(rid):
        problems.append("id: lower case letters, digits, '_', '.', '-'")
    if "_file" in record and record["_file"] != f"{rid}.json":
        problems.append(f"id: the file is {record['_file']}, the id says {rid}.json")
    if record["kind"] not in KINDS:
        problems.append(f"kind: one of {list(KINDS)}, got {record['kind']!r}")
    if not _DATE.match(record["date"]):
        problems.append("date: YYYY-MM-DD")
    for field in ("commit", "published_in"):
        if field in record and not _COMMIT.match(record[field]):
            problems.append(f"{field}: 'unknown' or 7-40 lower-case hex digits")
    if not record["command"] or not all(isinstance(c, str) and c.strip() for c in record["command"]):
        problems.append("command: a non-empty list of non-empty strings")
    problems += _seed_problems(record["seeds"])
    problems += [p for name, value in sorted(record["numbers"].items()) for p in _number_problems(name, value)]
    for field in ("title", "subject", "machine", "notes"):
        if not record[field].strip():
            problems.append(f"{field}: empty")
    if _P_CLAIM.search(record["notes"]) and "test" not in record["notes"]:
        problems.append("notes: a p-value claim must name its test")
    problems += _file_problems(record, results_dir)
    return [f"{rid}: {p}" for p in problems]


def _file_problems(record: dict, results_dir) -> list[str]:
    files = record["files"]
    problems = []
    if not all(isinstance(f, str) and f and not Path(f).is_absolute() and ".." not in Path(f).parts for f in files):
        return ["files: relative paths inside the results directory"]
    for field in ("evaluation", "compare", "metrics"):
        if field in record and record[field] not in files:
            problems.append(f"{field}: {record[field]} is not among files")
    if results_dir is not None:
        missing = [f for f in files if not (Path(results_dir) / f).is_file()]
        problems += [f"files: {f} does not exist in {results_dir}" for f in missing]
    return problems


def _close(published, measured, tolerance=0.005) -> bool:
    return _is_number(measured) and abs(published - measured) <= tolerance + 1e-9


def _same_p(published, measured) -> bool:
    """``published`` is ``measured`` rounded to as many significant digits as ``published`` shows."""
    digits = repr(float(published)).split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    return _is_number(measured) and float(f"{measured:.{max(len(digits), 1)}g}") == float(published)


def _value(entry):
    return (entry["value"], entry.get("ci95")) if isinstance(entry, dict) else (entry, None)


def _eval_problems(numbers: dict, data: dict, previous: str | None = None) -> list[str]:
    problems = []
    keys = {**EVAL_KEYS, **({} if previous is None else {"vs_previous": f"vs_{previous}"})}
    if "vs_previous" in numbers and previous is None:
        problems.append('numbers.vs_previous: the record names no previous version (its "previous")')
    if "ladder_rating" in numbers:
        value, ci95 = _value(numbers["ladder_rating"])
        found = data.get("ladder") or {}
        if not _close(value, found.get("rating"), 0.05):
            problems.append(f"numbers.ladder_rating: {value} but the evaluation's ladder says {found.get('rating')}")
        if ci95 is not None and not _close(ci95, found.get("ci95"), 0.05):
            problems.append(f"numbers.ladder_rating.ci95: {ci95} but the evaluation's ladder says {found.get('ci95')}")
    for key, source in keys.items():
        if key not in numbers:
            continue
        value, ci95 = _value(numbers[key])
        found = data.get(source, {})
        if not _close(value, found.get("mean_placement")):
            problems.append(f"numbers.{key}: {value} but the evaluation says {found.get('mean_placement')}")
        if ci95 is not None and not _close(ci95, found.get("ci95")):
            problems.append(f"numbers.{key}.ci95: {ci95} but the evaluation says {found.get('ci95')}")
    return problems


_COMPARE_FIELDS = {"a": "mean_a", "b": "mean_b", "diff": "difference", "p": "p_value"}


def _compare_problems(numbers: dict, settings: dict) -> list[str]:
    problems = []
    for key, entry in sorted(numbers.items()):
        prefix = next((p for p in COMPARE_SETTINGS if key.startswith(p + "_")), None)
        field = _COMPARE_FIELDS.get(key[len(prefix) + 1 :]) if prefix else None
        if field is None:
            continue
        found = settings.get(COMPARE_SETTINGS[prefix], {}).get("placement", {})
        value, ci95 = _value(entry)
        ok = _same_p(value, found.get(field)) if field == "p_value" else _close(value, found.get(field))
        if not ok:
            problems.append(f"numbers.{key}: {value} but the comparison says {found.get(field)}")
        if ci95 is not None and not _close(ci95, found.get("ci95")):
            problems.append(f"numbers.{key}.ci95: {ci95} but the comparison says {found.get('ci95')}")
    return problems


def _ladder_problems(numbers: dict, data: dict) -> list[str]:
    problems = [
        f"numbers.{key}: missing (a ladder record publishes {', '.join(LADDER_KEYS)})"
        for key in LADDER_KEYS
        if key not in numbers
    ]
    for key, ((source, *index), tolerance) in LADDER_KEYS.items():
        if key not in numbers:
            continue
        found = data.get(source)
        if index and found is not None:
            found = found[index[0]]
        value = _value(numbers[key])[0]
        if found is None or not _close(value, round(found, 2), tolerance):
            problems.append(f"numbers.{key}: {value} but the ladder rating says {found}")
    return problems


def _metrics_problems(numbers: dict, path: Path) -> list[str]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    last = [line for line in lines if "update" in line][-1]
    problems = []
    for key, source, tolerance in (("updates", "update", 0), ("env_steps", "env_steps", 0), ("train_s", "wall_s", 1)):
        if key in numbers and not _close(_value(numbers[key])[0], last.get(source), tolerance):
            problems.append(f"numbers.{key}: {numbers[key]} but the metrics end at {source}={last.get(source)}")
    return problems


def check_evidence(record: dict, results_dir) -> list[str]:
    """The numbers of a valid ``record`` that disagree with the evidence they were read from: ``vs_*`` placements
    and intervals against its ``evaluation`` JSON (to the 2 decimals published), the ``<setting>_a / _b / _diff /
    _p`` numbers against its ``compare`` JSON (p to the significant digits published), and ``updates``,
    ``env_steps`` and ``train_s`` (to 1 s) against the last record of its ``metrics`` file."""
    root = Path(results_dir)
    numbers = record["numbers"]
    problems = []
    if "evaluation" in record:
        problems += _eval_problems(
            numbers, json.loads((root / record["evaluation"]).read_text(encoding="utf-8")), record.get("previous")
        )
    if "compare" in record:
        settings = json.loads((root / record["compare"]).read_text(encoding="utf-8"))["settings"]
        problems += _compare_problems(numbers, settings)
    if "metrics" in record:
        problems += _metrics_problems(numbers, root / record["metrics"])
    if "ladder" in record:
        problems += _ladder_problems(numbers, json.loads((root / record["ladder"]).read_text(encoding="utf-8")))
    return [f"{record['id']}: {p}" for p in problems]


def _fmt(x) -> str:
    """A plain number: integers with thousands separators, floats as Python writes them (shortest round trip)."""
    return f"{x:,}" if isinstance(x, int) else repr(x)


def _fmt2(x) -> str:
    """A placement-like value: 2 decimals when that loses nothing, else as Python writes it."""
    return f"{x:.2f}" if round(x, 2) == x else repr(x)


def format_number(entry) -> str:
    """``1,279``, ``0.997``, ``1.80 +- 0.17``, ``7.04 +- 0.26 (argmax play)``."""
    if not isinstance(entry, dict):
        return _fmt(entry)
    text = _fmt2(entry["value"]) + (f" +- {_fmt2(entry['ci95'])}" if "ci95" in entry else "")
    return text + (f" ({entry['note']})" if "note" in entry else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _seeds_text(seeds: dict) -> str:
    training = ", ".join(str(s) for s in seeds["training"]) or "none"
    evaluation = "none" if seeds.get("evaluation") is None else str(seeds["evaluation"])
    return f"training {training}; evaluation {evaluation}" + (f" ({seeds['note']})" if seeds.get("note") else "")


def _record_row(record: dict, link_dir: str) -> str:
    numbers = "; ".join(f"{name} {format_number(value)}" for name, value in record["numbers"].items())
    evidence = ", ".join(f"[{Path(f).name}]({link_dir}/{f})" for f in record["files"]) or "-"
    cells = [
        f"[{record['id']}]({link_dir}/records/{record['id']}.json)",
        record["date"],
        record["machine"],
        record["subject"],
        numbers,
        "yes" if record["single_seed"] else "no",
        evidence,
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _record_note(record: dict, link_dir: str) -> str:
    commands = "; ".join(f"`{c}`" for c in record["command"])
    commit = record["commit"][:7] if record["commit"] != "unknown" else "unknown"
    source = f" ({record['commit_source']})" if record.get("commit_source") else ""
    published = f"; published in `{record['published_in'][:7]}`" if record.get("published_in") else ""
    environment = f" ({record['environment']})" if record.get("environment") else ""
    return (
        f"- **[{record['id']}]({link_dir}/records/{record['id']}.json)**: {record['title']}. {record['notes']}"
        f" Commands: {commands}. Seeds: {_seeds_text(record['seeds'])}. Machine: {record['machine']}"
        f"{environment}. Commit: `{commit}`{source}{published}."
    )


PAGE_HEADER = """# Results

<!-- Generated by `python -m experiments.results` from docs/results/records/*.json: edit the records, not this page.
`python -m experiments.results --check` (and tests/test_results_page.py) fails when this page differs. -->

Every measured result of the project is one JSON record in `results/records/`, with its exact
commands, machine, seeds, date and commit, and the evidence files (metrics, evaluations, comparisons, logs) it was
read from; the record format is in [results/README.md](results/README.md). Placements are mean placements (1 best,
8 worst) of the policy in one seat against 7 opponents, rotated over the 8 seats, +- the 95% interval; "yes" under
"one training seed" means the claim rests on a single training run. Numbers: `_s` seconds, `_ms` milliseconds;
`A_a`, `A_b`, `A_diff`, `A_p` are a comparison's setting A: A's and B's placements, their difference and the paired
t-test's p over game seeds."""


def render_page(records: list[dict], current: dict, link_dir: str = "results") -> str:
    """docs/results.md: for each kind (``KINDS``' order) a table of its records (sorted by date, id), each row
    linking its record and evidence files (``link_dir``: the results directory relative to the page), then the
    records' notes, commands, seeds and commits. ``current`` (``load_current_code``) dates the current code."""
    parts = [
        PAGE_HEADER,
        f"Code counts as current from {current['since']}, the day of the last change to what or how "
        f"fast the presets train: {current['change'].rstrip('.')}. The README's table marks a row "
        f'measured before that day "older".',
    ]
    for kind, title in KINDS.items():
        group = sorted((r for r in records if r["kind"] == kind), key=lambda r: (r["date"], r["id"]))
        if not group:
            continue
        parts.append(f"## {title}")
        parts.append(
            "\n".join(
                [
                    "| record | date | machine | what | numbers | one training seed | evidence |",
                    "|---|---|---|---|---|---|---|",
                    *(_record_row(r, link_dir) for r in group),
                ]
            )
        )
        parts.append("\n".join(_record_note(r, link_dir) for r in group))
    return "\n\n".join(parts) + "\n"


def _minutes(numbers: dict) -> str:
    if "train_s" in numbers:
        return f"{_value(numbers['train_s'])[0] / 60:.1f}"
    if "wall_s" in numbers:
        return f"{_value(numbers['wall_s'])[0] / 60:.1f} (wall)"
    return "-"


def load_current_code(results_dir) -> tuple[dict | None, list[str]]:
    """``(current, problems)``: the results directory's ``CURRENT_CODE_FILE`` (None with a problem when it is
    missing or malformed)."""
    path = Path(results_dir) / CURRENT_CODE_FILE
    if not path.is_file():
        return None, [f"{path}: missing; it names the day since which a result counts as measured on current code"]
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        return None, [f"{path}: not JSON ({err})"]
    if (
        not isinstance(current, dict)
        or set(current) != {"since", "change"}
        or not isinstance(current["since"], str)
        or not _DATE.match(current["since"])
        or not isinstance(current["change"], str)
        or not current["change"].strip()
    ):
        return None, [f'{path}: must be {{"since": "YYYY-MM-DD", "change": "what changed that day"}}']
    return current, []


def code_age(record: dict, current: dict) -> str:
    """``"current"`` when ``record`` ran on or after ``current["since"]`` (``load_current_code``), else ``"older"``."""
    return "current" if record["date"] >= current["since"] else "older"


def _ladder_cell(record: dict, by_id: dict) -> str:
    """The ladder points of a README row: its own ``ladder_rating`` (over training seeds: the mean +- the t
    interval), or the rating in the ladder record it names (``ladder_record``: one policy, its interval over game
    seeds); "-" when it was not rated."""
    if "ladder_rating" in record["numbers"]:
        entry = record["numbers"]["ladder_rating"]
        value, ci95 = _value(entry)
        note = entry.get("note") if isinstance(entry, dict) else None
        return f"{value:.0f}" + ("" if ci95 is None else f" +- {ci95:.0f}") + (f" ({note})" if note else "")
    rated = by_id.get(record.get("ladder_record"))
    if rated is None:
        return "-"
    n = {k: _value(rated["numbers"][k])[0] for k in ("ladder_points", "ladder_low", "ladder_high")}
    return f"{n['ladder_points']:.0f} ({n['ladder_low']:.0f} .. {n['ladder_high']:.0f})"


def render_readme_table(records: list[dict], current: dict) -> str:
    """The README's results table: one row per record with ``readme_row`` (in that order): what, hardware, training
    minutes ("(wall)": only the wall time was measured), the ladder points (``_ladder_cell``), the placement vs 7
    expert bots and as 1 vs 7 of the previous shipped version (the record's ``previous``; +- the 95% interval),
    seeds, and whether it ran on the current code (``code_age`` against ``current``, ``load_current_code``); "-"
    where a row was not measured so. The caption around it is the README's own."""
    by_id = {r["id"]: r for r in records}
    rows = sorted((r for r in records if "readme_row" in r), key=lambda r: (r["readme_row"], r["id"]))
    lines = [
        "| preset | hardware | training minutes | " + " | ".join(README_COLUMNS.values()) + " | seeds | code |",
        "|---|---|---|" + "---|" * len(README_COLUMNS) + "---|---|",
    ]
    for r in rows:
        numbers = r["numbers"]
        expert = format_number(numbers["vs_expert"]) if "vs_expert" in numbers else "-"
        previous = "-"
        if "vs_previous" in numbers:
            previous = f"{format_number(numbers['vs_previous'])} vs `{r['previous'].removeprefix('baseline:')}`"
        seeds = "single seed" if r["single_seed"] else ", ".join(str(s) for s in r["seeds"]["training"])
        cells = [
            r["subject"],
            r["machine"],
            _minutes(numbers),
            _ladder_cell(r, by_id),
            expert,
            previous,
            seeds,
            code_age(r, current),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def render_ladder_table(records: list[dict], population: dict | None = None, link_dir: str = "docs/results") -> str:
    """The ladder table: one row per record with a ``ladder`` rating, highest points first: the player, its points
    with the 95% interval, its mean placement at the ladder's tables, the game seeds, the record; with
    ``population`` (a ladder version's JSON) also the population fit's points of the members."""
    rows = sorted(
        (r for r in records if "ladder" in r), key=lambda r: (-_value(r["numbers"]["ladder_points"])[0], r["id"])
    )
    fitted = {m["spec"]: m for m in (population or {}).get("members", [])}
    head = ["player", "ladder points (95% interval)", "mean placement at its tables", "game seeds"]
    head += ["in the population fit"] if population else []
    lines = ["| " + " | ".join([*head, "record"]) + " |", "|" + "---|" * (len(head) + 1)]
    for r in rows:
        n = {k: _value(r["numbers"][k])[0] for k in LADDER_KEYS}
        games = _value(r["numbers"]["games"])[0] if "games" in r["numbers"] else None
        cells = [
            r["subject"],
            f"{n['ladder_points']:.0f} ({n['ladder_low']:.0f} .. {n['ladder_high']:.0f})",
            f"{n['ladder_mean_placement']:.2f}",
            "-" if games is None else _fmt(games),
        ]
        if population:
            m = fitted.get(r["subject"].strip("`"))
            cells.append(
                "-"
                if m is None
                else f"{m['points']:.0f} ({m['ci95'][0]:.0f} .. {m['ci95'][1]:.0f})"
                + (" (a bound)" if "note" in m else "")
            )
        cells.append(f"[{r['id']}]({link_dir}/records/{r['id']}.json)")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def render_agreement_table(data: dict) -> str:
    """docs/evaluation.md's agreement table from ``experiments.ladder --agreement``'s JSON: one row per pair, per
    setting A - B of mean placement with its interval and the verdict."""
    mark = {"agree": "agrees", "disagree": "**disagrees**", "not_significant": "not significant"}
    settings = list(data["pairs"][0]["settings"]) if data["pairs"] else []
    lines = [
        "| A (points) | B (points) | " + " | ".join(f"{s}: A - B" for s in settings) + " |",
        "|---|---|" + "---|" * len(settings),
    ]
    for pair in data["pairs"]:
        cells = [f"`{pair['a']}` ({pair['points_a']:.0f})", f"`{pair['b']}` ({pair['points_b']:.0f})"]
        for name in settings:
            t = pair["settings"][name]
            cells.append(f"{t['difference']:+.2f} +- {t['ci95']:.2f}, {mark[t['verdict']]}")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    s = data["summary"]
    lines.append("")
    lines.append(
        f"Over {len(data['pairs'])} pairs x {len(settings)} settings ({data['games_per_rotation']} game seeds "
        f"x 8 rotations each, seed {data['seed']}): {s['agree']} agree, {s['disagree']} disagree, "
        f"{s['not_significant']} not significant after Holm. A - B is A's mean placement minus B's "
        "(negative: A places better)."
    )
    return "\n".join(lines)


def replace_block(text: str, block: str, start_marker: str = START, end_marker: str = END) -> str:
    """``text`` with the lines between ``start_marker`` and ``end_marker`` (default the results table's) replaced by
    ``block``; unchanged without both markers (in that order)."""
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        return text
    return text[: start + len(start_marker)] + "\n" + block + "\n" + text[end:]


#: ``agents.run.over_seeds`` lineup name -> the numbers key of a record
_LINEUP_KEYS = {source[len("vs_") :]: key for key, source in EVAL_KEYS.items()}


def _updates_span(result: dict) -> str:
    """ "N updates", or "the first N of its M updates (stop_at_update)" for runs stopped before their schedule's
    end (``result["schedule_updates"]``: the schedule's length)."""
    updates, schedule = max(result["updates"]), result.get("schedule_updates")
    if schedule and updates < schedule:
        return f"the first {updates} of its {schedule} updates (stop_at_update)"
    return f"{updates} updates"


def _placement_number(entry: dict) -> dict:
    """A lineup's aggregate over seeds as a record number: the mean placement and, over several seeds, its
    interval (no per-number note: the README prints notes)."""
    number = {"value": round(entry["mean_placement"], 2)}
    if entry["ci95"] is not None:
        number["ci95"] = round(entry["ci95"], 2)
    return number


def record_from_seeds(
    result: dict,
    record_id: str,
    *,
    command: list[str],
    machine: str,
    environment: str,
    date: str,
    commit: str,
    files: list[str],
    evaluation: str,
) -> dict:
    """A learning record of ``agents.run.over_seeds.reproduce``'s aggregate ``result`` (its JSON is the record's
    ``evaluation`` evidence, so ``check_evidence`` re-reads every placement from it): per lineup the mean over
    training seeds with the 95% t interval over seeds (the record's notes say so, once), the mean training seconds,
    and the median training minutes to the target when every seed reached it."""
    seeds = result["seeds"]
    n = len(seeds)
    over = f"mean over {n} training seeds, 95% t interval over seeds" if n > 1 else "one training seed"
    numbers: dict = {}
    for lineup, key in _LINEUP_KEYS.items():
        entry = result.get(f"vs_{lineup}")
        if entry is None:
            continue
        numbers[key] = _placement_number(entry)
    previous = result.get("previous")
    if previous is not None and result.get(f"vs_{previous}") is not None:
        numbers["vs_previous"] = _placement_number(result[f"vs_{previous}"])
    ladder = result.get("ladder")
    if ladder is not None:
        numbers["ladder_rating"] = {"value": round(ladder["rating"], 1)}
        if ladder["ci95"] is not None:
            numbers["ladder_rating"]["ci95"] = round(ladder["ci95"], 1)
        else:
            low, high = ladder["per_seed_ci95"][0]
            numbers["ladder_rating"]["note"] = f"{low:.0f} .. {high:.0f} over game seeds"
    pipeline = bool(result.get("pipeline"))
    if pipeline:  # every phase's wall time: its compiles, evaluations and the recording too
        walls = result["pipeline_wall_s"]
        numbers["wall_s"] = {
            "value": round(sum(walls) / n, 1),
            "note": "mean over seeds (per seed "
            + ", ".join(f"{w:,.0f}" for w in walls)
            + "): every phase, recording included",
        }
    else:
        numbers["updates"] = max(result["updates"])
        numbers["env_steps"] = max(result["env_steps"])
        numbers["train_s"] = {"value": round(sum(result["train_s"]) / n), "note": "mean over seeds"}
    target = result["minutes_to_target"]
    name = f"train_minutes_to_{str(target['target']).replace('.', '_')}_vs_greedy"
    if target["reached"] == n:
        numbers[name] = {"value": round(target["median"], 2), "note": f"median over {n} seeds"}
    games = result["games_per_lineup"]
    # older aggregates have neither key: they evaluated the final policy, sampling its actions
    which = "best checkpoint (its best_by)" if result.get("checkpoint") == "best" else "final policy"
    play = ", playing its most likely legal action" if result.get("deterministic") else ""
    reached = f"{target['reached']} of {n} seeds placed <= {target['target']} vs greedy in-run"
    title = f"{result['preset']}: {_updates_span(result)} over {n} training seed{'s' * (n > 1)}"
    seeds_note = f"{games} seat-rotated games per lineup and seed"
    if pipeline:
        phases = ", ".join(["record", *result["config"]["phases"]])
        title = f"{result['preset']}: the pipeline ({phases}) over {n} pipeline seed{'s' * (n > 1)}"
        which = "final policy (the pipeline's last phase's result)"
        over = over.replace("training seed", "pipeline seed")
        reached = "The phases evaluate at their ends only, so no time to strength is measured"
        seeds_note = f"pipeline seeds (the recording's; phase i trains with seed + i); {seeds_note}"
    rated = ""
    if ladder is not None:
        rated = (
            f" Each is rated on {ladder['version']} ({ladder['games']} game seeds x 8 rotations, seed "
            f"{ladder['seed']}; per seed " + ", ".join(f"{v:.0f}" for v in ladder["per_seed"]) + " points)."
        )
    if previous is not None:
        rated += f" The previous version: {previous}, as 1 vs 7 of it (vs_previous)."
    extra = {} if previous is None else {"previous": previous}
    return {
        **extra,
        "id": record_id,
        # no "on the current code": the record's commit and date say which code it ran, the README's code column
        # whether that is still current
        "title": title,
        "kind": "learning",
        "preset": result["preset"],
        "subject": f"`{result['preset']}`",
        "command": command,
        "machine": machine,
        "environment": environment,
        "seeds": {"training": seeds, "evaluation": result["eval_seed"], "note": seeds_note},
        "date": date,
        "commit": commit,
        "commit_source": "git HEAD when the command started (a clean work tree)",
        "numbers": numbers,
        "single_seed": n == 1,
        "notes": f"Each seed's {which} evaluated on {games} seat-rotated games per lineup{play}; {over}. {reached}."
        + rated,
        "files": files,
        "evaluation": evaluation,
    }


def expected_pages(root: Path) -> tuple[dict[Path, str], list[str]]:
    """``({path: the text it should have}, problems)`` for the repository at ``root``: docs/results.md always, the
    README when it has the markers. With problems in the records the pages are not rendered (``{}``)."""
    results_dir = root / "docs" / "results"
    records = load_records(results_dir / "records")
    problems = [p for r in records for p in validate(r, results_dir)]
    if not records:
        problems.append(f"no records in {results_dir / 'records'}")
    if problems:
        return {}, problems
    problems = [p for r in records for p in check_evidence(r, results_dir)]
    current, current_problems = load_current_code(results_dir)
    problems += current_problems
    if problems:
        return {}, problems
    pages = {root / "docs" / "results.md": render_page(records, current)}
    readme = root / "README.md"
    if readme.is_file():
        # unchanged (so never written) without the markers
        text = replace_block(readme.read_text(encoding="utf-8"), render_readme_table(records, current))
        pages[readme] = replace_block(text, render_ladder_table(records), LADDER_START, LADDER_END)
    evaluation = root / "docs" / "evaluation.md"
    population = root / "agents" / "arena" / "ladders" / "ladder-v1.json"
    if evaluation.is_file() and population.is_file():
        text = replace_block(
            evaluation.read_text(encoding="utf-8"),
            render_ladder_table(records, json.loads(population.read_text(encoding="utf-8")), link_dir="results"),
            MEMBERS_START,
            MEMBERS_END,
        )
        agreement = next((r for r in records if r["id"] == "ladder_v1_agreement"), None)
        if agreement is not None:
            data = json.loads((results_dir / agreement["files"][0]).read_text(encoding="utf-8"))
            text = replace_block(text, render_agreement_table(data), AGREEMENT_START, AGREEMENT_END)
        pages[evaluation] = text
    return pages, []
