"""A fake ``wandb`` module that records the calls ``agents.run.wandb_log`` makes (the ``fake_wandb`` fixture)."""

import importlib.machinery
import sys
import types

import pytest


class FakeRun:
    def __init__(self, **kwargs):
        self.init, self.metrics, self.logged, self.finished = kwargs, [], [], False

    def define_metric(self, name, **kwargs):
        self.metrics.append((name, kwargs))

    def log(self, values):
        self.logged.append(dict(values))

    def finish(self):
        self.finished = True


@pytest.fixture
def fake_wandb(monkeypatch):
    module = types.ModuleType("wandb")
    module.__spec__ = importlib.machinery.ModuleSpec("wandb", None)
    module.runs = []

    def init(**kwargs):
        module.runs.append(FakeRun(**kwargs))
        return module.runs[-1]

    module.init = init
    monkeypatch.setitem(sys.modules, "wandb", module)
    return module
