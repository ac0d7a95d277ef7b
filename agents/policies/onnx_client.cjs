// Run a policy written by `python -m experiments.export PLAYER --format onnx` from Node.js: onnxruntime-node only.
//
// agents.policies.onnx_export copies this file into every ONNX export as policy_client.cjs. The protocol is
// policy_client.py's (--serve): one JSON request a line on stdin, one JSON answer a line on stdout, the first line
// a hello naming the policy and the observation layout version it reads.
//
//   npm install onnxruntime-node            # once, where Node resolves it (or NODE_PATH=.../node_modules)
//   node policy_client.cjs exported/ < requests.jsonl > answers.jsonl
//
// A game client in another language does the same 20 lines: load onnx.json, check layout_version, feed
// obs float32[B, 582] (or uint8[B, 72, 20]) and mask bool[B, 258], take the argmax of the masked logits.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const ort = require("onnxruntime-node");

async function main() {
  const dir = process.argv[2];
  if (!dir) { console.error("usage: node policy_client.cjs EXPORT_DIR < requests.jsonl"); process.exit(2); }
  const spec = JSON.parse(fs.readFileSync(path.join(dir, "onnx.json"), "utf8"));
  const obsShape = spec.observation.shape, obsSize = obsShape.reduce((a, b) => a * b, 1);
  const numActions = spec.num_actions, layoutVersion = spec.observation.layout_version;
  const ObsArray = spec.observation.dtype === "uint8" ? Uint8Array : Float32Array;
  const session = await ort.InferenceSession.create(path.join(dir, spec.files.model));
  const say = (answer) => process.stdout.write(JSON.stringify(answer) + "\n");
  say({ ready: true, name: spec.name, layout_version: layoutVersion, obs_shape: obsShape, num_actions: numActions });
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    let request;
    try { request = JSON.parse(line); } catch (err) { say({ error: `not JSON: ${err.message}` }); continue; }
    if (request.layout_version !== undefined && request.layout_version !== layoutVersion) {
      say({ error: `observation layout version ${request.layout_version} given; ${spec.name} reads layout ` +
                   `version ${layoutVersion}` });
      continue;
    }
    const single = !Array.isArray(request.obs[0]) || (obsShape.length > 1 && !Array.isArray(request.obs[0][0]));
    const obsRows = single ? [request.obs] : request.obs, maskRows = single ? [request.mask] : request.mask;
    const batch = obsRows.length;
    const obs = ObsArray.from(obsRows.flat(obsShape.length));
    const mask = Uint8Array.from(maskRows.flat(), (m) => (m ? 1 : 0));
    if (obs.length !== batch * obsSize || mask.length !== batch * numActions) {
      say({ error: `obs or mask of the wrong size: expected [B, ${obsShape}] and [B, ${numActions}]` });
      continue;
    }
    const out = await session.run({
      obs: new ort.Tensor(spec.observation.dtype === "uint8" ? "uint8" : "float32", obs, [batch, ...obsShape]),
      mask: new ort.Tensor("bool", mask, [batch, numActions]),
    });
    const logits = out.logits.data, value = Array.from(out.value.data);
    const action = [];
    for (let b = 0; b < batch; b++) {  // the argmax of the masked logits, the lowest index on ties
      let best = 0;
      for (let a = 1; a < numActions; a++) if (logits[b * numActions + a] > logits[b * numActions + best]) best = a;
      action.push(best);
    }
    say(single ? { action: action[0], value: value[0] } : { action, value });
  }
}

main().catch((err) => { console.error(`policy_client.cjs: error: ${err.message}`); process.exit(1); });
