"""Algorithms: the trainer protocol (``base``), PPO, streaming A2C, behaviour cloning, distillation, and the registry
``make_train``."""
