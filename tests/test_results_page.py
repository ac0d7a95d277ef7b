"""Results that cannot drift: every record in docs/results/records/ is sound and agrees with its evidence files,
and docs/results.md and the README's results table are exactly what ``python -m experiments.results`` generates.
Pure Python (no JAX work); the check mode is exercised on copies in tmp_path, never on the real files."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from agents.storage import results as store
from experiments import results as cli

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
RECORDS = store.load_records(RESULTS / "records")
CURRENT, _ = store.load_current_code(RESULTS)


def test_there_are_records_of_every_main_kind():
    kinds = {r["kind"] for r in RECORDS}
    assert {"learning", "comparison", "throughput", "benchmark"} <= kinds
    assert len(RECORDS) >= 20


@pytest.mark.parametrize("record", RECORDS, ids=[r.get("id", "?") for r in RECORDS])
def test_record_is_sound(record):
    """Required fields with sane types, a known kind, an id equal to the file's name, every evidence file present."""
    assert store.validate(record, RESULTS) == []
    for name, kinds in store.REQUIRED.items():
        assert isinstance(record[name], kinds), name
    assert record["command"] and record["kind"] in store.KINDS
    assert all((RESULTS / f).is_file() for f in record["files"])
    assert isinstance(record["seeds"]["training"], list)


@pytest.mark.parametrize("record", RECORDS, ids=[r.get("id", "?") for r in RECORDS])
def test_record_numbers_agree_with_their_evidence(record):
    assert store.check_evidence(record, RESULTS) == []


def test_the_evidence_checks_cover_the_main_results():
    """Guards the agreement test against passing because no record names its evidence."""
    assert sum("evaluation" in r for r in RECORDS) >= 10
    assert sum("compare" in r for r in RECORDS) >= 6
    assert sum("metrics" in r for r in RECORDS) >= 10


def test_readme_rows_are_presets_with_placements():
    rows = [r for r in RECORDS if "readme_row" in r]
    assert len({r["readme_row"] for r in rows}) == len(rows), "two records claim the same README row"
    for r in rows:
        assert r["kind"] == "learning" and "vs_greedy" in r["numbers"], r["id"]
        assert "train_s" in r["numbers"] or "wall_s" in r["numbers"], r["id"]


def test_generated_page_equals_the_committed_one():
    pages, problems = cli.expected_pages(ROOT)
    assert problems == []
    committed = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert committed == pages[ROOT / "docs" / "results.md"], "stale: run python -m experiments.results"


def test_readme_block_equals_the_generated_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if store.START not in readme or store.END not in readme:
        pytest.skip("README.md has no results-table markers")
    block = readme[readme.index(store.START) + len(store.START) : readme.index(store.END)]
    assert block.strip("\n") == store.render_readme_table(RECORDS, CURRENT), "run python -m experiments.results"


def test_output_is_deterministic():
    shuffled = list(RECORDS)
    random.Random(0).shuffle(shuffled)
    assert store.render_page(shuffled, CURRENT) == store.render_page(RECORDS, CURRENT)
    assert store.render_readme_table(shuffled, CURRENT) == store.render_readme_table(RECORDS, CURRENT)


def test_a_row_measured_before_the_current_code_says_so():
    """The README's last column: "older" for a record dated before ``current_code.json``'s day, else "current"."""
    assert store.load_current_code(RESULTS)[1] == []
    row = next(r for r in RECORDS if "readme_row" in r)
    current = {"since": "2026-11-28", "change": "x"}
    ages = {}
    for date in ("2026-11-27", "2026-11-28", "2026-12-01"):
        table = store.render_readme_table([{**row, "date": date}], current)
        ages[date] = table.splitlines()[2].rsplit("|", 2)[1].strip()
    assert table.splitlines()[0].endswith("| seeds | code |")
    assert ages == {"2026-11-27": "older", "2026-11-28": "current", "2026-12-01": "current"}


@pytest.mark.parametrize(
    "text",
    [
        None,
        "not json",
        '{"since": "28.11.2026", "change": "x"}',
        '{"since": "2026-11-28"}',
        '{"since": "2026-11-28", "change": " "}',
    ],
)
def test_a_missing_or_malformed_current_code_file_is_a_problem(tmp_path, text):
    root = _copy_repo(tmp_path)
    path = root / "docs" / "results" / store.CURRENT_CODE_FILE
    if text is None:
        path.unlink()
    else:
        path.write_text(text, encoding="utf-8")
    pages, problems = cli.expected_pages(root)
    assert pages == {} and len(problems) == 1 and store.CURRENT_CODE_FILE in problems[0]


def _copy_repo(tmp_path: Path, readme: str | None = None) -> Path:
    """The pieces ``experiments.results`` reads, copied under tmp_path."""
    shutil.copytree(RESULTS, tmp_path / "docs" / "results")
    shutil.copy(ROOT / "docs" / "results.md", tmp_path / "docs" / "results.md")
    text = readme if readme is not None else (ROOT / "README.md").read_text(encoding="utf-8")
    (tmp_path / "README.md").write_text(text, encoding="utf-8")
    return tmp_path


