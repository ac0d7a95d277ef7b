#!/bin/bash
# usage: run_one.sh WORKTREE REV TOTAL_STEPS [TAG] -> runs a2c_small (seed 0) at REV inside WORKTREE, writes /tmp/bisect-runs/<short>_<steps>[_TAG]/
set -u
WT=$1; REV=$2; STEPS=${3:-25600}; TAG=${4:-}
git -C "$WT" checkout -q --detach "$REV" || exit 2
SHORT=$(git -C "$WT" rev-parse --short=10 HEAD)
D=/tmp/bisect-runs/${SHORT}_${STEPS}${TAG:+_$TAG}
rm -rf "$D"
cd "$WT"
export PYTHONPATH="$WT"
/work/main/.venv/bin/python -c "import agents, jaxgame; print(agents.__file__, jaxgame.__file__)" > "$D.log"
COMMON="--preset=a2c_small --set lr=3e-4 --set total_steps=$STEPS --set eval_every=8 --set eval_games=4 --set checkpoint_every=8 --quiet --cache-dir /tmp/bisect-cache"
/work/main/.venv/bin/python -m experiments.train $COMMON --run-dir "$D" >> "$D.log" 2>&1 || \
  { echo "run-dir failed, trying --out" >> "$D.log"; /work/main/.venv/bin/python -m experiments.train $COMMON --out "$D" >> "$D.log" 2>&1; }
echo "rc=$? dir=$D" >> "$D.log"
echo "$D"
