"""Core learning blocks: masked distributions, semi-MDP GAE, PPO/A2C losses, networks."""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from agents.core import distributions as D
from agents.core import gae as G
from agents.core import losses as L
from agents.core import networks as N
from jaxgame import packing
from tests.reference_gae import gae_reference, split_rollouts_reference

_ppo = jax.jit(L.ppo_loss, static_argnames=("clip_value", "normalize_advantages"))


def _np_log_softmax_legal(logits, mask):
    z = np.where(mask, logits, -np.inf).astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _random_mask(rng, shape):
    mask = rng.random(shape) < 0.5
    rows = np.arange(int(np.prod(shape[:-1])))
    flat = mask.reshape(-1, shape[-1])
    flat[rows, rng.integers(0, shape[-1], size=len(rows))] = True
    return flat.reshape(shape)


# ------------------------------------------------------------ distributions


def test_sampling_is_legal_and_matches_masked_softmax():
    rng = np.random.default_rng(0)
    rows, actions, draws = 6, 7, 20000
    logits = rng.normal(size=(rows, actions)).astype(np.float32) * 1.5
    mask = _random_mask(rng, (rows, actions))
    logits[~mask] += 5.0  # illegal actions look attractive; they must still never be drawn
    samples = np.asarray(
        D.sample(jax.random.PRNGKey(1), jnp.broadcast_to(logits, (draws, rows, actions)), jnp.asarray(mask))
    )
    assert samples.dtype == np.int32 and samples.shape == (draws, rows)
    assert mask[np.arange(rows)[None, :], samples].all()
    freq = np.stack([np.bincount(samples[:, r], minlength=actions) / draws for r in range(rows)])
    expected = np.exp(_np_log_softmax_legal(logits, mask))
    assert np.abs(freq - expected).max() < 0.015


def test_row_without_legal_action_falls_back_to_action_zero():
    logits = jnp.array([[3.0, 1.0, 2.0]])
    mask = jnp.zeros((1, 3), bool)
    assert int(D.sample(jax.random.PRNGKey(0), logits, mask)[0]) == 0
    assert int(D.greedy(logits, mask)[0]) == 0
    assert float(D.log_prob(logits, mask, jnp.array([0]))[0]) == pytest.approx(0.0, abs=1e-6)
    assert float(D.entropy(logits, mask)[0]) == pytest.approx(0.0, abs=1e-6)


def test_entropy_is_over_legal_actions_only():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(4, 5, 9)).astype(np.float32) * 2
    mask = _random_mask(rng, (4, 5, 9))
    logp = _np_log_softmax_legal(logits, mask)
    expected = -(np.exp(logp) * np.where(mask, logp, 0.0)).sum(-1)
    np.testing.assert_allclose(np.asarray(D.entropy(logits, mask)), expected, rtol=1e-5, atol=1e-6)
    grad = jax.grad(lambda x: D.entropy(x, mask).sum())(jnp.asarray(logits))
    assert np.isfinite(np.asarray(grad)).all()
    assert (np.asarray(grad)[~mask] == 0).all()


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_uniform_logits_entropy_is_log_k(k):
    mask = jnp.arange(12) < k
    assert float(D.entropy(jnp.full((12,), 0.7), mask)) == pytest.approx(np.log(k), abs=1e-5)


def test_log_prob_and_greedy():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(64, 10)).astype(np.float32)
    mask = _random_mask(rng, (64, 10))
    logits[~mask] += 10.0
    logp = _np_log_softmax_legal(logits, mask)
    acts = rng.integers(0, 10, size=64)
    got = np.asarray(D.log_prob(logits, mask, acts))
    legal = mask[np.arange(64), acts]
    np.testing.assert_allclose(got[legal], logp[np.arange(64), acts][legal], rtol=1e-5, atol=1e-6)
    assert (got[~legal] < -1e8).all()
    assert np.isfinite(got).all()
    greedy = np.asarray(D.greedy(logits, mask))
    np.testing.assert_array_equal(greedy, np.where(mask, logits, -np.inf).argmax(-1))
    masked = np.asarray(D.mask_logits(logits, mask))
    assert (masked[~mask] == D.MASKED_LOGIT).all() and (masked[mask] == logits[mask]).all()


# ------------------------------------------------------------------- GAE


