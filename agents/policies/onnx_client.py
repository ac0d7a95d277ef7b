"""Run a policy written by ``python -m experiments.export PLAYER --format onnx``: needs only numpy and onnxruntime.

``agents.policies.onnx_export`` copies this file into every ONNX export as ``policy_client.py``, so the directory is
self-contained: no JAX, flax or jaxgame is imported to play.

    from policy_client import OnnxPolicy                  # beside policy.onnx, or sys.path.insert(0, "exported/")
    policy = OnnxPolicy("exported/")
    action, logits, value = policy.act(obs, mask, layout_version=1)   # greedy: the most likely legal action

``obs``: float32[B, 582] (vector) or uint8[B, 72, 20] (packed pixel frames), for any batch size B (one observation
without the batch dimension is taken too); ``mask``: bool[B, 258], the legal actions. Returns int64[B],
float32[B, 258] (illegal actions at -1e9) and float32[B]. ``layout_version``: the version of the observation
layout the caller's game writes (``jaxgame.layout.LAYOUT_VERSIONS``); one the policy was not trained on is refused.

Served to a game client (docs/interop.md, "A policy served to a game client"): ``python policy_client.py DIR
--serve`` reads one JSON request a line on stdin and writes one JSON answer a line on stdout:

    -> {"ready": true, "name": ..., "layout_version": 1, "obs_shape": [582], "num_actions": 258}   (first line)
    <- {"obs": [...582 numbers...], "mask": [...258 booleans or 0/1...], "layout_version": 1}
    -> {"action": 17, "value": 0.31}
    <- {"obs": [[...], [...]], "mask": [[...], [...]], "layout_version": 1}          (a batch)
    -> {"action": [17, 0], "value": [0.31, -0.2]}
    <- anything malformed -> {"error": "one line"}; the process goes on. End of input ends it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

SPEC_FILE = "onnx.json"
MODEL_FILE = "policy.onnx"
FORMAT = "jaxgame-onnx-policy"
FORMAT_VERSION = 1


class OnnxPolicyError(ValueError):
    """An export that cannot be loaded, or input the policy cannot take (one line)."""


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_spec(directory) -> dict:
    """The export's ``onnx.json``, checked: its format, and the sha256 of ``policy.onnx`` it records."""
    directory = Path(directory)
    spec_path = directory / SPEC_FILE
    if not spec_path.is_file():
        raise OnnxPolicyError(
            f"{directory} holds no {SPEC_FILE}: not an ONNX export (experiments.export --format onnx)"
        )
    try:
        spec = json.loads(spec_path.read_text())
    except (OSError, ValueError) as err:
        raise OnnxPolicyError(f"{spec_path} is not readable JSON ({err})") from None
    if not isinstance(spec, dict) or spec.get("format") != FORMAT:
        raise OnnxPolicyError(f"{spec_path} is not a jaxgame ONNX export (format {FORMAT!r})")
    if spec.get("format_version") != FORMAT_VERSION:
        raise OnnxPolicyError(
            f"{spec_path} has format_version {spec.get('format_version')!r}; this client reads "
            f"{FORMAT_VERSION}: re-export with the jaxgame that runs it"
        )
    model = directory / spec["files"]["model"]
    if not model.is_file():
        raise OnnxPolicyError(f"{model} is missing")
    if _sha256(model) != spec["files"]["model_sha256"]:
        raise OnnxPolicyError(
            f"{model} does not match the sha256 {SPEC_FILE} records: the file is damaged or not this export's"
        )
    return spec


