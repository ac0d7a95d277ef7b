"""Learning building blocks for jaxgame agents.

Modules (import them directly; nothing heavy is imported here):

- ``agents.distributions``: categorical distributions over masked logits.
- ``agents.networks``: flax actor-critic networks (vector MLP, packed-pixel CNN).
- ``agents.gae``: generalised advantage estimation for multi-seat semi-MDP rollouts.
- ``agents.losses``: PPO and A2C losses, explained variance.
"""
