"""The entity network (agents.core.entity_network, ``network="entity"``): its unit features against the game state,
its action layout, permutation equivariance over the shop and the bench, a run that trains it, and the configs it
refuses."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.config import TrainConfig
from agents.core import networks
from agents.core.entity_network import NUM_ENTITIES, entitywise, unit_features
from agents.core.layers import MLP, activation_fn, dense
from jaxgame import bots
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame.observation import OBS_LAYOUT, UNIT_FEATURES


@pytest.fixture(scope="module")
def played():
    """A few games of greedy bots, 40 steps in: (states, observations float32[4, 8, OBS_SIZE])."""
    game = jaxgame.make("autochess", max_rounds=6, steps_per_round=8, max_combat_ticks=100)
    venv = jaxgame.VecEnv(game, 4)
    states, ts = jax.vmap(game.reset)(jax.random.split(jax.random.key(0), 4))
    step = jax.jit(venv.step)
    for t in range(40):
        keys = jax.random.split(jax.random.key(t), 4)
        states, ts = step(states, jax.vmap(bots.greedy_policy)(keys, states, ts.action_mask))
    return states, np.asarray(ts.observation)


def test_unit_features_name_each_slots_species_and_its_owned_and_drawable_copies(played):
    states, obs = played
    features = np.asarray(unit_features(jnp.asarray(obs)))
    assert features.shape == (4, 8, NUM_ENTITIES, UNIT_FEATURES + sp.NUM_SPECIES + 2)
    species = np.concatenate([np.asarray(states.players.shop), np.asarray(states.players.species)], axis=-1)
    assert (species >= 0).any() and (species < 0).any()
    owned, pool = (obs[..., slice(*OBS_LAYOUT[name])] for name in ("owned", "pool"))
    for g, seat, slot in np.ndindex(species.shape):
        s = species[g, seat, slot]
        one_hot = features[g, seat, slot, UNIT_FEATURES : UNIT_FEATURES + sp.NUM_SPECIES]
        if s < 0:
            assert not one_hot.any() and not features[g, seat, slot, -2:].any()
        else:
            assert one_hot.argmax() == s and one_hot.sum() == 1
            assert features[g, seat, slot, -2] == owned[g, seat, s] and features[g, seat, slot, -1] == pool[g, seat, s]


class ReferenceEntityActorCritic(nn.Module):
    """The entity network as the module docstring states it, written plainly: each head's hidden layer a dense
    layer of the unit concatenated with the context, one layer per head, one logit per unit from a dense layer.
    The same parameter names and shapes as ``EntityActorCritic``'s."""

    hidden: tuple = (32, 32)
    width: int = 64

    @nn.compact
    def __call__(self, obs):
        act = activation_fn("tanh")
        slot = self.param("slot_embedding", nn.initializers.normal(0.1), (NUM_ENTITIES, self.width))
        units = act(dense(self.width, 1.0, "unit_in")(unit_features(obs)) + slot)
        units = act(dense(self.width, 1.0, "unit_out")(units))
        shop, bench, board = jnp.split(units, [C.SHOP_SIZE, C.SHOP_SIZE + C.BENCH_SIZE], axis=-2)
        own = [obs[..., slice(*OBS_LAYOUT[name])] for name in ("self", "synergies", "pool", "owned", "opponents")]
        summary = jnp.concatenate(own + [shop.mean(-2), bench.mean(-2), board.mean(-2)], axis=-1)
        context = MLP(self.hidden, "tanh", name="context")(summary)
        value = dense(1, 1.0, "value_head")(MLP(self.hidden, "tanh", name="critic_torso")(summary))[..., 0]

        def with_context(x, layer):
            joined = jnp.concatenate(
                [x, jnp.broadcast_to(context[..., None, :], (*x.shape[:-1], context.shape[-1]))], axis=-1
            )
            return layer(joined)

        sell_layer, sell_score = dense(self.width, 1.0, "sell_head_hidden"), dense(1, 0.01, "sell_head")
        sell = [sell_score(act(with_context(x, sell_layer)))[..., 0] for x in (bench, board)]
        buy = dense(1, 0.01, "buy_head")(act(with_context(shop, dense(self.width, 1.0, "buy_head_hidden"))))[..., 0]
        recall = dense(1, 0.01, "recall_head")(act(with_context(board, dense(self.width, 1.0, "recall_head_hidden"))))
        recall = recall[..., 0]
        query = with_context(bench, dense(self.width, 0.1, "place_query"))
        key = with_context(board, dense(self.width, 0.1, "place_key"))
        place = jnp.einsum("...bw,...cw->...bc", query, key) / jnp.sqrt(float(self.width))
        place = place + dense(1, 0.01, "place_cell")(key)[..., 0][..., None, :]
        globals_ = dense(4, 0.01, "global_head")(context)
        logits = jnp.concatenate(
            [globals_[..., :1], buy, globals_[..., 1:], *sell, place.reshape(*place.shape[:-2], -1), recall], axis=-1
        )
        return logits, value