class OnnxPolicy:
    """``policy.onnx`` of an export directory in an onnxruntime session (CPU unless ``providers`` says)."""

    def __init__(self, directory, providers=("CPUExecutionProvider",)):
        import onnxruntime

        self.directory = Path(directory)
        self.spec = read_spec(self.directory)
        observation = self.spec["observation"]
        self.name = self.spec["name"]
        self.layout_version = int(observation["layout_version"])
        self.obs_shape = tuple(observation["shape"])
        self.obs_dtype = np.dtype(observation["dtype"])
        self.num_actions = int(self.spec["num_actions"])
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings such as unused initializers are not the caller's business
        self.session = onnxruntime.InferenceSession(
            str(self.directory / self.spec["files"]["model"]), options, providers=list(providers)
        )

    def check(self, obs, mask, layout_version=None) -> tuple[np.ndarray, np.ndarray, bool]:
        """(obs, mask) as the model takes them (a batch), and whether a single observation was given."""
        if layout_version is not None and int(layout_version) != self.layout_version:
            raise OnnxPolicyError(
                f"observation layout version {layout_version} given; {self.name} reads layout "
                f"version {self.layout_version} of {self.spec['observation']['kind']} observations"
            )
        obs = np.asarray(obs)
        single = obs.shape == self.obs_shape
        if single:
            obs = obs[None]
        if obs.shape[1:] != self.obs_shape:
            raise OnnxPolicyError(f"obs of shape {obs.shape}; expected [B, {', '.join(map(str, self.obs_shape))}]")
        if self.obs_dtype.kind == "u" and (obs.min(initial=0) < 0 or obs.max(initial=0) > 255):
            raise OnnxPolicyError("packed frames must be bytes 0..255")
        mask = np.asarray(mask)
        if single and mask.ndim == 1:
            mask = mask[None]
        if mask.shape != (obs.shape[0], self.num_actions):
            raise OnnxPolicyError(f"mask of shape {mask.shape}; expected [{obs.shape[0]}, {self.num_actions}]")
        return obs.astype(self.obs_dtype), mask.astype(bool), single

    def act(self, obs, mask, layout_version=None):
        """Greedy actions: (action int64[B], masked logits float32[B, A], value float32[B]); a single observation
        (no batch dimension) gives scalars and logits float32[A]."""
        obs, mask, single = self.check(obs, mask, layout_version)
        logits, value = self.session.run(["logits", "value"], {"obs": obs, "mask": mask})
        action = logits.argmax(axis=-1)  # the lowest index on ties, as agents.core.distributions.greedy
        return (action[0], logits[0], value[0]) if single else (action, logits, value)


def _answer(policy: OnnxPolicy, line: str) -> dict:
    try:
        request = json.loads(line)
    except ValueError as err:
        return {"error": f"not JSON: {err}"}
    except RecursionError:
        return {"error": "not JSON: nested too deeply"}
    if not isinstance(request, dict) or "obs" not in request or "mask" not in request:
        return {"error": "a request is an object with obs and mask (and layout_version)"}
    try:
        action, _, value = policy.act(
            np.asarray(request["obs"], np.float64), np.asarray(request["mask"]), request.get("layout_version")
        )
    except (OnnxPolicyError, ValueError, TypeError) as err:
        return {"error": str(err).splitlines()[0] if str(err) else type(err).__name__}
    return {"action": action.tolist(), "value": value.tolist()}


def serve(directory, stdin=None, stdout=None) -> int:
    """The JSON-lines loop of the module docstring; returns the number of requests answered."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    policy = OnnxPolicy(directory)
    hello = {
        "ready": True,
        "name": policy.name,
        "layout_version": policy.layout_version,
        "obs_shape": list(policy.obs_shape),
        "obs_dtype": policy.obs_dtype.name,
        "num_actions": policy.num_actions,
    }
    stdout.write(json.dumps(hello) + "\n")
    stdout.flush()
    answered = 0
    for line in stdin:
        if not line.strip():
            continue
        stdout.write(json.dumps(_answer(policy, line)) + "\n")
        stdout.flush()
        answered += 1
    return answered


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="policy_client.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="the export directory (onnx.json, policy.onnx)")
    parser.add_argument("--serve", action="store_true", help="answer JSON-lines requests on stdin (the protocol above)")
    args = parser.parse_args(argv)
    try:
        if args.serve:
            serve(args.directory)
        else:
            spec = read_spec(args.directory)
            print(json.dumps({"name": spec["name"], "observation": spec["observation"], "opset": spec["opset"]}))
    except OnnxPolicyError as err:
        print(f"policy_client.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
