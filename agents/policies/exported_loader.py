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

A recurrent policy (``policy.carry_size`` is its memory's width H, else None) steps its memory too:

    carry = policy.initial_carry(B)                                          # float32[B, H] zeros: a game's start
    action, logits, value, carry = policy.act(obs, mask, carry=carry)         # one step; feed the carry back
    action, logits, value, carry = policy.act(obs, mask, carry=carry, reset=game_over)   # bool[B]: zeros first

Exports age. ``jax.export`` promises that an artefact runs on a jaxlib up to 6 months newer and up to 3 weeks
older than the one that wrote it (https://docs.jax.dev/en/latest/export/export.html#compatibility-guarantees).
Loading checks, in one line each:

- the artefact's own numbers, which jax exposes: a file this jax cannot deserialize (jax >= 0.11.1 itself refuses
  artefacts past its window), or whose calling convention version is outside this jax's
  ``jax.export.minimum/maximum_supported_calling_convention_version``, is an ``ExportedPolicyError``;
- the jaxlib version ``spec.json`` records (the artefact carries no date, and jaxlib no build date): a running
  jaxlib older than it, or two or more minor versions newer (JAX makes a minor release about every 3 months, so
  about 6 months), is an ``ExportedPolicyVersionWarning`` (``warnings.simplefilter("error",
  ExportedPolicyVersionWarning)`` makes it an error).

Both name the command that re-exports the policy for the running jax.
"""

from __future__ import annotations

import json
import re
import warnings
from importlib import metadata
from pathlib import Path

import jax
import numpy as np

SPEC_FILE = "spec.json"
FORMAT = "jaxgame-exported-policy"
FORMAT_VERSION = 1
#: a recurrent policy's directory (``act`` takes and returns its carry): a loader older than these refuses it
RECURRENT_FORMAT_VERSION = 2
#: a running jaxlib this many minor versions newer than the writer is past jax.export's 6 months of backward
#: compatibility (a minor release about every 3 months); a new major version counts as past it
MINOR_VERSIONS_PER_WINDOW = 2


class ExportedPolicyError(ValueError):
    """An export directory that cannot be loaded, or input the policy cannot take."""


class ExportedPolicyVersionWarning(UserWarning):
    """The running jaxlib is outside ``jax.export``'s compatibility window of the jaxlib that wrote the export."""


def _release(version) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a version string such as ``0.10.2`` or ``0.4.31.dev20240701``; None if unparsable."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    return None if match is None else (int(match[1]), int(match[2]), int(match[3] or 0))


def running_jaxlib() -> str:
    """The running jaxlib's version (jax's where jaxlib is not an installed distribution)."""
    try:
        return metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return jax.__version__


def reexport_command(spec: dict) -> str:
    """The ``experiments.export`` command (in a jaxgame install or checkout) that writes this policy again with the
    running jax, into a new directory: shipped versions are never overwritten."""
    source = spec.get("source") or {}
    run = str(source.get("run") or spec.get("name"))
    policy = run if run.startswith("baseline:") or source.get("step") is None else f"{run}:{source['step']}"
    seat = f" --seat {source['seat']}" if source.get("seat") is not None else ""
    platforms = ",".join(spec.get("platforms") or ["cpu"])
    return f"python -m experiments.export {policy}{seat} --platforms {platforms} --out NEW_DIR"


def version_window(written_by, running) -> str | None:
    """Why jaxlib ``running`` is outside jax.export's window for an export written by jaxlib ``written_by``, or None
    when it is inside or either version is unknown: older than the writer (only 3 weeks of forward compatibility
    are promised, and a release's date is not known here), or ``MINOR_VERSIONS_PER_WINDOW`` or more minor versions
    newer (about 6 months: the backward window)."""
    old, new = _release(written_by), _release(running)
    if old is None or new is None:
        return None
    if new < old:
        return (
            f"jaxlib {running} is older than jaxlib {written_by}, which wrote it (jax.export promises 3 weeks of "
            "forward compatibility)"
        )
    if new[0] > old[0] or new[1] - old[1] >= MINOR_VERSIONS_PER_WINDOW:
        return (
            f"jaxlib {running} is {MINOR_VERSIONS_PER_WINDOW} or more minor versions newer than jaxlib "
            f"{written_by}, which wrote it (jax.export promises 6 months of backward compatibility, about "
            f"{MINOR_VERSIONS_PER_WINDOW} minor releases)"
        )
    return None


def _check_calling_convention(path, exported, again: str) -> None:
    """``ExportedPolicyError`` when ``exported``'s calling convention version is one this jax cannot call."""
    low = getattr(jax.export, "minimum_supported_calling_convention_version", None)
    high = getattr(jax.export, "maximum_supported_calling_convention_version", None)
    version = exported.calling_convention_version
    if low is not None and high is not None and not low <= version <= high:
        raise ExportedPolicyError(
            f"{path}: calling convention version {version}, outside {low}..{high} that jax "
            f"{jax.__version__} supports: {again}"
        )


class ExportedPolicy:
    """A serialized ``act(obs, mask[, key]) -> (action, logits, value)`` and its spec (``self.spec``)."""

    def __init__(self, directory):
        directory = Path(directory)
        try:
            spec = json.loads((directory / SPEC_FILE).read_text())
        except (OSError, ValueError) as err:
            raise ExportedPolicyError(f"{directory}: no readable {SPEC_FILE} ({err})") from None
        versions = (FORMAT_VERSION, RECURRENT_FORMAT_VERSION)
        if spec.get("format") != FORMAT or spec.get("format_version") not in versions:
            raise ExportedPolicyError(
                f"{directory}: not a {FORMAT} v{FORMAT_VERSION} or v{RECURRENT_FORMAT_VERSION} directory "
                f"(format {spec.get('format')!r} v{spec.get('format_version')!r})"
            )
        recurrent = spec.get("recurrent")
        if (spec["format_version"] == RECURRENT_FORMAT_VERSION) != isinstance(recurrent, dict):
            raise ExportedPolicyError(
                f"{directory}: format v{spec['format_version']} with recurrent={recurrent!r} "
                f"(v{RECURRENT_FORMAT_VERSION} and a recurrent policy's carry size go together)"
            )
        self.spec = spec
        #: H, the width of a recurrent policy's memory (``act``'s carry float32[B, H]); None for a feed-forward one
        self.carry_size = None if recurrent is None else int(recurrent["carry_size"])
        self.obs_shape = tuple(spec["obs_shape"])
        self.obs_dtype = np.dtype(spec["obs_dtype"])
        self.num_actions = int(spec["num_actions"])
        # exports written before layout versions existed (the shipped baselines' among them) read layout 1, the
        # layout every one of them was trained on (jaxgame.layout)
        self.layout_version = int(spec.get("layout_version", 1))
        self._functions = {}
        written_by = (spec.get("versions") or {}).get("jaxlib") or (spec.get("versions") or {}).get("jax")
        again = f"re-export it for this jax: {reexport_command(spec)}"
        for variant in ("greedy", "sample"):
            path = directory / spec["files"][variant]
            try:
                self._functions[variant] = jax.export.deserialize(bytearray(path.read_bytes()))
            except Exception as err:  # truncated, foreign or expired: one line, never a silent wrong policy
                reason = " ".join(f"{type(err).__name__}: {err}".split())
                raise ExportedPolicyError(
                    f"{path}: cannot deserialize ({reason}); written by jaxlib "
                    f"{written_by or '?'}, running {running_jaxlib()}: {again}"
                ) from None
            _check_calling_convention(path, self._functions[variant], again)
        outside = version_window(written_by, running_jaxlib())
        if outside:
            warnings.warn(f"{directory}: {outside}; {again}", ExportedPolicyVersionWarning, stacklevel=2)

    def exported(self, variant: str = "greedy"):
        """The deserialized ``jax.export.Exported`` of ``variant`` (``"greedy"``: ``(obs, mask)``; ``"sample"``: ``(obs,
        mask, key uint32[2])``; a recurrent policy's take ``carry, reset`` after ``mask`` and return the carry last),
        unchecked: ``act`` checks its inputs; its ``call`` may be traced inside ``jax.jit``."""
        return self._functions[variant]

    def initial_carry(self, batch: int) -> np.ndarray:
        """float32[batch, H] zeros: a recurrent policy's memory before a game's first step."""
        if self.carry_size is None:
            raise ExportedPolicyError(f"{self.spec.get('name')} is feed-forward: it has no carry")
        return np.zeros((int(batch), self.carry_size), np.float32)

    def act(self, obs, mask, key=None, layout_version=None, carry=None, reset=None):
        """(action int32[B], logits float32[B, A], value float32[B]); greedy without ``key``, else sampled with
        ``key`` (an int seed or a jax PRNG key, typed or legacy). ``layout_version``: the observation layout the
        caller's game writes (``jaxgame.layout.LAYOUT_VERSIONS``); another than the policy's is refused.

        A recurrent policy takes its ``carry`` float32[B, H] (``initial_carry`` at a game's start) and ``reset``
        bool[B] (default none: where True, the carry restarts from zeros before this step) and returns the next
        carry as a fourth output; a feed-forward one takes neither."""
        if layout_version is not None and int(layout_version) != self.layout_version:
            raise ExportedPolicyError(
                f"observation layout version {layout_version} given; {self.spec.get('name')} "
                f"reads layout version {self.layout_version}"
            )
        obs, mask = np.asarray(obs), np.asarray(mask)
        if obs.ndim != 1 + len(self.obs_shape) or obs.shape[1:] != self.obs_shape or obs.dtype != self.obs_dtype:
            raise ExportedPolicyError(
                f"obs must be {self.obs_dtype}[B, {', '.join(map(str, self.obs_shape))}], "
                f"got {obs.dtype}{list(obs.shape)}"
            )
        if mask.shape != (obs.shape[0], self.num_actions) or mask.dtype != np.bool_:
            raise ExportedPolicyError(
                f"mask must be bool[{obs.shape[0]}, {self.num_actions}], got {mask.dtype}{list(mask.shape)}"
            )
        memory = self._memory(obs.shape[0], carry, reset)
        if key is None:
            return self._functions["greedy"].call(obs, mask, *memory)
        if isinstance(key, (int, np.integer)):
            key = jax.random.key(int(key))
        if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        key = np.asarray(key, np.uint32)
        if key.shape != (2,):
            raise ExportedPolicyError(f"key must be an int seed or a threefry PRNG key, got shape {key.shape}")
        return self._functions["sample"].call(obs, mask, *memory, key)

    def _memory(self, batch: int, carry, reset) -> tuple:
        """``act``'s ``(carry, reset)`` checked for a recurrent policy (reset defaults to none), () for a
        feed-forward one (which takes neither)."""
        if self.carry_size is None:
            if carry is not None or reset is not None:
                raise ExportedPolicyError(f"{self.spec.get('name')} is feed-forward: it takes no carry or reset")
            return ()
        if carry is None:
            raise ExportedPolicyError(
                f"{self.spec.get('name')} is recurrent: give its carry float32[{batch}, {self.carry_size}] "
                "(initial_carry(B) at a game's start, then the carry act returned)"
            )
        carry = np.asarray(carry)
        if carry.shape != (batch, self.carry_size) or carry.dtype != np.float32:
            raise ExportedPolicyError(
                f"carry must be float32[{batch}, {self.carry_size}], got {carry.dtype}{list(carry.shape)}"
            )
        reset = np.zeros(batch, np.bool_) if reset is None else np.asarray(reset)
        if reset.shape != (batch,) or reset.dtype != np.bool_:
            raise ExportedPolicyError(f"reset must be bool[{batch}], got {reset.dtype}{list(reset.shape)}")
        return carry, reset
