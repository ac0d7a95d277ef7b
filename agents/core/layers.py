"""The building blocks every network shares: activations by name, PureJaxRL's initialisation and the MLP torso
(orthogonal kernels, scale sqrt(2) for hidden layers; zero biases)."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import numpy as np

_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}
HIDDEN_SCALE = float(np.sqrt(2.0))


def activation_fn(name: str):
    if name not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


def dense(features: int, scale: float, name: str | None = None) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(scale), bias_init=nn.initializers.zeros, name=name)


class DenseParams(nn.Module):
    """The parameters of ``dense(features, scale)`` over ``in_features`` inputs (``kernel`` float32[in_features,
    features], ``bias`` float32[features], the same names and initialisers), returned instead of applied, so that
    several layers that read the same rows can run as one matrix product."""

    in_features: int
    features: int
    scale: float

    @nn.compact
    def __call__(self) -> tuple[jax.Array, jax.Array]:
        kernel = self.param("kernel", nn.initializers.orthogonal(self.scale), (self.in_features, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        return kernel, bias


class MLP(nn.Module):
    """float32[..., D] -> float32[..., hidden[-1]]: dense layers with the given activation."""

    hidden: Sequence[int] = (256, 256)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = activation_fn(self.activation)
        for features in self.hidden:
            x = act(dense(features, HIDDEN_SCALE)(x))
        return x


__all__ = ["HIDDEN_SCALE", "MLP", "DenseParams", "activation_fn", "dense"]
