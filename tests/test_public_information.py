"""What is public (docs/observation.md, "What is public"): changing only hidden information, the other seats' shops
with the pool conserved, changes no other seat's observation and no action of a bot that reads public information
only; ``expert`` reads the hidden pool (``bots.READS_HIDDEN``) and ``expert_public`` plays it on the public count."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.arena import tables, tournament
from agents.policies.load import PLAYER_BOTS, TABLE_BOTS, parse_spec
from jaxgame import all_bots, bots, observation, render, units
from jaxgame import constants as C
from jaxgame import species as sp
from tests import tiny_games

pytestmark = pytest.mark.xdist_group("public_information")  # one worker: the cached states and programs

PUBLIC_BOTS = tuple(name for name in all_bots.BOTS if name not in bots.READS_HIDDEN)
S = {name: i for i, name in enumerate(sp.SPECIES_NAMES)}
_SHOP_AND_POOL = np.zeros(observation.OBS_SIZE, bool)  # the blocks a seat's own shop may change in its own vector
for _block in ("shop", "pool"):
    _SHOP_AND_POOL[slice(*observation.OBS_LAYOUT[_block])] = True


@functools.cache
def _programs():
    """Jitted (vector observations, pixel frames, legal masks, {bot: policy}) of the tiny game."""
    env = tiny_games.tiny_env()
    return (
        jax.jit(lambda s: observation.vector_observation(s, env.config)),
        jax.jit(render.render_all),
        jax.jit(env.action_mask),
        {name: jax.jit(policy) for name, policy in all_bots.BOTS.items()},
    )


@functools.cache
def _greedy_game_states(steps: int = 9):
    """The states of one tiny game of 8 greedy bots after each of its first ``steps`` steps (4 rounds and more:
    units bought, merged, sold and placed; shops drawn and partly bought)."""
    env = tiny_games.tiny_env()
    state, ts = env.reset(jax.random.key(42))
    states = []
    for t in range(steps):
        state, ts = env.step(state, bots.greedy_policy(jax.random.key(1000 + t), state, ts.action_mask))
        states.append(state)
    return states


def _owned_copies(state) -> np.ndarray:
    """int[NUM_SPECIES]: the base copies on every seat's bench and board."""
    return np.asarray(units.owned_copies(state.players.species, state.players.stars)).sum(axis=0)


def _shop_copies(shops) -> np.ndarray:
    """int[NUM_SPECIES]: the copies offered in ``shops`` int[..., 6] (-1: an empty slot)."""
    shops = np.asarray(shops).reshape(-1)
    return np.bincount(shops[shops >= 0], minlength=sp.NUM_SPECIES)


def _redraw_shops(state, seats, rng):
    """``state`` with the shops of ``seats`` drawn anew (each slot empty with probability 1/4, else a copy taken
    from the pool, the old copies returned first): only hidden information changes, the pool stays conserved.
    Every redrawn shop differs from the old one."""
    shops, pool = np.asarray(state.players.shop).copy(), np.asarray(state.pool).copy()
    for seat in seats:
        old = shops[seat].copy()
        pool += _shop_copies(old)
        while True:
            new, left = np.full(C.SHOP_SIZE, -1), pool.copy()
            for slot in range(C.SHOP_SIZE):
                if rng.random() >= 0.25:
                    new[slot] = rng.choice(np.flatnonzero(left > 0))
                    left[new[slot]] -= 1
            if not np.array_equal(new, old):
                break
        shops[seat], pool = new, left
    players = state.players.replace(shop=jnp.asarray(shops, jnp.int32))
    return state.replace(players=players, pool=jnp.asarray(pool, jnp.int32))


def _check_conserved(state):
    np.testing.assert_array_equal(
        np.asarray(state.pool) + _shop_copies(state.players.shop) + _owned_copies(state), sp.SPECIES_POOL_COPIES
    )
    assert np.all(np.asarray(state.pool) >= 0)


