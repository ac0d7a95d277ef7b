set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s); L=$OUT/log.txt
el(){ echo "== $(( $(date +%s)-T0 ))s $*" | tee -a $L; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a $L
python3 -c "import jax,flax,optax,orbax.checkpoint,chex,numpy;print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,'orbax',orbax.checkpoint.__version__,'numpy',numpy.__version__,jax.devices())" 2>&1 | tee -a $L
el env
timeout 160 python3 -m experiments.benchmark --what env --num-envs 1024,4096,16384 --fights 16384 > $OUT/env.json 2>> $L; el "env rc=$?"
timeout 160 python3 -m experiments.benchmark --what train --presets ppo_large,a2c_stream --gymnax-steps 0 > $OUT/train.json 2>> $L; el "train rc=$?"
timeout -s INT -k 25 140 python3 -m experiments.train --preset=ppo_large --run-dir /tmp/pl --set eval_every=5 --set checkpoint_every=2 > $OUT/pl.out 2>> $L; el "ppo_large rc=$?"
cp /tmp/pl/metrics.jsonl $OUT/pl_metrics.jsonl 2>/dev/null
timeout 70 python3 -m experiments.evaluate --checkpoint /tmp/pl --games 32 --vs random --vs greedy --vs expert > $OUT/eval.json 2>> $L; el "eval rc=$?"
