# The GPU checklist (../shared/gpu-checklist.md) for what issue 46 item 2 still asks of a lent GPU, as prepared
# device calls: run it from the repo root on the device machine, one PHASE per call.
#
#   PHASE=bench bash docs/gpu/checklist.sh    # about 6 min: env-only stepping and the combat at 4096 and 16384
#                                             # games / fights (goals 10M seat-steps/s, 1M fights/s), then training
#                                             # throughput of ppo_large and a2c_stream (goal 4M seat-steps/s)
#   PHASE=learn PRESETS="a2c_stream ppo_pixels" TRAIN_S=120 bash docs/gpu/checklist.sh
#                                             # each preset trained TRAIN_S seconds of wall time (compile included;
#                                             # SIGINT saves at the next chunk boundary), then evaluated against
#                                             # random, greedy, expert and baseline:ppo_small-v1, GAMES game seeds
#                                             # x 8 seat rotations, evaluation seed EVAL_SEED (training uses seed 0)
#
# Defaults: PRESETS="a2c_stream independent_large ppo_pixels", TRAIN_S=120, GAMES=32, EVAL_SEED=4242. A preset
# costs about TRAIN_S + 60 s (the evaluation's compile and games), so one call of at most 10 minutes holds three
# at TRAIN_S=120; the session's 15 device minutes hold bench and learn only with a short TRAIN_S: choose. Runs stay
# under RUNS (default /tmp/gpu_runs) with --auto-resume: a later call on the same machine continues them. What comes
# back ($OUT, at most 8 files): log_<phase>.txt; env.json and train.json (bench); runs.tgz (learn: each run
# directory without its checkpoints, and beside it <preset>.summary.json and <preset>.eval.json).
#
# Packages: the H200 image has jax, flax, optax, orbax-checkpoint, chex, scipy, tqdm, pillow and matplotlib, not
# tensorboardX or openskill: fetch those as wheels here (the device README's pip download line, into .whl/, ignored
# by git) and carry .whl; the script installs .whl/*.whl when the folder exists.
#
# SMALL=1 runs the same commands at tiny shapes on a CPU (a few minutes): test the script there before a GPU minute
# is spent on it. Every step has its own timeout, so one that hangs costs its own minutes, not the call's.
set -u
PHASE=${PHASE:?set PHASE=bench or PHASE=learn}
OUT=${OUT:-/tmp/gpu_out}; RUNS=${RUNS:-/tmp/gpu_runs}; mkdir -p "$OUT" "$RUNS"
SMALL=${SMALL:-0}; PY=${PY:-python3}
if [ -d .whl ] && ls .whl/*.whl > /dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
L=$OUT/log_$PHASE.txt; T0=$(date +%s)
el(){ echo "== $(( $(date +%s) - T0 ))s $*" | tee -a "$L"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee -a "$L"
$PY -c "import jax, flax, optax, orbax.checkpoint as o, numpy; print('jax', jax.__version__, 'flax', flax.__version__,
'optax', optax.__version__, 'orbax', o.__version__, 'numpy', numpy.__version__, jax.devices())" 2>&1 | tee -a "$L"
git log -1 --format='commit %H %cI' 2>&1 | tee -a "$L"

if [ "$SMALL" = 1 ]; then  # tiny shapes for a CPU test of the script
  ENVS=8,16; FIGHTS=64; TRAIN_PRESETS=smoke; LIMIT=120
  TINY="--set num_envs=8 --set total_steps=100000000 --set updates_per_chunk=2 --set hidden=64,64 --set max_rounds=6
        --set steps_per_round=4 --set max_combat_ticks=100 --set eval_every=0 --set checkpoint_every=50"
  TRAIN_S=${TRAIN_S:-100}; GAMES=${GAMES:-1}
else
  ENVS=4096,16384; FIGHTS=16384; TRAIN_PRESETS=ppo_large,a2c_stream; LIMIT=170; TINY=""
  TRAIN_S=${TRAIN_S:-120}; GAMES=${GAMES:-32}
fi
EVAL_SEED=${EVAL_SEED:-4242}

case "$PHASE" in
bench)
  el "env: --num-envs $ENVS --fights $FIGHTS"
  timeout "$((LIMIT + 40))" $PY -m benchmarks.harness --what env --num-envs "$ENVS" --fights "$FIGHTS" \
    > "$OUT/env.json" 2>> "$L"; el "env rc=$?"
  el "train: --presets $TRAIN_PRESETS"
  timeout "$LIMIT" $PY -m benchmarks.harness --what train --presets "$TRAIN_PRESETS" --gymnax-steps 0 \
    > "$OUT/train.json" 2>> "$L"; el "train rc=$?"
  ;;
learn)
  for preset in ${PRESETS:-a2c_stream independent_large ppo_pixels}; do
    run=$RUNS/$preset
    el "train $preset for ${TRAIN_S}s in $run"
    # shellcheck disable=SC2086  # TINY is a list of arguments
    timeout -s INT -k 60 "$TRAIN_S" $PY -m experiments.train --preset="$preset" $TINY --out "$run" --auto-resume --quiet \
      > "$run.summary.json" 2>> "$L"; el "train $preset rc=$?"
    el "evaluate $preset"
    timeout 240 $PY -m experiments.evaluate "$run" --games "$GAMES" --seed "$EVAL_SEED" --quiet \
      --vs random --vs greedy --vs expert --vs baseline:ppo_small-v1 > "$run.eval.json" 2>> "$L"
    el "evaluate $preset rc=$?"
  done
  tar czf "$OUT/runs.tgz" --exclude=checkpoints -C "$RUNS" . 2>> "$L"; el "runs.tgz rc=$?"
  ;;
*) echo "PHASE must be bench or learn, got $PHASE" >&2; exit 2 ;;
esac
ls -la "$OUT" | tee -a "$L"