def _assert_public_unchanged(before, after, changed_seats, key):
    """Every seat outside ``changed_seats`` has the same vector observation, pixel frame, legal actions and
    public bots' actions (same key) in ``before`` and ``after``; a changed seat's vector differs in its shop and
    pool blocks only (its own shop). Returns the expert's actions (int[8], int[8]) on both."""
    vector, pixels, masks, policies = _programs()
    others = np.setdiff1d(np.arange(C.NUM_PLAYERS), changed_seats)
    vec_b, vec_a = np.asarray(vector(before)), np.asarray(vector(after))
    np.testing.assert_array_equal(vec_b[others], vec_a[others])
    for seat in changed_seats:
        np.testing.assert_array_equal(vec_b[seat][~_SHOP_AND_POOL], vec_a[seat][~_SHOP_AND_POOL])
    np.testing.assert_array_equal(np.asarray(pixels(before))[others], np.asarray(pixels(after))[others])
    mask_b, mask_a = masks(before), masks(after)
    np.testing.assert_array_equal(np.asarray(mask_b)[others], np.asarray(mask_a)[others])
    for name in PUBLIC_BOTS:
        np.testing.assert_array_equal(
            np.asarray(policies[name](key, before, mask_b))[others],
            np.asarray(policies[name](key, after, mask_a))[others],
            err_msg=name,
        )
    return (np.asarray(policies["expert"](key, before, mask_b)), np.asarray(policies["expert"](key, after, mask_a)))


def test_the_public_bots_are_named():
    """Every bot is a public one or listed as reading hidden information, and the public count is public."""
    assert set(bots.READS_HIDDEN) == {"expert"}
    assert set(PUBLIC_BOTS) == {"random", "greedy", "expert_public", "search"}  # search: expert_public + boards
    assert "expert_public" not in TABLE_BOTS and set(PLAYER_BOTS) == set(all_bots.BOTS)


@pytest.mark.parametrize("changed_seats", [(3,), (1, 2, 3, 4, 5, 6, 7)], ids=["seat3", "all_but_seat0"])
def test_hidden_information_changes_no_public_observation_or_public_bot(changed_seats):
    rng = np.random.default_rng(len(changed_seats))
    pools_changed = 0
    for t, state in enumerate(_greedy_game_states()):
        changed = _redraw_shops(state, changed_seats, rng)
        _check_conserved(state)
        _check_conserved(changed)
        # the control: hidden information did change
        assert not np.array_equal(
            np.asarray(state.players.shop)[list(changed_seats)], np.asarray(changed.players.shop)[list(changed_seats)]
        )
        pools_changed += not np.array_equal(np.asarray(state.pool), np.asarray(changed.pool))
        _assert_public_unchanged(state, changed, changed_seats, jax.random.key(t))
        # the public count: the observation's pool block and the bot's estimate, unchanged for the other seats
        public = np.asarray(bots.public_pool(state))
        expected = (
            sp.SPECIES_POOL_COPIES
            - _owned_copies(state)
            - np.stack([_shop_copies(shop) for shop in np.asarray(state.players.shop)])
        )
        np.testing.assert_array_equal(public, expected)
        for seat in range(C.NUM_PLAYERS):
            np.testing.assert_array_equal(observation.visible_pool(state, seat), public[seat])
            if seat not in changed_seats:
                np.testing.assert_array_equal(np.asarray(bots.public_pool(changed))[seat], public[seat])
    assert pools_changed >= len(_greedy_game_states()) // 2  # the raw pool changed too, not only the shops


def _pair_state(hidden_copy: bool):
    """A valid state where seat 0 holds one 1-star rattata (bench slot 0), is offered a second (shop slot 0) with 3
    gold, at level 1 with its board full of a 2-star mewtwo, so a rattata adds nothing to its board: it is worth
    buying only as a pair with a third copy to come. 24 rattata copies sit in seats 1-4's shops; the last copy is in
    the pool, or (``hidden_copy``) in seat 5's shop: only the hidden information differs."""
    state, _ = tiny_games.tiny_env().reset(jax.random.key(0))
    n = C.NUM_PLAYERS
    species, stars = np.full((n, C.NUM_SLOTS), -1), np.zeros((n, C.NUM_SLOTS), int)
    species[0, 0], stars[0, 0] = S["rattata"], 1
    best_cell = int(np.argmax(bots._CELL_PREF[S["mewtwo"]]))  # where it stays (no repositioning)
    species[0, C.BENCH_SIZE + best_cell], stars[0, C.BENCH_SIZE + best_cell] = S["mewtwo"], 2
    shops = np.full((n, C.SHOP_SIZE), -1)
    shops[0, 0] = S["rattata"]
    shops[1:5] = S["rattata"]
    if hidden_copy:
        shops[5, 0] = S["rattata"]
    players = state.players.replace(
        species=jnp.asarray(species, jnp.int32),
        stars=jnp.asarray(stars, jnp.int32),
        shop=jnp.asarray(shops, jnp.int32),
        gold=jnp.full(n, 3, jnp.int32),
        level=jnp.ones(n, jnp.int32),
        xp=jnp.zeros(n, jnp.int32),
        turn_ended=jnp.zeros(n, bool),
        shop_locked=jnp.zeros(n, bool),
    )
    owned = np.asarray(units.owned_copies(players.species, players.stars)).sum(axis=0)
    pool = sp.SPECIES_POOL_COPIES - owned - _shop_copies(shops)
    state = state.replace(players=players, pool=jnp.asarray(pool, jnp.int32), round=jnp.asarray(2, jnp.int32))
    _check_conserved(state)
    return state


