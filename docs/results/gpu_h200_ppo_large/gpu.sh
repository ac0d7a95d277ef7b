# One device call: train ppo_large (seed 0) for TRAIN_S seconds of wall time, stopped by SIGINT at a chunk boundary
# (it saves), continued by the next call with the same command (--auto-resume); then freezes its latest checkpoint
# (the checkpoints, with 4096 games' state, are too large to come back).
# Run from the repo root on the device machine: PHASE=a TRAIN_S=540 bash docs/results/gpu_h200_ppo_large/gpu.sh
set -u
[ "${SKIP_WHL:-0}" = 1 ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; L=$OUT/log_$PHASE.txt; T0=$(date +%s); RUN=${RUN:-/tmp/pl}
el(){ echo "== $(( $(date +%s)-T0 ))s $*" | tee -a "$L"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee -a "$L"
python3 -c "import jax,flax,optax,orbax.checkpoint,numpy;print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,'orbax',orbax.checkpoint.__version__,'numpy',numpy.__version__,jax.devices())" 2>&1 | tee -a "$L"
el "train ${ARGS:---preset=ppo_large} for ${TRAIN_S}s"
timeout -s INT -k 40 "$TRAIN_S" python3 -m experiments.train ${ARGS:---preset=ppo_large} --out "$RUN" --auto-resume \
  > "$OUT/train_$PHASE.json" 2>> "$L"; el "train rc=$?"
timeout 90 python3 -m experiments.baseline freeze "$RUN" --name "${NAME:-ppo_large-v1}" --out "/tmp/frozen_$PHASE" \
  >> "$L" 2>&1; el "freeze rc=$?"; tar czf "$OUT/frozen_$PHASE.tgz" -C /tmp "frozen_$PHASE"
tar czf "$OUT/run_$PHASE.tgz" --exclude=checkpoints -C "$(dirname "$RUN")" "$(basename "$RUN")"; el "done"
ls -la "$OUT" | tee -a "$L"
