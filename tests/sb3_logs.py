"""A Stable-Baselines3 log writer that keeps every row in memory, for the opt-in SB3 training tests (SB3 is imported
only when one is made: the default suite runs without it), and the check those tests share on what it logged."""

import numpy as np


def log_recorder():
    """A ``KVWriter`` whose ``rows`` list gets each logged dict (pass it as ``Logger(None, [recorder])``)."""
    from stable_baselines3.common.logger import KVWriter

    class Recorder(KVWriter):
        def __init__(self):
            self.rows = []

        def write(self, key_values, key_excluded, step=0):
            self.rows.append(dict(key_values))

    return Recorder()


LOSSES = ("train/value_loss", "train/policy_gradient_loss", "train/entropy_loss", "train/loss")


def assert_losses_moved(model, recorder, updates: int, timesteps: int) -> None:
    """``model`` (trained with ``recorder`` as its logger's writer) made ``updates`` updates in ``timesteps`` steps,
    and each of its losses is finite at every update and not the same at all of them."""
    model.logger.dump(model.num_timesteps)  # the last update's losses
    rows = [r for r in recorder.rows if "train/value_loss" in r]
    assert len(rows) == updates and model.num_timesteps == timesteps
    for name in LOSSES:
        values = [r[name] for r in rows]
        assert np.isfinite(values).all(), (name, values)
        assert len(set(values)) > 1, (name, values)
