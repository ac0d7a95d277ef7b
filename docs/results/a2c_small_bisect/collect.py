"""Write one JSON per tested run (commit, chunks, the loss/* and train/* values per chunk) + summary.json."""
import glob, json, os, subprocess
OUT = "/tmp/work/a2c_bisect"
def recs(path):
    meta, out = None, []
    for line in open(path):
        r = json.loads(line)
        if "meta" in r:
            meta = r["meta"]
        elif "update" in r:
            out.append({k: v for k, v in r.items() if k == "update" or k.startswith(("loss/", "train/"))})
    return meta, out
def subject(rev):
    return subprocess.run(["git", "-C", "/work/main", "log", "-1", "--format=%s", rev], capture_output=True, text=True).stdout.strip()[:200]
meta, ref = recs("/work/main/docs/results/a2c_small_v1.metrics.jsonl")
json.dump({"run": "committed record docs/results/a2c_small_v1.metrics.jsonl (first 3 chunks)", "commit": meta["git_commit"],
           "note": "meta.git_commit is HEAD when the run started; the tree was dirty (its records have loss/advantage_std, "
                   "which aef6a68's code does not log; the code was committed in 13a41d1 with this record)",
           "chunks": 3, "records": ref[:3]}, open(f"{OUT}/committed_a2c_small_v1.json", "w"), indent=1)
for d in sorted(glob.glob("/tmp/bisect-runs/*_*")):
    if d.endswith(".log") or not os.path.exists(f"{d}/metrics.jsonl"):
        continue
    m, r = recs(f"{d}/metrics.jsonl")
    if not r:
        continue
    name = os.path.basename(d)
    tag = name.split("_")[2] if name.count("_") >= 2 else ""
    log = open(d + ".log").read()
    json.dump({"commit": m["git_commit"], "subject": subject(m["git_commit"]), "chunks": len(r),
               "variant": {"rerun": "second process, same commit", "avx2": "XLA_FLAGS=--xla_cpu_max_isa=AVX2",
                           "avx512f": "XLA_FLAGS=--xla_cpu_max_isa=AVX512F (an unknown ISA name to XLA: ignored)"}.get(tag, "default"),
               "command": "PYTHONPATH=<worktree> python -m experiments.train --preset=a2c_small --run-dir DIR --set lr=3e-4 "
                          f"--set total_steps={m['config'].get('total_steps', '?') if 'total_steps' in m['config'] else name.split('_')[1]} --set eval_every=8 --set eval_games=4 "
                          "--set checkpoint_every=8 --quiet --cache-dir /tmp/bisect-cache",
               "imported_from": log.splitlines()[0], "jax": m["versions"]["jax"], "records": r},
              open(f"{OUT}/{name}.json", "w"), indent=1)
    print("wrote", name, len(r))
