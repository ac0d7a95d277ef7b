"""One set of jitted functions per env configuration, shared by every instance of it.

``jax.jit`` caches compiled programs per function object, and the views here jit their own bound methods, so each
new instance (every ``gymnasium.make``, each copy in a ``make_vec``, a second SB3 ``VecEnv``) compiled the game's
step again. ``shared_jit(key, build)`` jits the functions ``build()`` returns once per ``key`` (everything that
changes what they trace: the opponents' policies by name and step, the seats, the observation kinds, the rules) and
hands the same jitted functions to every later instance with that key, so only the first one compiles. The functions
of the first instance stay referenced (at most ``MAX_ENTRIES`` configurations, least recently used dropped). The
persistent compilation cache is on by default (``agents.utils.compile_cache``), so a new process compiles nothing
its predecessor compiled.
"""

from __future__ import annotations

import collections
import threading

import jax

from agents.utils import compile_cache

#: configurations kept (each holds its first instance's jitted functions and what they close over)
MAX_ENTRIES = 32

_CACHE: collections.OrderedDict = collections.OrderedDict()
_LOCK = threading.Lock()


def shared_jit(key, build) -> tuple:
    """``tuple(jax.jit(f) for f in build())``, made once per hashable ``key`` and shared after."""
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
        compile_cache.use_default_cache()  # and a new process loads them from disk (agents.utils.compile_cache)
        jitted = tuple(jax.jit(f) for f in build())
        _CACHE[key] = jitted
        while len(_CACHE) > MAX_ENTRIES:
            _CACHE.popitem(last=False)
        return jitted


__all__ = ["MAX_ENTRIES", "shared_jit"]
