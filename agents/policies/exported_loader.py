"""Load a policy written by ``python -m experiments.export``: needs only ``jax`` and ``numpy``.

``agents.policies.export`` copies this file into every export directory as ``policy_loader.py``, so the directory is
self-contained: nothing of jaxgame, flax or the training code is imported to run the policy.

    import sys; sys.path.insert(0, "exported/")         # or copy policy_loader.py next to your code
    from policy_loader import ExportedPolicy
    policy = ExportedPolicy("exported/")
    action, logits, value = policy.act(obs, mask)             # greedy: the most likely legal action
    action, logits, value = policy.act(obs, mask, key=7)      # sampled (an int seed or a jax key)

``obs``: float32[B, obs_size] (vector) or uint8[B, 72, 20] (packed pixel frames), for any batch size B;
``mask``: bool[B, 258], the legal actions. Returns int32[B], float32[B, 258], float32[B].
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

SPEC_FILE = "spec.json"
FORMAT = "jaxgame-exported-policy"
FORMAT_VERSION = 1


class ExportedPolicyError(ValueError):
    """An export directory that cannot be loaded, or input the policy cannot take."""


class ExportedPolicy:
    """A serialized ``act(obs, mask[, key]) -> (action, logits, value)`` and its spec (``self.spec``)."""

    def __init__(self, directory):
        directory = Path(directory)
        try:
            spec = json.loads((directory / SPEC_FILE).read_text())
        except (OSError, ValueError) as err:
            raise ExportedPolicyError(f"{directory}: no readable {SPEC_FILE} ({err})") from None
        if spec.get("format") != FORMAT or spec.get("format_version") != FORMAT_VERSION:
            raise ExportedPolicyError(f"{directory}: not a {FORMAT} v{FORMAT_VERSION} directory "
                                      f"(format {spec.get('format')!r} v{spec.get('format_version')!r})")
        self.spec = spec
        self.obs_shape = tuple(spec["obs_shape"])
        self.obs_dtype = np.dtype(spec["obs_dtype"])
        self.num_actions = int(spec["num_actions"])
        self._functions = {}
        for variant in ("greedy", "sample"):
            path = directory / spec["files"][variant]
            try:
                self._functions[variant] = jax.export.deserialize(bytearray(path.read_bytes()))
            except Exception as err:  # a truncated or foreign file: one line, never a silent wrong policy
                raise ExportedPolicyError(f"{path}: cannot deserialize ({type(err).__name__}: {err})") from None

    def act(self, obs, mask, key=None):
        """(action int32[B], logits float32[B, A], value float32[B]); greedy without ``key``, else sampled with
        ``key`` (an int seed or a jax PRNG key, typed or legacy)."""
        obs, mask = np.asarray(obs), np.asarray(mask)
        if obs.ndim != 1 + len(self.obs_shape) or obs.shape[1:] != self.obs_shape or obs.dtype != self.obs_dtype:
            raise ExportedPolicyError(f"obs must be {self.obs_dtype}[B, {', '.join(map(str, self.obs_shape))}], "
                                      f"got {obs.dtype}{list(obs.shape)}")
        if mask.shape != (obs.shape[0], self.num_actions) or mask.dtype != np.bool_:
            raise ExportedPolicyError(f"mask must be bool[{obs.shape[0]}, {self.num_actions}], "
                                      f"got {mask.dtype}{list(mask.shape)}")
        if key is None:
            return self._functions["greedy"].call(obs, mask)
        if isinstance(key, (int, np.integer)):
            key = jax.random.key(int(key))
        if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        key = np.asarray(key, np.uint32)
        if key.shape != (2,):
            raise ExportedPolicyError(f"key must be an int seed or a threefry PRNG key, got shape {key.shape}")
        return self._functions["sample"].call(obs, mask, key)
