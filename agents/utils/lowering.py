"""Check a jitted program for an accelerator without the accelerator: lower it for another platform
(``jax.export`` with ``platforms=("cuda",)``) and look for what would not run there or would stall the device.

    run = jax.jit(trainer.run, static_argnums=1)
    problems = lowering_problems(run, runner_shapes, 1, platform="cuda")   # [] when it is clean

What counts as a problem: the program does not lower for the platform (for example a ``jax.pure_callback`` or
``io_callback``: from a CPU-only JAX they cannot be lowered for CUDA at all), a host callback custom call, an
infeed/outfeed or send/recv (the device waits on the host every step), or float64 values (slow on GPUs, and the
project's programs are float32 by design). The arguments may be ``jax.ShapeDtypeStruct`` trees
(``jax.eval_shape`` of an init), so nothing is allocated: a ``ppo_large`` chunk is checked at its full shapes on a
laptop.
"""

from __future__ import annotations

import re

import jax

_CUSTOM_CALL = re.compile(r"custom_call @([\w.$-]+)")
_HOST_OPS = ("infeed", "outfeed", "send", "recv")
_FLOAT64 = re.compile(r"[<x]f64>")


def lowered_text(fn, *args, platform: str = "cuda") -> str:
    """The StableHLO text of jitted ``fn(*args)`` lowered for ``platform`` (raises what the lowering raises)."""
    return jax.export.export(fn, platforms=(platform,))(*args).mlir_module()


def text_problems(text: str) -> list[str]:
    """What a lowered program's StableHLO ``text`` holds that would not run on, or would stall, a device."""
    problems = [
        f"host callback custom call {name}"
        for name in sorted(set(_CUSTOM_CALL.findall(text)))
        if "callback" in name.lower() or "host" in name.lower()
    ]
    problems += [f"stablehlo.{op}" for op in _HOST_OPS if re.search(rf"stablehlo\.{op}\b", text)]
    if _FLOAT64.search(text):
        problems.append("float64 values")
    return problems


def lowering_problems(fn, *args, platform: str = "cuda") -> list[str]:
    """``text_problems`` of jitted ``fn(*args)`` lowered for ``platform``, or the one-line reason it does not lower."""
    try:
        text = lowered_text(fn, *args, platform=platform)
    except Exception as err:  # noqa: BLE001  (any lowering failure is the finding)
        return [f"does not lower for {platform}: {type(err).__name__}: {str(err).splitlines()[0]}"]
    return text_problems(text)


_NAME = r"(\"[^\"]+\"|[\w.$-]+)"  # a symbol, quoted when it has other characters (@"<lambda>")
_FUNC = re.compile(rf"^\s*func\.func (?:public |private )?@{_NAME}\(")
_OP = re.compile(r"^\s*%[\w#:]+ = ")
_CALL = re.compile(rf"\bcall @{_NAME}\(")


def _functions(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Each ``func.func``'s name -> (first, last) line index of its body, from the printed module's nesting."""
    spans, name, depth, start = {}, None, 0, 0
    for i, line in enumerate(lines):
        found = _FUNC.match(line)
        if found and name is None:
            name, depth, start = found.group(1), 0, i + 1
        if name is not None:
            depth += line.count("{") - line.count("}")
            if depth == 0 and i >= start:
                spans[name], name = (start, i), None
    return spans


def _op_count(lines: list[str], first: int, last: int, spans: dict, memo: dict) -> int:
    """Ops in ``lines[first:last]``: each op with results counts 1, a call counts the ops of its callee."""
    count = 0
    for line in lines[first:last]:
        call = _CALL.search(line)
        if call and call.group(1) in spans:
            callee = call.group(1)
            if callee not in memo:
                memo[callee] = -1  # a recursive call counts once
                memo[callee] = _op_count(lines, *spans[callee], spans, memo)
            count += max(memo[callee], 1)
        elif _OP.match(line):
            count += 1
    return count


def while_body_op_counts(text: str) -> list[int]:
    """The StableHLO ops of every ``stablehlo.while`` body in a lowered program's ``text`` (``lowered_text``), in
    program order, with the bodies of the functions they call counted in (JAX outlines some jitted helpers as
    private functions). A GPU-free proxy of a loop's cost on an accelerator, where each fused kernel of a loop
    body costs its launch latency on every trip."""
    lines = text.splitlines()
    spans, memo, counts = _functions(lines), {}, []
    for i, line in enumerate(lines):
        if "stablehlo.while" not in line:
            continue
        indent = line[: len(line) - len(line.lstrip())]
        body = next(j for j in range(i + 1, len(lines)) if lines[j] == f"{indent}}} do {{")
        end = next(j for j in range(body + 1, len(lines)) if lines[j].startswith(f"{indent}}}"))
        counts.append(_op_count(lines, body + 1, end, spans, memo))
    return counts


__all__ = ["lowered_text", "lowering_problems", "text_problems", "while_body_op_counts"]
