"""Re-record ``smoke_metrics.json`` (what ``tests/test_train.py::test_smoke_run_logs_the_pinned_metrics`` pins):
``python tests/data/record_smoke_metrics.py``. Only when the numbers are meant to change (a change to the
learning itself), never to make that test pass after a change that should not move them; say which commit
and why in ``about``."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
from tests.xla_flags import with_test_flags  # noqa: E402

TIMING = ("wall_s", "sps", "perf/sps", "perf/seat_sps")


def main(why: str) -> None:
    env = {**os.environ, "XLA_FLAGS": with_test_flags(os.environ.get("XLA_FLAGS", ""))}
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "experiments.train",
                "--preset=smoke",
                "--out",
                str(run_dir),
                "--quiet",
                "--no-cache",
            ],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()[1:]
    records = [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]
    flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    pinned = {
        "about": "metrics.jsonl records (timings dropped) of `python -m experiments.train --preset=smoke` (seed 0) "
        "under the test suite's XLA flags (tests/xla_flags.py), recorded by "
        "tests/data/record_smoke_metrics.py on top of "
        f"commit {commit}: {why}. tests/test_train.py pins them bitwise on the same CPU instruction set.",
        "cpu": " ".join(cpu.split()[:2]),
        "isa": sorted(f for f in flags if f.startswith("avx") or f in ("fma", "amx_tile", "sse4_2")),
        "records": records,
    }
    (HERE / "smoke_metrics.json").write_text(json.dumps(pinned, indent=1) + "\n")


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or "see the commit that changed this file")