def _random_rollout(seed, T=40, N=3, P=4):
    """Multi-seat rollout: game ends (all seats terminal, then a new game), eliminations
    (terminal, then non-decision zero-reward steps until the game ends), random non-decision steps."""
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(T, N, P)).astype(np.float32)
    value = rng.normal(size=(T, N, P)).astype(np.float32)
    decision = rng.random((T, N, P)) < 0.6
    terminal = np.zeros((T, N, P), bool)
    game_end = rng.random((T, N)) < 0.08
    for n in range(N):
        for p in range(P):
            dead = False
            for t in range(T):
                if dead:
                    decision[t, n, p] = False
                    reward[t, n, p] = 0.0
                    terminal[t, n, p] = rng.random() < 0.5
                elif rng.random() < 0.05:
                    terminal[t, n, p] = dead = True
                if game_end[t, n]:
                    terminal[t, n, p] = True
                    dead = False
    last_value = rng.normal(size=(N, P)).astype(np.float32)
    return reward, value, terminal, decision, last_value


@pytest.mark.parametrize("gamma, lam", [(0.99, 0.95), (0.9, 0.0), (0.97, 1.0), (1.0, 1.0), (0.5, 0.7)])
@pytest.mark.parametrize("seed", [0, 1])
def test_gae_matches_reference(seed, gamma, lam):
    reward, value, terminal, decision, last_value = _random_rollout(seed)
    assert terminal.any() and (~decision & ~terminal & (reward != 0)).any()
    adv, tgt = G.gae(reward, value, terminal, decision, last_value, gamma, lam)
    ref_adv, ref_tgt = gae_reference(reward, value, terminal, decision, last_value, gamma, lam)
    assert adv.shape == tgt.shape == (40, 3, 4) and adv.dtype == tgt.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(adv), ref_adv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tgt), ref_tgt, rtol=1e-4, atol=1e-4)
    assert (np.asarray(adv)[~decision] == 0).all() and (np.asarray(tgt)[~decision] == 0).all()


