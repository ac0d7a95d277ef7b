"""JAX's persistent compilation cache, on by default for library users as for the CLIs.

A program compiled once is kept on disk and loaded by the next process that builds the same one: the second run of
a preset, a notebook run again, a Gymnasium env made in a new process start in seconds instead of recompiling.
``agents.train``, ``agents.evaluate`` and the env views (``agents.interop``) call ``use_default_cache()``, which
turns the cache on in ``DEFAULT_CACHE`` unless the program chose already:

- a ``jax_compilation_cache_dir`` the program set itself is kept (so is a CLI's ``--cache-dir``);
- ``JAXGAME_NO_CACHE=1`` in the environment, ``disable()`` or a CLI's ``--no-cache`` leave the cache off.

``DEFAULT_CACHE``: ``$JAXGAME_CACHE_DIR``, else ``$XDG_CACHE_HOME/jaxgame/jax`` (``~/.cache/jaxgame/jax``). Nothing
here imports JAX until the cache is switched on.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_CACHE = os.environ.get("JAXGAME_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "jaxgame", "jax"
)
#: a program compiled in less than this many seconds is not written to the cache
MIN_COMPILE_SECONDS = 1.0

_chosen = False  # enable() or disable() was called: use_default_cache() leaves the setting alone


def enable(cache_dir) -> str:
    """Turn the cache on in ``cache_dir`` (created if missing); returns it as a string."""
    global _chosen
    import jax

    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(cache_dir))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    _chosen = True
    return str(cache_dir)


def disable() -> None:
    """Leave the cache as it is now (off unless the program turned it on) for the rest of the process."""
    global _chosen
    _chosen = True


def use_default_cache() -> str | None:
    """The cache directory in use after turning the default one on where nothing was chosen (module docstring);
    None when the cache is off."""
    import jax

    current = jax.config.jax_compilation_cache_dir
    if _chosen or current or os.environ.get("JAXGAME_NO_CACHE", "") not in ("", "0"):
        return current or None
    try:
        return enable(DEFAULT_CACHE)
    except OSError:  # an unwritable home: run without the cache rather than fail
        disable()
        return None


__all__ = ["DEFAULT_CACHE", "MIN_COMPILE_SECONDS", "disable", "enable", "use_default_cache"]
