"""A Stable-Baselines3 log writer that keeps every row in memory, for the opt-in SB3 training tests (SB3 is imported
only when one is made: the default suite runs without it)."""


def log_recorder():
    """A ``KVWriter`` whose ``rows`` list gets each logged dict (pass it as ``Logger(None, [recorder])``)."""
    from stable_baselines3.common.logger import KVWriter

    class Recorder(KVWriter):
        def __init__(self):
            self.rows = []

        def write(self, key_values, key_excluded, step=0):
            self.rows.append(dict(key_values))

    return Recorder()