def test_the_entity_network_equals_its_plain_reference_with_the_same_parameters(played):
    _, obs = played
    obs = jnp.asarray(obs.reshape(-1, obs.shape[-1]))
    network = networks.actor_critic("entity", C.NUM_ACTIONS, (32, 32))
    params = network.init(jax.random.key(5), obs[:1])
    reference = ReferenceEntityActorCritic()
    reference_params = reference.init(jax.random.key(5), obs[:1])
    # the same tree and the same initial values (so checkpoints of either load in the other)
    assert jax.tree_util.tree_structure(params) == jax.tree_util.tree_structure(reference_params)
    jax.tree_util.tree_map(np.testing.assert_array_equal, params, reference_params)
    params = jax.tree_util.tree_map(lambda p: p + 0.05 * jax.random.normal(jax.random.key(6), p.shape), params)
    logits, value = network.apply(params, obs)
    expected_logits, expected_value = reference.apply(params, obs)
    assert float(jnp.abs(expected_logits).std()) > 0.01  # not a comparison of near-constants
    np.testing.assert_allclose(logits, expected_logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(value, expected_value, rtol=1e-4, atol=1e-5)


def test_entitywise_applies_a_layer_to_every_entity_as_rows():
    class Rows(nn.Module):
        @nn.compact
        def __call__(self, x):
            return entitywise(dense(8, 1.0, "layer"), x)

    x = jax.random.normal(jax.random.key(3), (3, 5, 7, 40))
    params = jax.tree_util.tree_map(lambda p: p + 0.1, Rows().init(jax.random.key(4), x))
    out = Rows().apply(params, x)
    assert out.shape == (3, 5, 7, 8)
    np.testing.assert_allclose(out, dense(8, 1.0).apply({"params": params["params"]["layer"]}, x), rtol=1e-5, atol=1e-5)


def _network_and_params(obs):
    network = networks.actor_critic("entity", C.NUM_ACTIONS, (32, 32))
    params = network.init(jax.random.key(1), jnp.asarray(obs[:1, 0]))
    # the slot embeddings tell slots apart; zeroed, the network treats every shop (and bench) slot alike
    flat = jax.tree_util.tree_map(lambda x: x, params)
    flat["params"]["slot_embedding"] = jnp.zeros_like(flat["params"]["slot_embedding"])
    return network, params, flat


def _permuted(obs, block, first, count, order):
    """obs with the unit records ``first .. first + count`` of ``block`` in ``order``."""
    start = OBS_LAYOUT[block][0] + first * UNIT_FEATURES
    records = obs[..., start : start + count * UNIT_FEATURES].reshape(*obs.shape[:-1], count, UNIT_FEATURES)
    out = obs.copy()
    out[..., start : start + count * UNIT_FEATURES] = records[..., order, :].reshape(*obs.shape[:-1], -1)
    return out


def test_the_logits_follow_the_action_layout_and_permuting_the_shop_or_bench_permutes_their_actions(played):
    _, obs = played
    obs = obs.reshape(-1, obs.shape[-1])
    network, params, same_slots = _network_and_params(obs[:, None])
    logits, value = network.apply(params, obs)
    assert logits.shape == (obs.shape[0], C.NUM_ACTIONS) and value.shape == (obs.shape[0],)
    assert np.isfinite(np.asarray(logits)).all() and np.isfinite(np.asarray(value)).all()

    base, _ = network.apply(same_slots, obs)
    base = np.asarray(base)
    shop_order = np.array([3, 0, 5, 1, 4, 2])
    shopped, _ = network.apply(same_slots, _permuted(obs, "shop", 0, C.SHOP_SIZE, shop_order))
    shopped = np.asarray(shopped)
    buy = slice(C.ACTION_BUY, C.ACTION_BUY + C.SHOP_SIZE)
    np.testing.assert_allclose(shopped[:, buy], base[:, buy][:, shop_order], atol=1e-5)
    others = np.r_[0 : C.ACTION_BUY, C.ACTION_BUY + C.SHOP_SIZE : C.NUM_ACTIONS]
    np.testing.assert_allclose(shopped[:, others], base[:, others], atol=1e-5)

    bench_order = np.array([7, 6, 5, 4, 3, 2, 1, 0])
    benched, _ = network.apply(same_slots, _permuted(obs, "slots", 0, C.BENCH_SIZE, bench_order))
    benched = np.asarray(benched)
    sell = base[:, C.ACTION_SELL : C.ACTION_SELL + C.BENCH_SIZE]
    np.testing.assert_allclose(
        benched[:, C.ACTION_SELL : C.ACTION_SELL + C.BENCH_SIZE], sell[:, bench_order], atol=1e-5
    )
    place = base[:, C.ACTION_PLACE : C.ACTION_RECALL].reshape(-1, C.BENCH_SIZE, C.BOARD_CELLS)
    np.testing.assert_allclose(
        benched[:, C.ACTION_PLACE : C.ACTION_RECALL].reshape(place.shape), place[:, bench_order], atol=1e-5
    )
    np.testing.assert_allclose(benched[:, C.ACTION_RECALL :], base[:, C.ACTION_RECALL :], atol=1e-5)


def test_a_dataset_run_trains_the_entity_network(tmp_path):
    from agents.policies.load import load_policy
    from agents.run.training import train
    from tests.test_bc_dataset import config_for, write_random_dataset

    write_random_dataset(tmp_path / "data", seed=0)
    summary = train(config_for(tmp_path / "data", network="entity"), tmp_path / "run")
    assert summary["updates"] == 20
    policy = load_policy(tmp_path / "run")
    assert policy.config.net.network == "entity" and "slot_embedding" in policy.params["params"]


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(network="entity", obs="oracle"), "reads the game's vector observation"),
        (dict(network="entity", env="gymnax:CartPole-v1"), "reads the game's vector observation"),
        (dict(network="entity", obs="pixels"), "for obs='pixels'"),
    ],
)
def test_the_entity_network_is_refused_off_the_games_vector_observation(fields, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_fields(**fields)
