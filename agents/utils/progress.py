"""Progress callbacks of long library work (``agents.run.training.train``, ``agents.run.sweep_loop.run_sweep``).

The library prints nothing by itself: it calls a ``Progress``. ``NoProgress`` (the default) ignores everything;
``ConsoleProgress`` writes status lines and a tqdm bar to stderr (what the CLIs pass, and what a notebook
can pass). Write your own to send progress elsewhere (a logger, a notebook widget)::

    class Lines(NoProgress):
        def chunk(self, num_updates, text):
            print(num_updates, text)
"""

from __future__ import annotations

import sys
from typing import Protocol, runtime_checkable

from tqdm import tqdm


@runtime_checkable
class Progress(Protocol):
    def status(self, message: str) -> None:
        """A one-line message (building, compiling, compiled in ..., resuming from ...)."""

    def start(self, total: int, done: int, unit: str = "upd") -> None:
        """The work starts: ``total`` items (``unit``, updates by default) in all, ``done`` of them already."""

    def chunk(self, num_updates: int, text: str) -> None:
        """``num_updates`` more items finished; ``text``: a one-line summary of their metrics (may be empty)."""

    def close(self) -> None:
        """The chunk loop ended."""


class NoProgress:
    """Reports nothing."""

    def status(self, message: str) -> None:
        pass

    def start(self, total: int, done: int, unit: str = "upd") -> None:
        pass

    def chunk(self, num_updates: int, text: str) -> None:
        pass

    def close(self) -> None:
        pass


class ConsoleProgress:
    """Status lines and a tqdm bar (with ``text`` as its postfix) on ``file`` (default stderr)."""

    def __init__(self, file=None):
        self.file = file or sys.stderr
        self.bar = None

    def status(self, message: str) -> None:
        print(message, file=self.file, flush=True)

    def start(self, total: int, done: int, unit: str = "upd") -> None:
        self.bar = tqdm(total=total, initial=done, unit=unit, file=self.file, dynamic_ncols=True)

    def chunk(self, num_updates: int, text: str) -> None:
        self.bar.update(num_updates)
        if text:
            self.bar.set_postfix_str(text)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


__all__ = ["ConsoleProgress", "NoProgress", "Progress"]