@pytest.mark.parametrize("gae_fn", [G.gae, gae_reference], ids=["scan", "reference"])
def test_gae_hand_computed(gae_fn):
    reward = np.array([1.0, 2.0, 4.0])
    value = np.array([0.5, 10.0, 3.0])
    decision = np.array([True, False, True])
    gamma = lam = 0.5
    # t=2: 4 + .5*8 - 3 = 5.  t=0: 1 + .5*2 + .25*3 - .5 = 2.25, plus .25*.5*5 = 2.875.
    adv, tgt = gae_fn(reward, value, np.zeros(3, bool), decision, np.float32(8.0), gamma, lam)
    np.testing.assert_allclose(np.asarray(adv), [2.875, 0.0, 5.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(tgt), [3.375, 0.0, 8.0], atol=1e-6)
    # A terminal at the non-decision step 1 cuts t=0 off from step 2: 1 + .5*2 - .5.
    adv, tgt = gae_fn(reward, value, np.array([False, True, False]), decision, np.float32(8.0), gamma, lam)
    np.testing.assert_allclose(np.asarray(adv), [1.5, 0.0, 5.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(tgt), [2.0, 0.0, 8.0], atol=1e-6)


def test_gae_nothing_leaks_back_across_a_terminal():
    reward, value, terminal, decision, last_value = _random_rollout(5)
    first = np.where(terminal.any(0), terminal.argmax(0), 10**6)
    after = np.arange(40)[:, None, None] > first[None]
    assert after.any() and (~after & decision).any()
    adv, _ = G.gae(reward, value, terminal, decision, last_value, 0.99, 0.95)
    rng = np.random.default_rng(6)
    value2 = np.where(after, value + rng.normal(size=value.shape) * 5, value)
    reward2 = np.where(after, reward + rng.normal(size=value.shape) * 5, reward)
    last2 = np.where(first < 10**6, last_value + 7.0, last_value)
    adv2, _ = G.gae(reward2, value2, terminal, decision, last2, 0.99, 0.95)
    np.testing.assert_array_equal(np.asarray(adv)[~after], np.asarray(adv2)[~after])
    assert not np.allclose(np.asarray(adv)[after], np.asarray(adv2)[after])


def test_gae_jit_and_vmapped_gamma():
    reward, value, terminal, decision, last_value = _random_rollout(7)
    gammas = jnp.array([0.9, 0.99])
    vm = jax.jit(jax.vmap(G.gae, in_axes=(None, None, None, None, None, 0, None)))
    adv, tgt = vm(reward, value, terminal, decision, last_value, gammas, 0.8)
    for i, g in enumerate([0.9, 0.99]):
        a, t = jax.jit(G.gae)(reward, value, terminal, decision, last_value, g, 0.8)
        np.testing.assert_allclose(np.asarray(adv[i]), np.asarray(a), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(tgt[i]), np.asarray(t), rtol=1e-6, atol=1e-6)
    assert not np.allclose(np.asarray(adv[0]), np.asarray(adv[1]))


class TestGaeVariants(chex.TestCase):
    """``gae`` with and without ``jax.jit`` (chex's variants: one test each) gives the reference's advantages and
    targets, float32[T, N, P]."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_gae_matches_the_reference(self):
        reward, value, terminal, decision, last_value = _random_rollout(3)
        adv, tgt = self.variant(G.gae)(reward, value, terminal, decision, last_value, 0.99, 0.95)
        chex.assert_shape([adv, tgt], (40, 3, 4))
        chex.assert_type([adv, tgt], jnp.float32)
        reference = gae_reference(reward, value, terminal, decision, last_value, 0.99, 0.95)
        chex.assert_trees_all_close((adv, tgt), reference, rtol=1e-4, atol=1e-4)


def _game_like_sequence(seed, T, N=8, P=8):
    """Two rollouts' worth [2T, N, P] of a game's shape: decisions in bursts (a shop phase), then steps where
    the seat waits (turn ended) with the fight's reward at the round's end, knock-outs (terminal, then
    waiting with no reward), game ends (every seat terminal), seats that wait for a whole rollout."""
    rng = np.random.default_rng(seed)
    horizon = 2 * T
    reward = np.zeros((horizon, N, P), np.float32)
    value = rng.normal(size=(horizon, N, P)).astype(np.float32)
    decision = np.zeros((horizon, N, P), bool)
    terminal = np.zeros((horizon, N, P), bool)
    for n in range(N):
        round_len = int(rng.integers(3, 8))
        offset = int(rng.integers(0, round_len))
        for p in range(P):
            acts = int(rng.integers(0, round_len))  # decisions at the start of each round, then waiting
            sleepy = rng.random() < 0.2  # acts in the first round only, then waits
            dead = False
            for t in range(horizon):
                phase = (t + offset) % round_len
                fight = phase == round_len - 1
                if not dead:
                    decision[t, n, p] = phase < acts and not (sleepy and t >= round_len)
                    reward[t, n, p] = rng.normal() if fight else 0.0
                    if fight and rng.random() < 0.08:  # knocked out: its placement reward, then it waits
                        terminal[t, n, p] = dead = True
                if fight and rng.random() < 0.04 or t == horizon // 2 - 1 and n == 0:  # the game ends
                    terminal[t, n, p] = True
                    dead = False
    terminal |= np.broadcast_to(terminal.all(axis=2, keepdims=True), terminal.shape)
    return reward, value, terminal, decision


def _transitions(reward, value, terminal, decision):
    from agents.core.rollout import Transition

    t = np.arange(reward.shape[0], dtype=np.float32)[:, None, None, None]
    obs = np.broadcast_to(t, reward.shape + (1,)).copy()  # obs = the step's time index: where a sample came from
    return Transition(
        obs=jnp.asarray(obs),
        mask=jnp.ones(reward.shape + (2,), bool),
        action=jnp.zeros(reward.shape, jnp.int32),
        log_prob=jnp.asarray(-value),
        value=jnp.asarray(value),
        reward=jnp.asarray(reward),
        terminal=jnp.asarray(terminal),
        weight=jnp.asarray(decision, jnp.float32),
    )


@pytest.mark.parametrize("gamma, lam", [(0.9, 0.0), (0.95, 0.9), (1.0, 1.0)])
def test_two_rollouts_train_every_decision_once_with_the_joined_rollouts_gae(gamma, lam):
    """``agents.algorithms.ppo.targets_with_pending`` over two consecutive rollouts, the first's open decisions carried
    into the second, against the plain-Python definition over the joined sequence
    (``split_rollouts_reference``): every decision is trained by the rollout that shows how it continues,
    exactly once, with the joined sequence's rewards and bootstrap; the carried ones on row 0 of the second."""
    from agents.algorithms.ppo import targets_with_pending
    from agents.core.rollout import Pending

    T = 12
    reward, value, terminal, decision = _game_like_sequence(3, T)
    rng = np.random.default_rng(4)
    end_value = rng.normal(size=reward.shape[1:]).astype(np.float32)
    end_decision = rng.random(reward.shape[1:]) < 0.5
    traj = _transitions(reward, value, terminal, decision)
    first = jax.tree_util.tree_map(lambda x: x[:T], traj)
    second = jax.tree_util.tree_map(lambda x: x[T:], traj)
    step = jax.jit(targets_with_pending)
    empty = Pending.empty(first.obs[0], first.mask[0])
    traj_a, adv_a, tgt_a, pending_a = step(first, empty, value[T], decision[T], gamma, lam)
    traj_b, adv_b, tgt_b, pending_b = step(second, pending_a, end_value, end_decision, gamma, lam)
    weight_a, weight_b = np.asarray(traj_a.weight), np.asarray(traj_b.weight)
    obs_b = np.asarray(traj_b.obs)[..., 0]

    discount = gamma * (1.0 - terminal.astype(np.float64))
    seen = {"carried and trained": 0, "carried open": 0, "open at the end": 0, "terminal at the cut": 0}
    for n, p in np.ndindex(*reward.shape[1:]):
        col = (slice(None), n, p)
        rollout, ref = split_rollouts_reference(
            reward[col],
            value[col],
            discount[col],
            decision[col],
            T,
            float(end_value[n, p]),
            bool(end_decision[n, p]),
            lam,
        )
        seen["terminal at the cut"] += bool(terminal[T - 1, n, p] and decision[:T, n, p].any())
        trained_a = [t for t in range(T) if weight_a[t, n, p]]
        assert trained_a == [t for t in range(T) if rollout[t] == 0], (n, p)
        np.testing.assert_allclose(np.asarray(adv_a)[trained_a, n, p], ref[trained_a], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            np.asarray(tgt_a)[trained_a, n, p], ref[trained_a] + value[trained_a, n, p], rtol=1e-4, atol=1e-4
        )
        carried = [t for t in range(T) if rollout[t] in (1, -1)]  # at most one: the seat's last decision
        assert len(carried) <= 1 and bool(pending_a.active[n, p]) == bool(carried)
        for t in carried:
            assert obs_b[0, n, p] == t  # back on row 0 of the second rollout
            assert weight_b[0, n, p] == (rollout[t] == 1)
            if rollout[t] == 1:
                seen["carried and trained"] += 1
                np.testing.assert_allclose(float(adv_b[0, n, p]), ref[t], rtol=1e-4, atol=1e-4)
            else:
                seen["carried open"] += 1
        trained_b = [t for t in range(T, 2 * T) if rollout[t] == 1]
        assert [T + i for i in range(T) if weight_b[i, n, p] and obs_b[i, n, p] >= T] == trained_b, (n, p)
        np.testing.assert_allclose(
            np.asarray(adv_b)[[t - T for t in trained_b], n, p], ref[trained_b], rtol=1e-4, atol=1e-4
        )
        still_open = [t for t in range(2 * T) if rollout[t] == -1]
        assert len(still_open) <= 1 and bool(pending_b.active[n, p]) == bool(still_open)
        if still_open:
            t = still_open[0]
            seen["open at the end"] += 1
            assert np.asarray(pending_b.obs)[n, p, 0] == t
            # its rewards so far and their discount, from the definition
            ret, disc = 0.0, 1.0
            for k in range(t, 2 * T):
                ret += disc * reward[k, n, p]
                disc *= discount[k, n, p]
            np.testing.assert_allclose(float(pending_b.ret[n, p]), ret, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(float(pending_b.discount[n, p]), disc, rtol=1e-5)
    assert all(seen.values()), seen  # the sequence exercised every edge


# ---------------------------------------------------------------- losses


def _ppo_batch():
    logits = np.array([[0.2, 1.0, -0.5], [1.5, 0.0, 0.3], [0.0, 0.0, 2.0], [-1.0, 0.5, 0.5]], np.float32)
    mask = np.array([[1, 1, 1], [1, 0, 1], [0, 1, 1], [1, 1, 0]], bool)
    actions = np.array([1, 2, 2, 0], np.int32)
    new_lp = _np_log_softmax_legal(logits, mask)[np.arange(4), actions]
    ratio = np.array([1.5, 0.7, 1.0, 1.1])
    return {
        "new_logits": logits,
        "new_value": np.array([1.0, 2.0, 3.0, 4.0], np.float32),
        "mask": mask,
        "actions": actions,
        "old_log_prob": (new_lp - np.log(ratio)).astype(np.float32),
        "old_value": np.array([0.8, 2.5, 3.5, 3.0], np.float32),
        "advantages": np.array([2.0, -1.0, 0.5, -3.0], np.float32),
        "targets": np.array([1.5, 2.0, 2.0, 6.0], np.float32),
        "weight": np.ones(4, np.float32),
    }, ratio


def _entropy_np(logits, mask):
    logp = _np_log_softmax_legal(logits, mask)
    return -(np.exp(logp) * np.where(mask, logp, 0.0)).sum(-1)


@pytest.mark.parametrize("clip_value, value_loss", [(False, 0.65625), (True, 1.23375)])
def test_ppo_loss_hand_computed(clip_value, value_loss):
    batch, ratio = _ppo_batch()
    total, m = _ppo(
        **batch, clip_eps=0.2, vf_coef=0.5, ent_coef=0.01, clip_value=clip_value, normalize_advantages=False
    )
    # per sample -min(r A, clip(r) A): 1.5*2 clipped to 1.2*2; 0.7*-1 clipped to 0.8*-1; -0.5; 1.1*-3 unclipped.
    assert float(m["policy_loss"]) == pytest.approx((-2.4 + 0.8 - 0.5 + 3.3) / 4, abs=1e-5)
    assert float(m["value_loss"]) == pytest.approx(value_loss, abs=1e-5)
    ent = _entropy_np(batch["new_logits"], batch["mask"]).mean()
    assert float(m["entropy"]) == pytest.approx(ent, abs=1e-5)
    assert float(m["clip_frac"]) == pytest.approx(0.5)
    assert float(m["approx_kl"]) == pytest.approx(np.mean(ratio - 1 - np.log(ratio)), abs=1e-5)
    assert float(total) == pytest.approx(0.3 + 0.5 * value_loss - 0.01 * ent, abs=1e-5)
    assert set(m) == {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac"}
    assert all(v.shape == () and v.dtype == jnp.float32 for v in m.values())


def _with_junk(batch):
    """Append two weight-0 samples holding junk (including values that would be inf/NaN if used)."""
    junk = {
        "new_logits": np.array([[50.0, -3.0, 7.0], [0.0, 1.0, 2.0]], np.float32),
        "new_value": np.array([1e6, -4.0], np.float32),
        "mask": np.array([[1, 0, 0], [0, 1, 0]], bool),
        "actions": np.array([0, 0], np.int32),
        "old_log_prob": np.array([-1e9, 30.0], np.float32),
        "old_value": np.array([np.nan, 1e7], np.float32),
        "advantages": np.array([np.nan, 1e8], np.float32),
        "targets": np.array([np.inf, -1e6], np.float32),
        "weight": np.zeros(2, np.float32),
    }
    return {k: np.concatenate([v, junk[k]]) for k, v in batch.items()}


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("clip_value", [False, True])
def test_ppo_weight_zero_samples_have_no_effect(normalize, clip_value):
    batch, _ = _ppo_batch()
    kw = {
        "clip_eps": 0.2,
        "vf_coef": 0.5,
        "ent_coef": 0.01,
        "clip_value": clip_value,
        "normalize_advantages": normalize,
    }
    total, m = _ppo(**batch, **kw)
    big = _with_junk(batch)
    total2, m2 = _ppo(**big, **kw)
    assert float(total2) == pytest.approx(float(total), abs=1e-6)
    for k in m:
        assert float(m2[k]) == pytest.approx(float(m[k]), abs=1e-6), k

    def f(logits, value):
        return L.ppo_loss(**{**big, "new_logits": logits, "new_value": value}, **kw)[0]

    g_logits, g_value = jax.jit(jax.grad(f, argnums=(0, 1)))(
        jnp.asarray(big["new_logits"]), jnp.asarray(big["new_value"])
    )
    assert np.isfinite(np.asarray(g_logits)).all() and np.isfinite(np.asarray(g_value)).all()
    assert (np.asarray(g_logits)[4:] == 0).all() and (np.asarray(g_value)[4:] == 0).all()
    assert np.abs(np.asarray(g_logits)[:4]).sum() > 0


def test_ppo_advantage_normalisation_uses_decision_samples_only():
    batch, ratio = _ppo_batch()
    batch["weight"] = np.array([1, 1, 1, 0], np.float32)
    batch["advantages"][3] = 1000.0
    kw = {"clip_eps": 0.2, "vf_coef": 0.0, "ent_coef": 0.0, "clip_value": False}
    _, m = _ppo(**batch, **kw, normalize_advantages=True)
    adv = np.array([2.0, -1.0, 0.5])
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    r = ratio[:3]
    expected = np.mean(-np.minimum(r * adv, np.clip(r, 0.8, 1.2) * adv))
    assert float(m["policy_loss"]) == pytest.approx(expected, abs=1e-5)
    _, m_raw = _ppo(**batch, **kw, normalize_advantages=False)
    assert float(m_raw["policy_loss"]) != pytest.approx(expected, abs=1e-3)


def test_ppo_coefficients_can_be_traced():
    batch, _ = _ppo_batch()

    def f(eps, vf, ent):
        total, _ = L.ppo_loss(
            **batch, clip_eps=eps, vf_coef=vf, ent_coef=ent, clip_value=True, normalize_advantages=True
        )
        return total

    eps = jnp.array([0.1, 0.2])
    got = jax.jit(jax.vmap(f, in_axes=(0, None, None)))(eps, 0.5, 0.01)
    for i in range(2):
        assert float(got[i]) == pytest.approx(float(f(float(eps[i]), 0.5, 0.01)), abs=1e-6)


def test_a2c_loss_values_and_semi_gradient():
    rng = np.random.default_rng(11)
    B, A, Dm = 6, 4, 3
    obs, next_obs = rng.normal(size=(B, Dm)), rng.normal(size=(B, Dm))
    mask = _random_mask(rng, (B, A))
    actions = np.array([np.flatnonzero(m)[0] for m in mask], np.int32)
    reward = rng.normal(size=B)
    weight = np.array([1, 1, 1, 1, 1, 0], np.float32)
    params = {
        "w": jnp.asarray(rng.normal(size=Dm), jnp.float32),
        "pi": jnp.asarray(rng.normal(size=(Dm, A)), jnp.float32),
        "b": jnp.float32(0.3),
    }

    def loss(p):
        value = obs @ p["w"]
        target = reward + 0.9 * (next_obs @ p["w"]) + p["b"]  # TD(0) target from the same params
        logits = obs @ p["pi"]
        return L.a2c_loss(logits, value, mask, actions, target - value, target, weight, 0.5, 0.01)

    (total, m), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    w = np.asarray(params["w"], np.float64)
    v = obs @ w
    t = reward + 0.9 * (next_obs @ w) + 0.3
    logits = obs @ np.asarray(params["pi"], np.float64)
    logp = _np_log_softmax_legal(logits, mask)[np.arange(B), actions]
    keep = weight > 0
    assert float(m["policy_loss"]) == pytest.approx(np.mean(-logp[keep] * (t - v)[keep]), abs=1e-4)
    assert float(m["value_loss"]) == pytest.approx(np.mean(0.5 * (v - t)[keep] ** 2), abs=1e-4)
    assert float(m["entropy"]) == pytest.approx(_entropy_np(logits, mask)[keep].mean(), abs=1e-4)
    assert float(total) == pytest.approx(
        float(m["policy_loss"]) + 0.5 * float(m["value_loss"]) - 0.01 * float(m["entropy"]), abs=1e-5
    )
    assert float(grads["b"]) == 0.0
    semi = 0.5 * ((v - t)[keep, None] * obs[keep]).mean(0)
    np.testing.assert_allclose(np.asarray(grads["w"]), semi, rtol=1e-4, atol=1e-5)

    # normalised advantages, as in ppo_loss: over the weight-1 samples only; the value loss is unchanged
    def normalized(p):
        value, logits = obs @ p["w"], obs @ p["pi"]
        target = reward + 0.9 * (next_obs @ p["w"]) + p["b"]
        return L.a2c_loss(
            logits, value, mask, actions, target - value, target, weight, 0.5, 0.01, normalize_advantages=True
        )

    _, m_norm = jax.jit(normalized)(params)
    adv = (t - v)[keep]
    norm = (adv - adv.mean()) / (adv.std() + 1e-8)
    assert float(m_norm["policy_loss"]) == pytest.approx(np.mean(-logp[keep] * norm), abs=1e-4)
    assert float(m_norm["policy_loss"]) != pytest.approx(float(m["policy_loss"]), abs=1e-3)
    assert float(m_norm["value_loss"]) == pytest.approx(float(m["value_loss"]), abs=1e-6)


def test_weighted_mean_ignores_weight_zero_entries():
    x = np.array([1.0, 3.0, np.nan, np.inf], np.float32)
    w = np.array([1.0, 1.0, 0.0, 0.0], np.float32)
    assert float(L.weighted_mean(x, w)) == pytest.approx(2.0)
    assert float(L.weighted_mean(x, np.zeros(4, np.float32))) == 0.0


def test_explained_variance():
    rng = np.random.default_rng(12)
    t = rng.normal(size=50).astype(np.float32)
    v = (t + 0.3 * rng.normal(size=50)).astype(np.float32)
    w = np.ones(50, np.float32)
    w[40:] = 0.0
    t_junk, v_junk = t.copy(), v.copy()
    t_junk[40:], v_junk[40:] = 1e6, -1e6
    expected = 1 - np.var(t[:40] - v[:40]) / np.var(t[:40])
    assert float(L.explained_variance(v_junk, t_junk, w)) == pytest.approx(expected, abs=1e-5)
    assert float(L.explained_variance(t, t, w)) == pytest.approx(1.0)
    const = L.explained_variance(v, np.full(50, 2.0, np.float32), w)
    assert float(const) == 0.0 and const.dtype == jnp.float32
    assert float(L.explained_variance(v, t, np.zeros(50, np.float32))) == 0.0


# --------------------------------------------------------------- networks


def _init(net, x):
    return jax.jit(net.init)(jax.random.PRNGKey(0), x)["params"]


def test_mlp_shapes_and_orthogonal_init():
    net = N.ActorCritic(num_actions=258)
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(5, 8, 582)), jnp.float32)
    params = _init(net, obs)
    logits, value = jax.jit(net.apply)({"params": params}, obs)
    assert logits.shape == (5, 8, 258) and value.shape == (5, 8)
    assert logits.dtype == value.dtype == jnp.float32
    sv = np.linalg.svd(np.asarray(params["policy_head"]["kernel"]), compute_uv=False)
    np.testing.assert_allclose(sv, 0.01, rtol=1e-3)
    assert np.linalg.norm(np.asarray(params["value_head"]["kernel"])) == pytest.approx(1.0, rel=1e-3)
    sv = np.linalg.svd(np.asarray(params["actor_torso"]["Dense_1"]["kernel"]), compute_uv=False)
    np.testing.assert_allclose(sv, np.sqrt(2), rtol=1e-3)
    assert all(
        (np.asarray(b) == 0).all() for path, b in jax.tree_util.tree_leaves_with_path(params) if path[-1].key == "bias"
    )


def test_shared_and_separate_torsos():
    obs = jnp.ones((3, 10))
    sep = _init(N.ActorCritic(4, hidden=(8, 8)), obs)
    shared = _init(N.ActorCritic(4, hidden=(8, 8), shared_torso=True), obs)
    assert set(sep) == {"actor_torso", "critic_torso", "policy_head", "value_head"}
    assert set(shared) == {"torso", "policy_head", "value_head"}
    assert jax.tree.structure(sep) != jax.tree.structure(shared)

    def value_sum(p, shared_torso):
        return N.ActorCritic(4, hidden=(8, 8), shared_torso=shared_torso).apply({"params": p}, obs)[1].sum()

    grad = jax.jit(jax.grad(value_sum), static_argnums=1)
    g = grad(sep, False)
    assert all((np.asarray(x) == 0).all() for x in jax.tree.leaves(g["actor_torso"]))
    assert any((np.asarray(x) != 0).any() for x in jax.tree.leaves(g["critic_torso"]))
    g = grad(shared, True)
    assert any((np.asarray(x) != 0).any() for x in jax.tree.leaves(g["torso"]))


def test_unpack_frames_matches_host_unpack():
    packed = np.random.default_rng(1).integers(0, 256, size=(3, 72, 20), dtype=np.uint8)
    got = np.asarray(N.unpack_frames(packed))
    assert got.shape == (3, 72, 80) and got.dtype == np.float32
    np.testing.assert_array_equal(got, packing.unpack_np(packed).astype(np.float32) / 3)
    assert got.min() == 0.0 and got.max() == 1.0


@pytest.mark.parametrize("kind", ["cnn", "tiles", "tile_ids"])
def test_pixel_net_shapes_and_batch_independence(kind):
    net = N.actor_critic(kind, 11, hidden=(32,), activation="relu", shared_torso=True)
    assert isinstance(net, N.PixelActorCritic)
    frames = jnp.asarray(np.random.default_rng(2).integers(0, 256, size=(2, 8, 72, 20), dtype=np.uint8))
    params = jax.jit(net.init)(jax.random.PRNGKey(0), frames)
    apply = jax.jit(net.apply)
    logits, value = apply(params, frames)
    assert logits.shape == (2, 8, 11) and value.shape == (2, 8)
    flat_logits, _ = apply(params, frames.reshape(16, 72, 20))
    np.testing.assert_allclose(np.asarray(flat_logits).reshape(2, 8, 11), np.asarray(logits), atol=1e-5)
    one_logits, _ = apply(params, frames[1, 3])
    np.testing.assert_allclose(np.asarray(one_logits), np.asarray(logits[1, 3]), atol=1e-5)
    assert not np.allclose(np.asarray(value[0, 0]), np.asarray(value[1, 3]))


def test_tile_torso_is_an_8x8_stride_8_convolution():
    """The tile embedding (reshape + matmul) equals lax's convolution with its kernel as an 8x8 filter."""
    frames = jnp.asarray(np.random.default_rng(3).random((2, 72, 80)), jnp.float32)
    torso = N.TileTorso(hidden=(16,), features=5)
    params = torso.init(jax.random.PRNGKey(1), frames)
    embed = params["params"]["tile_embed"]
    conv = jax.lax.conv_general_dilated(
        frames[..., None],
        embed["kernel"].reshape(8, 8, 1, 5),
        window_strides=(8, 8),
        padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    tiles = jax.nn.relu(conv + embed["bias"]).reshape(2, -1)
    dense = params["params"]["MLP_0"]["Dense_0"]
    expected = jax.nn.relu(tiles @ dense["kernel"] + dense["bias"])
    np.testing.assert_allclose(np.asarray(torso.apply(params, frames)), np.asarray(expected), rtol=1e-5, atol=1e-5)
    assert conv.shape == (2, 9, 10, 5)


def test_make_network_kinds():
    assert N.actor_critic("tiles", 7, (16,), "relu", True).torso == "tiles"
    assert isinstance(N.actor_critic("mlp", 7, (16,), "relu", True), N.ActorCritic)
    with pytest.raises(ValueError, match="mlp.*cnn.*tiles"):
        N.actor_critic("transformer", 7, (16,), "tanh", False)
    with pytest.raises(ValueError, match="activation"):
        N.actor_critic("mlp", 7, (16,), "gelu", False)


def test_adam_steps_reduce_ppo_loss():
    rng = np.random.default_rng(3)
    B, Dm, A = 32, 6, 5
    net = N.ActorCritic(A, hidden=(16,))
    obs = jnp.asarray(rng.normal(size=(B, Dm)), jnp.float32)
    mask = jnp.asarray(_random_mask(rng, (B, A)))
    params = jax.jit(net.init)(jax.random.PRNGKey(0), obs)
    logits0, value0 = jax.jit(net.apply)(params, obs)
    actions = D.sample(jax.random.PRNGKey(1), logits0, mask)
    batch = {
        "mask": mask,
        "actions": actions,
        "old_log_prob": D.log_prob(logits0, mask, actions),
        "old_value": value0,
        "advantages": jnp.asarray(rng.normal(size=B), jnp.float32),
        "targets": jnp.asarray(rng.normal(size=B), jnp.float32),
        "weight": jnp.asarray(rng.random(B) < 0.8, jnp.float32),
    }

    def loss_fn(p):
        logits, value = net.apply(p, obs)
        return L.ppo_loss(
            logits, value, **batch, clip_eps=0.2, vf_coef=0.5, ent_coef=0.0, clip_value=True, normalize_advantages=True
        )[0]

    opt = optax.adam(1e-2)

    @jax.jit
    def step(carry, _):
        p, s = carry
        loss, g = jax.value_and_grad(loss_fn)(p)
        updates, s = opt.update(g, s, p)
        return (optax.apply_updates(p, updates), s), loss

    _, losses = jax.lax.scan(step, (params, opt.init(params)), None, length=25)
    losses = np.asarray(losses)
    assert np.isfinite(losses).all()
    assert losses[-1] < losses[0] - 0.1


def test_networks_work_under_vmap_of_params():
    net = N.ActorCritic(3, hidden=(4,), activation="relu")
    obs = jnp.ones((2, 5))
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    params = jax.jit(jax.vmap(lambda k: net.init(k, obs)))(keys)
    logits, value = jax.jit(jax.vmap(lambda p: net.apply(p, obs)))(params)
    assert logits.shape == (3, 2, 3) and value.shape == (3, 2)
    assert isinstance(net, nn.Module)
