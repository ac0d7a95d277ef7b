"""Training environments: the game (and gymnax envs) behind one batched-env protocol (``envs.api``), built by
``envs.make``."""
