"""Streaming advantage actor-critic: semi-MDP TD(0) targets, no rollout buffer.

    trainer = make_train(config, env)          # agents.algorithms.registry; config.run.algo == "a2c"
    runner, metrics = jax.jit(trainer)(key)    # the whole run as ONE compiled call
    # or in chunks, with host work in between:
    runner = trainer.init(key)
    run = jax.jit(trainer.run, static_argnums=1)   # the caller jits the chunk
    runner, metrics = run(runner, 10)           # 10 updates; metrics: dict of float32[10]

The interface is ``agents.algorithms.base.Trainer``'s, as for ``agents.algorithms.ppo.PPO``. One update is
``config.a2c.update_every``
env steps of all N envs x P seats inside a ``lax.scan`` (every seat acts with
the same parameters, as in PPO), followed by ONE optimizer step
(``agents.algorithms.base.apply_gradients``: global-norm clip, Adam, the config's
learning-rate schedule). Nothing of shape [update_every, N, ...] is ever
built: each env step's gradient is taken at once by one ``value_and_grad``
over that step's [N, P] samples and summed into a gradient accumulator
carried by the scan, so memory is O(N) whatever ``update_every`` is.

TD target (semi-MDP, the ``lambda = 0`` case of ``agents.core.gae.gae``).
A learner seat's *decision* is a step where it has more than one legal
action (``Transition.weight > 0``); its other steps (turn ended, eliminated,
waiting) are pass-throughs that no gradient is taken on. For a decision
taken in state ``s_t`` whose seat next decides at ``t' = t + k`` (k >= 1)::

    target_t = r_t + gamma r_{t+1} + ... + gamma^{k-1} r_{t'-1} + gamma^k V(s_{t'})
    A_t      = target_t - V(s_t)

where ``r_j`` is the seat's reward of step j (including the rewards that land
on its non-decision steps in between). If the seat's episode ends at a step
``j`` in ``[t, t')`` (``Transition.terminal``, i.e. ``seat_done``: game over,
eliminated, or a gymnax episode that terminated *or was truncated*, exactly as
in PPO) the sum stops at ``r_j`` and there is no bootstrap term; rewards after
that step belong to no decision. For a gymnax env every step is a decision,
so this is plain TD(0): ``target_t = r_t + gamma (1 - done_t) V(s_{t+1})``.

To do this without a buffer, each seat carries one *pending decision*
(``Pending``: its observation, mask, action, the discounted reward
``R = sum_j gamma^{j-t} r_j`` collected since and the discount
``D = gamma^{j+1-t}``, 0 once the seat's episode ended). At env step t:

1. act on ``s_t`` with ``agents.core.rollout.act_and_step`` (rewards ``r_t``,
   terminals, next observation ``s_{t+1}``);
2. a decision at ``s_t`` opens a new pending decision with ``R = r_t``,
   ``D = gamma (1 - terminal_t)``; a non-decision step adds ``D r_t`` to the
   open one and multiplies ``D`` by ``gamma (1 - terminal_t)``;
3. the pending decision is *completed* at this step if ``s_{t+1}`` is a
   decision state of the seat or ``D == 0`` (its episode ended; the target
   is then final): ``target = R + D V(s_{t+1})`` with ``V(s_{t+1})`` computed
   under ``stop_gradient`` with the update's (current) parameters, and the
   gradient of ``losses.a2c_loss`` on the completed samples is taken right
   away (``V(s_t)`` in the advantage and the log-probability are recomputed
   with the current parameters in that forward pass; see "Gradient of an
   update" below).

A slow target critic (``config.a2c.target_tau < 1``): ``V(s_{t'})`` of the targets is computed with target
parameters (``TargetCriticRunner.target_params``), which start as the initial parameters and move
``target_tau`` of the way to the learned ones after each update (Polyak averaging), so the targets drift slower
than the critic they train. With ``target_tau = 1`` (the default) the runner and the program are the plain ones.

n-step targets (``config.a2c.n_step`` = n > 1, ``n_step_step``): a decision's target is fixed at the seat's n-th
next decision state instead of its first, summing the rewards up to there and bootstrapping from V there (the
episode's end still stops it without a bootstrap). Each seat holds its decisions in a first-in first-out queue of n
slots (``PendingDecisions``, in ``Runner.pending``) and each step trains at most one per seat, its oldest one with
a final target, so a step's gradient is over [N, P] samples, as TD(0)'s; the decisions an episode's end makes final
together are trained over the next steps. n = 1 is the plain ``Pending`` and program.

Since completion happens as soon as the next decision state is seen, a seat
never has a pending decision when it decides again. A pending decision whose
next decision has not come by the end of an update is carried over in the
runner (``Runner.pending``) and completed in a later update, then with the
later parameters (its action was sampled with the earlier ones: a small
one-update lag, only on the game; on a gymnax env every decision completes in
the step it was taken).

Gradient of an update: the gradient of ``losses.a2c_loss`` over every
decision completed during its ``update_every`` steps, exactly as if they were
one batch (``policy_loss = -log pi(a|s) sg(A)``, ``value_loss = 0.5 (V(s) -
sg(target))^2``, minus ``ent_coef`` x entropy; weighted means over the
completed decisions). With ``normalize_advantages`` (the default, as in PPO)
the advantages are normalised by their mean and std over those decisions.
Those moments are only known at the update's end, but the gradient is linear
in them: each step adds the gradients of three sums over its completed
samples, ``sum A nlp``, ``sum nlp`` and ``sum (vf_coef value_loss - ent_coef
entropy)`` (``nlp = -log pi(a|s)``), and the update combines them as
``((G_A - mean G_1) / (std + eps) + G_rest) / n`` (three gradient trees in
the carry, still O(N) memory). Without it, one gradient of ``sum A nlp +
sum rest`` is carried and divided by ``n``. An update that completes no
decision at all leaves the parameters and the optimizer state untouched.

Why normalise: the TD(0) advantages of the game's placement-only reward are
small (their std, ``loss/advantage_std``, was 0.03-0.07 over the ``a2c_small``
run of docs/log-2026-11.md "Results", seed 0, 2-core CPU), the size of
``ent_coef`` = 0.01; normalised, the policy gradient has
the scale PPO's coefficients assume.

Metrics per update (float32[]): "loss/policy", "loss/value", "loss/entropy",
"loss/explained_variance" (``1 - var(target - V) / var(target)``) and
"loss/advantage_std" (before normalising) over the completed decisions
(sample-weighted, exactly as if all of them were one batch), "loss/grad_norm"
(before clipping), "train/lr", "train/decisions" (learner decisions taken
in the update's env steps, as in PPO) and the ``sums/<name>`` episode sums of
``agents.core.rollout.EPISODE_SUMS`` summed over the steps. PPO's "loss/approx_kl"
and "loss/clip_frac" are not defined for A2C and are omitted (``agents.core.rollout.summarize`` and the plots take any
set
of keys).

Hyperparameters are traced as in PPO (``trainer(key, hparams)``); A2C reads
``lr``, ``gamma``, ``ent_coef``, ``vf_coef`` and ``max_grad_norm``, and the
static ``normalize_advantages``.

Random streams: as in PPO (``agents.algorithms.base.init_runner``): ``fold_in(key, 0)``
initialises the parameters, ``fold_in(key, 1)`` resets the envs,
``fold_in(key, 2)`` is the training stream; update ``u`` uses
``fold_in(train, u)`` split in two like PPO's, the first half split again
into one action-sampling key per env step (so, from the same parameters and
env states, an A2C update with ``update_every = T`` takes exactly the actions
of a PPO rollout with ``num_steps = T``: the first updates of both from one
master key step the envs identically); the second half (PPO's shuffling key)
is unused.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from flax import struct

from agents.algorithms.base import Runner, Trainer, apply_gradients
from agents.config import HParams
from agents.core import losses
from agents.core.rollout import EPISODE_SUMS, Pending, act_and_step, select_seats, track_episodes


def td_step(pending: Pending, transition, next_mask, next_value, gamma):
    """Advance the seats' pending decisions by one env step (steps 2 and 3 of the module docstring).

    Args:
      pending: the open decisions before the step.
      transition: ``agents.core.rollout.Transition`` of the step (arrays [N, P]).
      next_mask: bool[N, P, A], the legal actions in the next state ``s_{t+1}``.
      next_value: float32[N, P], ``V(s_{t+1})`` (no gradient is taken through it).
      gamma: discount (float or traced scalar).

    Returns:
      (samples, target, weight, pending): ``samples`` (a ``Pending``) holds the
      decisions open after the step's rewards, ``target`` float32[N, P] their
      TD targets and ``weight`` float32[N, P] is 1 where one is completed at
      this step (train on it now), else 0; ``pending`` is what stays open.
    """
    gamma = jnp.asarray(gamma, jnp.float32)
    decision = transition.weight > 0
    cont = gamma * (1.0 - transition.terminal.astype(jnp.float32))
    samples = Pending(
        obs=select_seats(decision, transition.obs, pending.obs),
        mask=select_seats(decision, transition.mask, pending.mask),
        action=jnp.where(decision, transition.action, pending.action),
        log_prob=jnp.where(decision, transition.log_prob, pending.log_prob),
        value=jnp.where(decision, transition.value, pending.value),
        ret=jnp.where(decision, transition.reward, pending.ret + pending.discount * transition.reward),
        discount=jnp.where(decision, cont, pending.discount * cont),
        active=decision | pending.active,
    )
    next_decision = jnp.asarray(next_mask).sum(-1) > 1
    complete = samples.active & (next_decision | (samples.discount == 0.0))
    target = samples.ret + samples.discount * jax.lax.stop_gradient(jnp.asarray(next_value, jnp.float32))
    target = jnp.where(complete, target, 0.0)
    return samples, target, complete.astype(jnp.float32), samples.replace(active=samples.active & ~complete)


@struct.dataclass
class PendingDecisions:
    """Each seat's queue of open decisions for ``a2c.n_step`` = n > 1: a ring of n slots per seat, arrays [N, n, P]
    (``obs`` [N, n, P, *obs_shape], ``mask`` bool[N, n, P, A]; the env axis leads, as every runner field's). A slot
    holds a ``Pending``'s fields, ``age`` (int32: the seat's decision states seen since the slot's decision),
    ``ready`` (its target is final: ``target``) and ``active`` (it is in the queue); ``head`` int32[N, P] is the
    slot the seat's next decision opens, ``tail`` int32[N, P] its oldest slot, the next one trained."""

    obs: object
    mask: jax.Array
    action: jax.Array  # int32
    log_prob: jax.Array  # float32
    value: jax.Array  # float32
    ret: jax.Array  # float32: discounted reward since the slot's decision
    discount: jax.Array  # float32: product of the discounts since; 0 once the seat's episode ended
    target: jax.Array  # float32: the TD target, once ready
    age: jax.Array  # int32
    ready: jax.Array  # bool
    active: jax.Array  # bool
    head: jax.Array  # int32[N, P]
    tail: jax.Array  # int32[N, P]

    @classmethod
    def empty(cls, obs, mask, slots: int) -> PendingDecisions:
        """No open decision: ``obs`` leaves [N, P, ...], ``mask`` bool[N, P, A] give the shapes."""

        def ring(x):
            return jnp.zeros((x.shape[0], slots, *x.shape[1:]), x.dtype)

        batch = mask.shape[:-1]
        zeros = jnp.zeros((batch[0], slots, *batch[1:]), jnp.float32)
        return cls(
            obs=jax.tree_util.tree_map(ring, obs),
            mask=ring(mask),
            action=zeros.astype(jnp.int32),
            log_prob=zeros,
            value=zeros,
            ret=zeros,
            discount=zeros,
            target=zeros,
            age=zeros.astype(jnp.int32),
            ready=zeros.astype(bool),
            active=zeros.astype(bool),
            head=jnp.zeros(batch, jnp.int32),
            tail=jnp.zeros(batch, jnp.int32),
        )


def _at_slot(index, slots: int):
    """bool[N, n, P]: True at each seat's slot ``index`` int32[N, P] of its ``slots`` (static) slots."""
    return jnp.arange(slots)[None, :, None] == index[:, None, :]


def _slot_take(x, index):
    """``x`` [N, n, P, ...] at slot ``index`` int32[N, P] -> [N, P, ...]."""
    index = index.reshape(index.shape[0], 1, index.shape[1], *(1,) * (x.ndim - 3))
    return jnp.take_along_axis(x, index, axis=1)[:, 0]


def n_step_step(ring: PendingDecisions, transition, next_mask, next_value, gamma, n_step: int):
    """``td_step`` for ``a2c.n_step`` = n > 1: a decision's target sums the seat's discounted rewards up to its n-th
    next decision state ``s_{t_n}`` and bootstraps from ``V(s_{t_n})``, or stops without a bootstrap where the
    seat's episode ends first::

        target_t = r_t + gamma r_{t+1} + ... + gamma^{t_n - t - 1} r_{t_n - 1} + gamma^{t_n - t} V(s_{t_n})

    (n = 1 is ``td_step``'s TD(0) target). Each seat keeps its decisions in a first-in first-out queue of n slots
    (``PendingDecisions``): a decision's target is fixed when the seat sees its n-th next decision state or its
    episode ends (the slot is then *ready*), and each step trains at most one decision per seat, its oldest ready
    one, so a step's gradient is over [N, P] samples as TD(0)'s is. At an episode's end every open decision of the
    seat becomes ready at once; they are trained over the following steps, oldest first (n slots are enough: a
    seat decides only in a decision state, which also ages its open decisions, and after an episode's end its new
    decisions need n decision states to be ready, by which time the earlier ones have been trained).

    Args:
      ring: the queues before the step ([N, n, P]).
      transition: ``agents.core.rollout.Transition`` of the step (arrays [N, P]).
      next_mask: bool[N, P, A], the legal actions in ``s_{t+1}``.
      next_value: float32[N, P], ``V(s_{t+1})`` (no gradient is taken through it).
      gamma: discount (float or traced scalar).
      n_step: static int, the n.

    Returns:
      (samples, target, weight, ring): ``samples`` (a ``Pending``, [N, P]) each seat's oldest slot after the step,
      ``target`` float32[N, P] its TD target and ``weight`` float32[N, P] 1 where it is trained now (ready), else
      0; ``ring`` the queues after it left them.
    """
    gamma = jnp.asarray(gamma, jnp.float32)
    slots = ring.active.shape[1]
    decision = transition.weight > 0  # [N, P]
    cont = gamma * (1.0 - transition.terminal.astype(jnp.float32))
    # the open slots collect the step's reward (the slot a decision opens at this step starts with it below)
    open_ = ring.active & ~ring.ready
    ret = jnp.where(open_, ring.ret + ring.discount * transition.reward[:, None], ring.ret)
    discount = jnp.where(open_, ring.discount * cont[:, None], ring.discount)
    opening = _at_slot(ring.head, slots) & decision[:, None]  # [N, n, P]

    def put(new, old):  # the step's [N, P] values into the opened slots of [N, n, P]
        return select_seats(opening, jax.tree_util.tree_map(lambda x: jnp.expand_dims(x, 1), new), old)

    ring = ring.replace(
        obs=put(transition.obs, ring.obs),
        mask=put(transition.mask, ring.mask),
        action=put(transition.action, ring.action),
        log_prob=put(transition.log_prob, ring.log_prob),
        value=put(transition.value, ring.value),
        ret=put(transition.reward, ret),
        discount=put(cont, discount),
        age=put(jnp.zeros_like(ring.head), ring.age),
        ready=ring.ready & ~opening,
        active=ring.active | opening,
        head=(ring.head + decision.astype(jnp.int32)) % slots,
    )
    open_ = ring.active & ~ring.ready
    next_decision = jnp.asarray(next_mask).sum(-1) > 1  # [N, P]
    age = ring.age + (open_ & next_decision[:, None]).astype(jnp.int32)
    now_ready = open_ & ((age >= n_step) | (ring.discount == 0.0))
    bootstrap = jax.lax.stop_gradient(jnp.asarray(next_value, jnp.float32))[:, None]
    ring = ring.replace(
        age=age,
        ready=ring.ready | now_ready,
        target=jnp.where(now_ready, ring.ret + ring.discount * bootstrap, ring.target),
    )
    # train each seat's oldest slot if it is ready, and take it out of the queue
    take = functools.partial(_slot_take, index=ring.tail)
    trained = take(ring.active) & take(ring.ready)
    fields = [f.name for f in dataclasses.fields(Pending) if f.name != "active"]
    samples = Pending(**{f: jax.tree_util.tree_map(take, getattr(ring, f)) for f in fields}, active=trained)
    leaving = _at_slot(ring.tail, slots) & trained[:, None]
    ring = ring.replace(active=ring.active & ~leaving, tail=(ring.tail + trained.astype(jnp.int32)) % slots)
    target = jnp.where(trained, take(ring.target), 0.0)
    return samples, target, trained.astype(jnp.float32), ring


# ---- sample-weighted moments, merged step by step (Chan et al.) ----
def _moments(x, weight):
    """(count, mean, M2) of x under ``weight`` (weight-0 entries ignored)."""
    n = jnp.sum(weight)
    mean = losses.weighted_mean(x, weight)
    m2 = losses.weighted_mean(jnp.square(x - mean), weight) * n
    return n, mean, m2


def _merge(a, b):
    na, ma, sa = a
    nb, mb, sb = b
    n = na + nb
    frac = nb / jnp.maximum(n, 1.0)
    delta = mb - ma
    return n, ma + delta * frac, sa + sb + jnp.square(delta) * na * frac


def _explained_variance(target_moments, residual_moments):
    """``1 - var(target - value) / var(target)`` as ``losses.explained_variance``; 0 when var(target) == 0."""
    n = jnp.maximum(target_moments[0], 1.0)
    var_t = target_moments[2] / n
    var_r = residual_moments[2] / n
    safe = jnp.where(var_t > 0, var_t, 1.0)
    return jnp.where(var_t > 0, 1.0 - var_r / safe, 0.0).astype(jnp.float32)


@struct.dataclass
class TargetCriticRunner(Runner):
    """A streaming A2C runner with a slow target critic (``a2c.target_tau < 1``): a ``Runner`` and the parameters
    whose values bootstrap the TD targets, saved and resumed with it. A subclass, so a run without a target keeps
    its checkpoint's layout."""

    target_params: dict


class StreamingA2C(Trainer):
    """``make_train``'s result for ``algo="a2c"`` (an ``agents.algorithms.base.Trainer``)."""

    algo = "a2c"

    def init(self, key, hparams: HParams | None = None) -> Runner:
        runner = super().init(key, hparams)
        if self.config.a2c.n_step > 1:  # static: a ring of open decisions per seat instead of one
            ring = PendingDecisions.empty(runner.obs, runner.mask, self.config.a2c.n_step)
            runner = self.constrain(runner.replace(pending=ring))
        if self.config.a2c.target_tau == 1.0:  # static: no target network, the plain runner
            return runner
        fields = {f.name: getattr(runner, f.name) for f in dataclasses.fields(runner)}
        return self.constrain(TargetCriticRunner(**fields, target_params=runner.params))

    # ---- one update ----
    def update(self, runner: Runner):
        config, hp, network = self.config, runner.hparams, self.network
        params = runner.params
        update_key = jax.random.fold_in(runner.key, runner.update)
        act_key, _ = jax.random.split(update_key)  # PPO's (action, shuffle) split; no shuffling here
        step_keys = jax.random.split(act_key, config.a2c.update_every)

        normalize = config.loss.normalize_advantages
        grad_fn = _gradient_fn(network, hp, normalize)
        tau, n_step = config.a2c.target_tau, config.a2c.n_step
        critic = params if tau == 1.0 else runner.target_params  # whose V(s') bootstraps the targets

        def step(carry, step_key):
            env_state, obs, mask, tracker, pending, grads, stats = carry
            env_state, obs, mask, tracker, pending = self._constrain_envs((env_state, obs, mask, tracker, pending))
            env_state, ts, transition = act_and_step(
                network, params, self.env, step_key, env_state, obs, mask, self.learner
            )
            tracker, sums = track_episodes(tracker, ts, self.learner)
            _, next_value = network.apply(critic, ts.observation)
            if n_step == 1:
                samples, target, weight, pending = td_step(
                    pending, transition, ts.action_mask, jax.lax.stop_gradient(next_value), hp.gamma
                )
            else:
                samples, target, weight, pending = n_step_step(
                    pending, transition, ts.action_mask, jax.lax.stop_gradient(next_value), hp.gamma, n_step
                )
            step_grads, (parts, value, value_sq, ent) = grad_fn(params, samples, target, weight)
            grads = jax.tree_util.tree_map(jnp.add, grads, step_grads)
            stats = _add_step(stats, parts, value_sq, ent, transition.weight.sum(), target, value, weight)
            envs = self._constrain_envs((env_state, ts.observation, ts.action_mask, tracker, pending))
            return (*envs, grads, stats), sums

        zero = jnp.float32(0.0)
        stats = {
            "adv_nlp": zero,
            "nlp": zero,
            "value_loss": zero,
            "entropy": zero,
            "decisions": zero,
            "target": (zero,) * 3,
            "residual": (zero,) * 3,
        }
        grads = jax.tree_util.tree_map(lambda x: jnp.zeros((3, *x.shape) if normalize else x.shape, x.dtype), params)
        carry = (runner.env_state, runner.obs, runner.mask, runner.tracker, runner.pending, grads, stats)
        carry, sums = jax.lax.scan(step, carry, step_keys)
        env_state, obs, mask, tracker, pending, grads, stats = carry

        count, _, adv_m2 = stats["residual"]
        denom = jnp.maximum(count, 1.0)
        grads, policy_loss = _combine_gradients(grads, stats, normalize)
        new_params, new_opt_state, grad_norm, lr = apply_gradients(
            config, hp, params, runner.opt_state, grads, runner.update
        )
        trained = count > 0
        params = _tree_where(trained, new_params, params)
        opt_state = _tree_where(trained, new_opt_state, runner.opt_state)

        metrics = {
            "loss/policy": policy_loss,
            "loss/value": stats["value_loss"] / denom,
            "loss/entropy": stats["entropy"] / denom,
            "loss/grad_norm": grad_norm,
            "loss/explained_variance": _explained_variance(stats["target"], stats["residual"]),
            "loss/advantage_std": jnp.sqrt(adv_m2 / denom),
            "train/lr": lr,
            "train/decisions": stats["decisions"],
            **{f"sums/{k}": sums[k].sum() for k in EPISODE_SUMS},
        }
        runner = runner.replace(
            params=params,
            opt_state=opt_state,
            env_state=env_state,
            obs=obs,
            mask=mask,
            tracker=tracker,
            pending=pending,
            update=runner.update + 1,
        )
        if tau != 1.0:  # Polyak: the target moves tau of the way to the parameters after the update
            target = jax.tree_util.tree_map(lambda t, p: t + tau * (p - t), runner.target_params, params)
            runner = runner.replace(target_params=target)
        return runner, metrics


def _gradient_fn(network, hp, normalize: bool):
    """The gradient of one step's completed samples: ``(params, samples, target, weight) -> (grads, (parts, V,
    value_sq, entropy))``. ``parts`` float32[3]: [sum A nlp, sum nlp, sum (vf_coef value_sq - ent_coef entropy)]
    (``losses.a2c_sums``, A = sg(target - V)). With ``normalize`` the three parts' gradients (a leading axis of 3),
    combined with the update's advantage moments once they are known; else one gradient of the plain sum."""

    def sums_fn(p, samples, target, weight):
        logits, value = network.apply(p, samples.obs)
        sums = losses.a2c_sums(logits, value, samples.mask, samples.action, target - value, target, weight)
        parts = jnp.stack([sums["adv_nlp"], sums["nlp"], hp.vf_coef * sums["value_sq"] - hp.ent_coef * sums["entropy"]])
        return parts, (parts, value, sums["value_sq"], sums["entropy"])

    def total_fn(p, samples, target, weight):
        parts, aux = sums_fn(p, samples, target, weight)
        return parts[0] + parts[2], aux

    return jax.jacrev(sums_fn, has_aux=True) if normalize else jax.grad(total_fn, has_aux=True)


def _add_step(stats: dict, parts, value_sq, entropy, decisions, target, value, weight) -> dict:
    """The update's running sums and moments with one step's added."""
    return {
        "adv_nlp": stats["adv_nlp"] + parts[0],
        "nlp": stats["nlp"] + parts[1],
        "value_loss": stats["value_loss"] + value_sq,
        "entropy": stats["entropy"] + entropy,
        "decisions": stats["decisions"] + decisions,
        "target": _merge(stats["target"], _moments(target, weight)),
        "residual": _merge(stats["residual"], _moments(target - value, weight)),
    }


def _combine_gradients(grads, stats: dict, normalize: bool):
    """``(grads, policy_loss)`` of the update: the summed gradients divided by the completed samples; with
    ``normalize``, the three parts combined with the advantages' mean and std over the update."""
    count, adv_mean, adv_m2 = stats["residual"]
    denom = jnp.maximum(count, 1.0)
    adv_mean = adv_mean * (count > 0)
    if normalize:
        # d/dp of sum w (A - mean)/(std + eps) nlp = (d sum w A nlp - mean d sum w nlp) / (std + eps)
        scale = 1.0 / (jnp.sqrt(adv_m2 / denom) + losses.NORMALIZE_EPS)
        grads = jax.tree_util.tree_map(lambda g: ((g[0] - adv_mean * g[1]) * scale + g[2]) / denom, grads)
        return grads, (stats["adv_nlp"] - adv_mean * stats["nlp"]) * scale / denom
    return jax.tree_util.tree_map(lambda g: g / denom, grads), stats["adv_nlp"] / denom


def _tree_where(cond, new, old):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(cond, a, b), new, old)


__all__ = ["Pending", "PendingDecisions", "StreamingA2C", "TargetCriticRunner", "n_step_step", "td_step"]
