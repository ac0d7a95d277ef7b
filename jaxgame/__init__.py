"""jaxgame: an 8-player auto-battler as pure JAX functions.

>>> import jaxgame
>>> env = jaxgame.make("autochess", obs="vector")
"""

from jaxgame.xla_flags import set_default_flags as _set_default_flags

# XLA's concurrency-optimised CPU scheduler can deadlock when whole training
# runs are vmapped; it must be switched off before the backend starts.
_set_default_flags("--xla_cpu_enable_concurrency_optimized_scheduler=false")

from jaxgame import constants  # noqa: E402
from jaxgame.config import GameConfig  # noqa: E402
from jaxgame.env import AutoChessEnv, TimeStep, make  # noqa: E402
from jaxgame.gymnasium_registration import register as _register_gymnasium_env  # noqa: E402
from jaxgame.state import GameState, Players  # noqa: E402
from jaxgame.vec_env import VecEnv  # noqa: E402

_register_gymnasium_env()  # gymnasium.make("jaxgame/AutoChess-v0") after `import jaxgame` alone, where installed

__all__ = ["AutoChessEnv", "GameConfig", "GameState", "Players", "TimeStep", "VecEnv", "constants", "make"]