def test_check_mode_fails_on_a_hand_edited_page(tmp_path, capsys):
    root = _copy_repo(tmp_path, readme=f"# x\n\n{store.START}\nold table\n{store.END}\n\nafter\n")
    assert cli.main(["--root", str(root)]) == 0  # writes the README's block
    assert cli.main(["--check", "--root", str(root)]) == 0
    page = root / "docs" / "results.md"
    page.write_text(page.read_text(encoding="utf-8").replace("1.80 +- 0.17", "1.70 +- 0.17", 1), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["--check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "docs/results.md (committed)" in out and "-" in out and "1.70 +- 0.17" in out
    assert cli.main(["--root", str(root)]) == 0 and cli.main(["--check", "--root", str(root)]) == 0
    assert (root / "README.md").read_text(encoding="utf-8").endswith(f"{store.END}\n\nafter\n")


def test_check_mode_fails_on_a_hand_edited_readme_table(tmp_path, capsys):
    table = store.render_readme_table(RECORDS, CURRENT)
    root = _copy_repo(tmp_path, readme=f"intro\n{store.START}\n{table}\n{store.END}\n")
    assert cli.main(["--check", "--root", str(root)]) == 0
    readme = root / "README.md"
    edited = readme.read_text(encoding="utf-8").replace("| 2-core CPU |", "| 3-core CPU |", 1)  # one cell of a row
    assert edited != readme.read_text(encoding="utf-8")
    readme.write_text(edited, encoding="utf-8")
    assert cli.main(["--check", "--root", str(root)]) == 1
    assert "README.md (committed)" in capsys.readouterr().out


def test_a_readme_without_markers_is_left_alone(tmp_path):
    root = _copy_repo(tmp_path, readme="# no markers\n")
    assert cli.main(["--root", str(root)]) == 0
    assert (root / "README.md").read_text(encoding="utf-8") == "# no markers\n"
    assert store.replace_block("a\nb\n", "table") == "a\nb\n"


def test_check_mode_fails_on_a_record_that_disagrees_with_its_evidence(tmp_path, capsys):
    root = _copy_repo(tmp_path)
    path = root / "docs" / "results" / "records" / "ppo_small_v1.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["numbers"]["vs_greedy"]["value"] = 1.70
    path.write_text(json.dumps(record), encoding="utf-8")
    assert cli.main(["--check", "--root", str(root)]) == 1
    assert "ppo_small_v1: numbers.vs_greedy: 1.7 but the evaluation says 1.80078125" in capsys.readouterr().err


def test_validate_names_what_is_wrong(tmp_path):
    good = dict(next(r for r in RECORDS if r["id"] == "ppo_small_v1"))
    assert store.validate(good, RESULTS) == []
    cases = {
        "title: missing": {k: v for k, v in good.items() if k != "title"},
        "colour: not a record field": {**good, "colour": "red"},
        "single_seed: expected": {**good, "single_seed": "yes"},
        "kind: one of": {**good, "kind": "vibes"},
        "date: YYYY-MM-DD": {**good, "date": "25 Nov 2026"},
        "commit: 'unknown' or": {**good, "commit": "HEAD"},
        "command: a non-empty list": {**good, "command": []},
        "command: /tmp/run is a path of the machine": {**good, "command": ["python -m x --out /tmp/run"]},
        "command: /work/main/runs/x is a path": {**good, "command": ["python -m x --out /work/main/runs/x"]},
        "seeds.evaluation": {**good, "seeds": {"training": [0], "evaluation": "123"}},
        "numbers.vs_greedy: a finite number": {**good, "numbers": {"vs_greedy": {"mean": 1.8}}},
        "numbers.x.ci95": {**good, "numbers": {"x": {"value": 1.0, "ci95": -1}}},
        "notes: a p-value claim must name its test": {**good, "notes": "Better, p = 0.01."},
        "files: missing.json does not exist": {**good, "files": [*good["files"], "missing.json"]},
        "files: relative paths": {**good, "files": ["../README.md"]},
        "evaluation: x.eval.json is not among files": {**good, "evaluation": "x.eval.json"},
    }
    for expected, record in cases.items():
        problems = store.validate(record, RESULTS)
        assert any(expected in p for p in problems), (expected, problems)


def test_format_number():
    assert store.format_number(1279) == "1,279"
    assert store.format_number(0.997) == "0.997"
    assert store.format_number(7e-19) == "7e-19"
    assert store.format_number({"value": 1.8, "ci95": 0.17}) == "1.80 +- 0.17"
    assert store.format_number({"value": 7.04, "ci95": 0.26, "note": "argmax play"}) == "7.04 +- 0.26 (argmax play)"


def test_every_generated_page_equals_the_committed_one():
    """docs/results.md, the README's two tables and docs/evaluation.md's ladder tables."""
    pages, problems = cli.expected_pages(ROOT)
    assert problems == [] and ROOT / "docs" / "evaluation.md" in pages and ROOT / "README.md" in pages
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, f"stale {path.name}: run python -m experiments.results"
    readme = pages[ROOT / "README.md"]
    assert readme.count("| `baseline:") >= 6  # the ladder table holds every shipped baseline's rating


def test_the_ladder_records_are_checked_against_their_ratings(tmp_path):
    ladder_records = [r for r in RECORDS if "ladder" in r]
    assert len(ladder_records) >= 10  # every member of ladder-v1 rated as a player
    record = json.loads(json.dumps(ladder_records[0]))
    record["numbers"]["ladder_points"]["value"] += 5
    (problem,) = store.check_evidence(record, RESULTS)
    assert f"{record['id']}: numbers.ladder_points: " in problem and "but the ladder rating says" in problem
    del record["numbers"]["ladder_high"]
    assert any("numbers.ladder_high: missing" in p for p in store.check_evidence(record, RESULTS))
