"""The numerical core: masked categorical distributions, the actor-critic networks, GAE, the PPO/A2C losses and the
rollout scan."""
