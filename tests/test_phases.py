"""Phase transitions (agents.policies.frozen): which saved parameters start a run, and the vector -> oracle widening
that
leaves the policy unchanged."""

import jax
import numpy as np
import pytest

from agents.config import TrainConfig
from agents.core.networks import actor_critic
from agents.policies import frozen as phases
from jaxgame import constants as C
from jaxgame import observation


def test_a_vector_policy_widened_onto_oracle_inputs_plays_as_before():
    """The oracle block's input weights start at 0: on any oracle observation the widened network gives the saved
    network's logits and value on its first OBS_SIZE floats."""
    network = actor_critic("mlp", C.NUM_ACTIONS, (32, 16), "tanh")
    wide = observation.OBS_SIZE + observation.ORACLE_SIZE
    saved = network.init(jax.random.key(0), np.zeros((1, observation.OBS_SIZE), np.float32))
    fresh = network.init(jax.random.key(1), np.zeros((1, wide), np.float32))
    moved = phases.transfer_params(saved, fresh, widen_inputs=True)
    obs = jax.random.normal(jax.random.key(2), (5, wide))
    for got, want in zip(network.apply(moved, obs), network.apply(saved, obs[:, : observation.OBS_SIZE])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    kernels = [x for x in jax.tree_util.tree_leaves(moved) if x.shape[0] == wide]
    assert len(kernels) == 2 and all(not np.asarray(k[observation.OBS_SIZE :]).any() for k in kernels)  # two torsos
    with pytest.raises(phases.PhaseError, match=r"Dense_0/kernel is \[582, 32\] in the saved network"):
        phases.transfer_params(saved, fresh, widen_inputs=False)
    other = actor_critic("mlp", C.NUM_ACTIONS, (32, 8), "tanh").init(jax.random.key(0), np.zeros((1, 582)))
    with pytest.raises(phases.PhaseError, match=r"actor_torso/Dense_1/bias is \[16\] in the saved network, \[8\]"):
        phases.transfer_params(saved, other, widen_inputs=False)


def test_only_a_policy_of_the_same_network_and_game_starts_a_run():
    base = TrainConfig()
    assert phases.check_start(base, base.with_overrides({"lr": 1e-4, "algo": "a2c"}), "p") is False
    assert phases.check_start(base, base.with_overrides({"obs": "oracle"}), "p") is True
    for change, message in [
        (dict(hidden=(64,)), r"hidden \(\(256, 256\) vs \(64,\)\)"),
        (dict(obs="pixels", network="tiles"), "network differs"),
        (dict(shared_torso=True), "shared_torso"),
    ]:
        with pytest.raises(phases.PhaseError, match=message):
            phases.check_start(base, base.with_overrides(change), "p")
    oracle = base.with_overrides({"obs": "oracle"})
    with pytest.raises(phases.PhaseError, match="only a vector policy may start an oracle run"):
        phases.check_start(oracle, base, "p")
    with pytest.raises(ValueError, match="init_from must be"):
        TrainConfig.from_fields(init_from=3)
