"""Signals: how Ctrl-C and SIGTERM stop a run, in one place.

``StopSignals`` (inside a run, ``agents.run.training.train`` and ``agents.run.sweep_loop.run_sweep`` with
``stop_on_signals``): a signal asks the chunk loop to save a checkpoint at the next chunk boundary and stop. ``CtrlC``
(around a whole CLI, ``experiments.common.handles_ctrl_c``): Ctrl-C ends the CLI in one line, but never inside an XLA
compile or a callback that would drop it; a Ctrl-C it holds back is delivered when that returns, to the run's
``StopSignals`` when one is active by then. Host machinery; nothing here imports JAX at import time (the CLIs import
it before JAX, to answer bad input fast).
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

from agents.utils.progress import NoProgress, Progress


class StopSignals:
    """While active (a ``with`` block, in the main thread), Ctrl-C (SIGINT) and SIGTERM ask a run to stop: the
    chunk loop saves a checkpoint at the next chunk boundary and returns. The first signal puts back the
    default action, so a second one ends the process at once. In a multi-process run every process stops at
    the same chunk (``requested`` agrees over the processes; a signal to any of them stops all)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, progress: Progress | None = None):
        self.progress = progress or NoProgress()
        self.received: str | None = None
        self._previous: dict = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        self.received = signal.Signals(signum).name
        for s in self.SIGNALS:
            signal.signal(s, signal.SIG_DFL)
        self.progress.status(
            f"{self.received}: saving a checkpoint at the next chunk boundary, then stopping "
            "(a second signal stops at once, without saving)"
        )

    def requested(self) -> str | None:
        """The signal that asked to stop (here or, in a multi-process run, in any process), or None."""
        import jax  # imported here: the CLIs import this module before JAX (``CtrlC``)
        from jax.experimental import multihost_utils

        if jax.process_count() == 1:
            return self.received
        code = self.SIGNALS.index(signal.Signals[self.received]) + 1 if self.received else 0
        codes = np.asarray(multihost_utils.process_allgather(np.int32(code)))
        return signal.Signals(self.SIGNALS[int(codes.max()) - 1]).name if codes.max() else None


def stop_signals(stop_on_signals: bool, progress: Progress):
    """``StopSignals(progress)`` with ``stop_on_signals``, else a context that gives None. A run enters it before
    it builds anything: a signal while the run is built (its first runner compiled and made, a checkpoint
    restored) is then a stop before the first chunk, never an exception inside a compile."""
    return StopSignals(progress) if stop_on_signals else contextlib.nullcontext()


#: JAX's functions that run XLA's compile (``jax/_src/compiler.py``): a ``KeyboardInterrupt`` raised inside one is
#: dropped by it (the default handler) or leaves the compile running in C++ while Python exits (a crash at exit)
_XLA_COMPILE = frozenset({"backend_compile_and_load", "compile_or_get_cached"})
#: functions whose exceptions Python drops ("Exception ignored in ..."): JAX's garbage-collection callback
#: (``jax/_src/lib``), finalizers
_DROPS_EXCEPTIONS = frozenset({"_xla_gc_callback", "__del__"})
#: modules whose functions run as weak-reference callbacks, whose exceptions Python drops too (a
#: ``WeakKeyDictionary``'s ``remove`` when a key is collected, ``weakref.finalize``)
_CALLBACK_MODULES = ("weakref.py", "_weakrefset.py")


def unsafe_frame(frame) -> str | None:
    """Where a ``KeyboardInterrupt`` raised in ``frame`` (a Python frame, or None) would be lost: ``"compile"``
    (inside JAX's call of XLA's compile), ``"callback"`` (inside a function whose exceptions Python drops), or
    None (it propagates)."""
    while frame is not None:
        code = frame.f_code
        if code.co_name in _XLA_COMPILE and "jax" in code.co_filename:
            return "compile"
        if code.co_name in _DROPS_EXCEPTIONS or Path(code.co_filename).name in _CALLBACK_MODULES:
            return "callback"
        frame = frame.f_back
    return None


class CtrlC:
    """SIGINT in a CLI (``handles_ctrl_c``): the first Ctrl-C raises ``KeyboardInterrupt`` in the main thread (the
    CLI ends in one line, exit 130), but only where it propagates (``unsafe_frame``): during an XLA compile, which
    cannot be stopped, it waits for the compile to return (one line says so), and inside a callback whose
    exceptions Python drops, for the callback to return; a second Ctrl-C ends the process at once (killed by the
    signal). ``unsafe``: the frame test (tests inject one)."""

    POLL_S = 0.05

    def __init__(self, prog: str, unsafe=unsafe_frame):
        self.prog = prog
        self.unsafe = unsafe
        self.pressed = 0
        self.deferred = False  # the next call is the watcher's retry of the first Ctrl-C, not a new Ctrl-C
        self.closed = False  # the CLI has ended (``handles_ctrl_c``): nothing is re-delivered any more

    def __call__(self, signum, frame) -> None:
        retry, self.deferred = self.deferred, False
        if not retry:
            self.pressed += 1
            if self.pressed > 1:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
                return
        where = self.unsafe(frame)
        if where is None:
            raise KeyboardInterrupt
        if where == "compile" and not retry:
            sys.stderr.write(
                f"{self.prog}: interrupted during a compile: stopping when it returns (Ctrl-C again stops at once)\n"
            )
        main = threading.main_thread().ident
        threading.Thread(target=self._retry_when_safe, args=(main,), daemon=True, name="ctrl-c").start()

    def _retry_when_safe(self, main: int) -> None:
        while self.unsafe(sys._current_frames().get(main)):
            time.sleep(self.POLL_S)
        if not self.closed:
            self.deferred = True
            # runs the SIGINT handler in the main thread, at its next Python step: this one, or one a run installed
            # meanwhile (``StopSignals``: then the Ctrl-C stops the run at a chunk boundary)
            _thread.interrupt_main(signal.SIGINT)


__all__ = ["CtrlC", "StopSignals", "stop_signals", "unsafe_frame"]
