"""Run-time rule configuration.

``GameConfig`` is a frozen, hashable dataclass: it is a *static* argument of
the jitted game functions (its values become compile-time constants), and it
is validated at construction so that a bad value fails loudly with the field
name and the allowed range instead of producing a silently wrong game.
"""

from __future__ import annotations

import dataclasses

from jaxgame import constants as C

#: The creep boards used by PvE rounds, in order (see ``jaxgame.rounds``).
MAX_PVE_ROUNDS = 6


def check_int(owner: str, name: str, value, low: int, high: int) -> None:
    """Raise ``ValueError`` naming ``owner.name`` and the range unless ``value`` is an int in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{owner}.{name} must be an int in [{low}, {high}], got {value!r}")


def check_float(owner: str, name: str, value, low: float, high: float) -> None:
    """Raise ``ValueError`` naming ``owner.name`` and the range unless ``value`` is a number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{owner}.{name} must be a number in [{low}, {high}], got {value!r}")


#: Allowed ranges of the numeric rule fields (also used by ``agents.config.TrainConfig``).
INT_RULE_RANGES = {
    "steps_per_round": (1, 64),
    "max_rounds": (1, 200),
    "max_combat_ticks": (1, 2000),
    "starting_life": (1, 1000),
    "starting_gold": (0, 1000),
    "starting_level": (1, C.MAX_LEVEL),
}
FLOAT_RULE_RANGES = {"reward_win": (-10.0, 10.0), "reward_life": (-1.0, 1.0)}


@dataclasses.dataclass(frozen=True)
class GameConfig:
    """Rule overrides; every field is validated in ``__post_init__``.

    Attributes:
      steps_per_round: decision steps in each shop phase; the fights run at the
        end of the last one. In [1, 64].
      max_rounds: round cap; at its end the survivors are ranked by life, then level. In [1, 200].
      max_combat_ticks: 100 ms combat ticks before a fight is a draw. In [1, 2000].
      starting_life: life of every player at reset. In [1, 1000].
      starting_gold: gold at reset. In [0, 1000].
      starting_level: level at reset. In [1, 9].
      pve_rounds: strictly increasing round numbers fought against creeps
        (at most 6; the k-th uses creep board k). Each in [1, 200]; rounds
        after max_rounds are never played.
      reward_win: shaping reward for each fight won (PvP or PvE). In [-10, 10].
      reward_life: shaping reward per life point lost (use a negative value to
        penalise). In [-1, 1].
    """

    steps_per_round: int = 12
    max_rounds: int = 40
    max_combat_ticks: int = 400
    starting_life: int = 100
    starting_gold: int = 5
    starting_level: int = 2
    pve_rounds: tuple = (1, 2, 3, 10, 15, 20)
    reward_win: float = 0.0
    reward_life: float = 0.0

    def __post_init__(self):
        for name, (low, high) in INT_RULE_RANGES.items():
            check_int("GameConfig", name, getattr(self, name), low, high)
        for name, (low, high) in FLOAT_RULE_RANGES.items():
            check_float("GameConfig", name, getattr(self, name), low, high)
        rounds = self.pve_rounds
        if not isinstance(rounds, tuple) or len(rounds) > MAX_PVE_ROUNDS:
            raise ValueError(
                f"GameConfig.pve_rounds must be a tuple of at most {MAX_PVE_ROUNDS} round numbers, got {rounds!r}"
            )
        for r in rounds:
            check_int("GameConfig", "pve_rounds[...]", r, 1, 200)
        if any(b <= a for a, b in zip(rounds, rounds[1:])):
            raise ValueError(f"GameConfig.pve_rounds must be strictly increasing, got {rounds!r}")

    @classmethod
    def from_overrides(cls, **overrides) -> "GameConfig":
        """Build a config from keyword overrides, rejecting unknown names."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown rule override(s) {unknown}; known: {sorted(known)}")
        if "pve_rounds" in overrides:
            overrides["pve_rounds"] = tuple(overrides["pve_rounds"])
        return cls(**overrides)
