"""Generate docs/results.md and the README's results table from the result records in docs/results/records/.

    python -m experiments.results            # write docs/results.md and the README's table (between its markers)
    python -m experiments.results --check    # exit 1 with a diff when a committed page differs, or a record is unsound

Every measured result is one JSON record (the format: docs/results/README.md). The records are validated first
(fields, types, evidence files present, numbers equal to the evaluation / comparison / metrics files they come
from); any problem is printed and the command exits 1 without writing. The README's table is written only between
``<!-- results-table:start -->`` and ``<!-- results-table:end -->``; a README without them is left alone. The
output is deterministic (records sorted by date and id, no timestamps). Library: ``agents.storage.results``.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from agents.storage.results import expected_pages

_SOURCE_ROOT = Path(__file__).resolve().parents[1]


def _diff(path: Path, root: Path, expected: str) -> str:
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    name = str(path.relative_to(root))
    return "".join(
        difflib.unified_diff(
            current.splitlines(True), expected.splitlines(True), f"{name} (committed)", f"{name} (generated)"
        )
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.results", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 with a diff when a page differs from what would be generated",
    )
    parser.add_argument(
        "--root",
        default=None,
        help="the repository (default: the source tree this module is in, else the current directory)",
    )
    args = parser.parse_args(argv)
    default = _SOURCE_ROOT if (_SOURCE_ROOT / "docs" / "results" / "records").is_dir() else Path.cwd()
    root = Path(args.root) if args.root else default
    pages, problems = expected_pages(root)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    stale = {path: text for path, text in sorted(pages.items()) if _diff(path, root, text)}
    if args.check:
        for path, text in stale.items():
            sys.stdout.write(_diff(path, root, text))
        if stale:
            print(f"{len(stale)} page(s) differ from the records: run `python -m experiments.results`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in stale.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