def test_expert_reads_the_hidden_pool_and_expert_public_does_not():
    """The last rattata in the pool or in another seat's shop: the same public information (every public
    observation and public bot's action equal), but the expert buys the pair only when the copy is in the pool."""
    in_pool, in_shop = _pair_state(hidden_copy=False), _pair_state(hidden_copy=True)
    assert int(in_pool.pool[S["rattata"]]) == 1 and int(in_shop.pool[S["rattata"]]) == 0
    key = jax.random.key(3)
    expert_in_pool, expert_in_shop = _assert_public_unchanged(in_pool, in_shop, (5,), key)
    assert expert_in_pool[0] == C.ACTION_BUY  # a pair, with a third copy left in the raw pool
    assert expert_in_shop[0] == C.ACTION_SELL  # no copy left in the raw pool: the lone rattata is sold
    # expert_public counts 25 copies left (27 less the one owned and the one offered to it) in both states
    assert int(bots.public_pool(in_shop)[0, S["rattata"]]) == 25
    _, _, masks, policies = _programs()
    for state in (in_pool, in_shop):
        assert int(policies["expert_public"](key, state, masks(state))[0]) == C.ACTION_BUY


def test_expert_public_plays_as_expert_where_no_hidden_copy_matters():
    """Same key, same action wherever the raw pool and the public count agree on 'a third copy is left' (here:
    every seat of the greedy game's states whose actions agree, and at least most of them)."""
    _, _, masks, policies = _programs()
    same = total = 0
    for t, state in enumerate(_greedy_game_states()):
        mask, key = masks(state), jax.random.key(t)
        expert = np.asarray(policies["expert"](key, state, mask))
        public = np.asarray(policies["expert_public"](key, state, mask))
        raw, counted = np.asarray(state.pool) >= 1, np.asarray(bots.public_pool(state)) >= 1
        agree = (raw[None, :] == counted).all(axis=1)  # [8]: the pool enters only through 'pool >= 1'
        np.testing.assert_array_equal(expert[agree], public[agree])
        same, total = same + int(agree.sum()), total + C.NUM_PLAYERS
    assert same >= total // 2, (same, total)


def test_expert_public_plays_legal_moves_to_the_end_of_a_game():
    env = tiny_games.tiny_env()
    policy = jax.jit(bots.mixed_policy(("expert_public", "greedy", "expert_public", "random") * 2))
    state, ts = env.reset(jax.random.key(7))
    for t in range(200):
        action = np.asarray(policy(jax.random.key(t), state, ts.action_mask))
        assert np.asarray(ts.action_mask)[np.arange(C.NUM_PLAYERS), action].all(), t
        state, ts = env.step(state, action)
        final = ts.info["final_state"]
        if bool(final.done):
            break
    else:
        pytest.fail("the game did not end within 200 steps")
    np.testing.assert_array_equal(np.sort(np.asarray(final.players.rank)), np.arange(1, C.NUM_PLAYERS + 1))


def test_expert_public_is_a_player_but_not_an_in_run_opponent():
    assert parse_spec("expert_public") == "expert_public"
    assert tables.check_bot_names(("greedy", "expert_public")) == ("greedy", "expert_public")
    index, table_bots = tournament.participant_index([], {"a": "expert_public", "b": "greedy"})
    assert table_bots == ("greedy", "expert_public") and index == {"greedy": 0, "expert_public": 1}
    assert TABLE_BOTS == ("random", "greedy", "expert")  # the in-run evaluation's opponents, unchanged
