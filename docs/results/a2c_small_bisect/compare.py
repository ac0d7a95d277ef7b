"""compare.py RUN_DIR [REF_JSONL] -> prints per-update diffs of loss/* and train/* vs the committed record."""
import json, sys
ref_path = sys.argv[2] if len(sys.argv) > 2 else "/work/main/docs/results/a2c_small_v1.metrics.jsonl"
def load(p):
    recs = {}
    for line in open(p):
        r = json.loads(line)
        if "update" in r:
            recs[r["update"]] = {k: v for k, v in r.items() if k.startswith(("loss/", "train/"))}
    return recs
ref, got = load(ref_path), load(sys.argv[1] + "/metrics.jsonl")
for u in sorted(got):
    g, r = got[u], ref.get(u, {})
    keys = sorted(set(g) | set(r))
    diffs = {k: (r.get(k), g.get(k)) for k in keys if r.get(k) != g.get(k)}
    print(f"update {u}: {'EXACT' if not diffs else f'{len(diffs)}/{len(keys)} keys differ'}")
    for k, (a, b) in diffs.items():
        rel = abs(a - b) / max(abs(a), 1e-30) if isinstance(a, float) and isinstance(b, float) else None
        print(f"   {k}: ref={a} got={b} rel={rel}")
