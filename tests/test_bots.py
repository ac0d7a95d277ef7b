"""Scripted bots: legal actions only, greedy beats random clearly, and the expert's heuristics each do what
they say on hand-built states."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.arena.bot_games import placement_by_bot, play_games
from jaxgame import actions, bots
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame.state import GameState, Players

SEATS = ("greedy", "random") * 4
EXPERT_SEATS = ("expert", "greedy", "random", "expert", "greedy", "random", "expert", "random")


@pytest.mark.xdist_group("default_step")  # one worker compiles the default env's step (conftest.jit_step)
@pytest.mark.parametrize("seats", [SEATS, EXPERT_SEATS], ids=["greedy_random", "with_expert"])
def test_bots_pick_legal_actions(env, jit_step, seats):
    state, ts = env.reset(jax.random.key(0))
    step = jit_step
    policy = jax.jit(bots.mixed_policy(seats))
    for t in range(30):
        a = np.asarray(policy(jax.random.key(t), state, ts.action_mask))
        mask = np.asarray(ts.action_mask)
        assert mask[np.arange(8), a].all()
        state, ts = step(state, a)


def test_mixed_policy_validates_names():
    import pytest

    with pytest.raises(ValueError, match="need 8 bot names"):
        bots.mixed_policy(("greedy",) * 7)
    with pytest.raises(ValueError, match="need 8 bot names"):
        bots.mixed_policy(("greedy",) * 7 + ("smart",))


@pytest.mark.xdist_group("play_games")  # the quickstart notebook plays the same games
def test_greedy_beats_random():
    env = jaxgame.make("autochess", steps_per_round=6, max_rounds=18)
    ranks, _ = play_games(env, SEATS, num_envs=8, seed=0, progress=False)
    placement = placement_by_bot(ranks, SEATS)
    # 4 greedy vs 4 random: a perfectly dominant greedy places 2.5 on average, an equal one 4.5
    assert placement["greedy"] < 3.5 < placement["random"], placement
    assert np.all(np.sort(ranks, axis=1) == np.arange(1, 9))


def test_random_policy_is_uniform_over_legal_actions():
    mask = np.zeros((8, 258), bool)
    mask[:, [3, 10, 11, 200, 257]] = True
    mask[5] = False
    mask[5, 0] = True  # a seat with one legal action
    keys = jax.random.split(jax.random.key(2), 20000)
    actions = np.asarray(jax.jit(jax.vmap(lambda k: bots.random_policy(k, None, mask)))(keys))  # [20000, 8]
    assert np.all(actions[:, 5] == 0)
    others = np.delete(actions, 5, axis=1).ravel()
    values, counts = np.unique(others, return_counts=True)
    np.testing.assert_array_equal(values, [3, 10, 11, 200, 257])
    np.testing.assert_allclose(counts / others.size, 0.2, atol=0.005)  # 140k draws: sd ~0.001


# ---------------------------------------------------------------------------------------------------------
# expert
# ---------------------------------------------------------------------------------------------------------

S = {name: i for i, name in enumerate(sp.SPECIES_NAMES)}
_legal_masks = jax.jit(jax.vmap(actions.legal_mask))  # Players[8] -> bool[8, NUM_ACTIONS]


def _game_state(players: dict, round_, pool) -> GameState:
    """A GameState from numpy Players fields with a leading seat axis (and, optionally, a batch axis before it)."""
    lead = np.shape(players["gold"])[:-1]
    return GameState(
        players=Players(**{k: jnp.asarray(v) for k, v in players.items()}),
        pool=jnp.asarray(pool, jnp.int32),
        round=jnp.asarray(round_, jnp.int32),
        step_in_round=jnp.zeros(lead, jnp.int32),
        pvp_round=jnp.zeros(lead, jnp.int32),
        seat_order=jnp.broadcast_to(jnp.arange(C.NUM_PLAYERS, dtype=jnp.int32), lead + (C.NUM_PLAYERS,)),
        done=jnp.zeros(lead, bool),
        key=jax.random.split(jax.random.key(0), lead) if lead else jax.random.key(0),
    )


def _seat_state(round_=10, bench=(), board=(), shop=(), pool=None, **fields) -> GameState:
    """All 8 seats alike: ``bench`` a list of (species name, stars) from slot 0, ``board`` a list of (cell,
    species name, stars), ``shop`` species names from slot 0; other Players fields by keyword (gold, level,
    life, streak)."""
    species, stars = np.full(C.NUM_SLOTS, -1), np.zeros(C.NUM_SLOTS, int)
    for slot, (name, star) in enumerate(bench):
        species[slot], stars[slot] = S[name], star
    for cell, name, star in board:
        species[C.BENCH_SIZE + cell], stars[C.BENCH_SIZE + cell] = S[name], star
    shop_ids = np.full(C.SHOP_SIZE, -1)
    shop_ids[: len(shop)] = [S[n] for n in shop]
    seat = dict(
        life=100,
        gold=0,
        level=1,
        xp=0,
        streak=0,
        alive=True,
        rank=0,
        species=species,
        stars=stars,
        shop=shop_ids,
        shop_locked=False,
        turn_ended=False,
        actions_this_turn=0,
        last_opponent=-1,
        last_result=0,
    )
    seat.update(fields)
    dtypes = {"alive": bool, "shop_locked": bool, "turn_ended": bool}
    players = {
        k: np.repeat(np.asarray(v, dtypes.get(k, np.int32))[None], C.NUM_PLAYERS, axis=0) for k, v in seat.items()
    }
    return _game_state(players, round_, sp.SPECIES_POOL_COPIES if pool is None else pool)


def _expert_action(**kwargs) -> int:
    """The expert's action for seat 0 of ``_seat_state(**kwargs)`` (always legal: checked here)."""
    state = _seat_state(**kwargs)
    mask = np.asarray(_legal_masks(state.players))
    action = np.asarray(bots.expert_policy(jax.random.key(0), state, mask))
    assert mask[np.arange(C.NUM_PLAYERS), action].all()
    return int(action[0])


def _random_states(n: int, seed: int) -> GameState:
    """``n`` games of random seats (units, stars, shop, gold, level, life, streak, round, pool; some seats out or
    done with their turn), with no regard for the rules' invariants: the bots must stay legal anyway."""
    rng = np.random.default_rng(seed)
    shape = (n, C.NUM_PLAYERS)
    fill = rng.random(shape + (1,)) * np.where(rng.random(shape + (1,)) < 0.3, 0.0, 1.0)  # some benches empty
    occupied = rng.random(shape + (C.NUM_SLOTS,)) < np.where(
        np.arange(C.NUM_SLOTS) < C.BENCH_SIZE, fill, rng.random(shape + (1,)) * 0.4
    )
    life = rng.integers(-10, 101, shape)
    players = dict(
        life=np.maximum(life, 0),
        gold=rng.integers(0, 120, shape),
        level=rng.integers(1, 10, shape),
        xp=np.zeros(shape, int),
        streak=rng.integers(-8, 9, shape),
        alive=life > 0,
        rank=np.zeros(shape, int),
        species=np.where(occupied, rng.integers(0, sp.NUM_SPECIES, occupied.shape), -1),
        stars=np.where(occupied, rng.integers(1, 4, occupied.shape), 0),
        shop=np.where(
            rng.random(shape + (C.SHOP_SIZE,)) < rng.random(shape + (1,)),
            rng.integers(0, sp.NUM_SPECIES, shape + (C.SHOP_SIZE,)),
            -1,
        ),
        shop_locked=rng.random(shape) < 0.2,
        turn_ended=rng.random(shape) < 0.1,
        actions_this_turn=np.zeros(shape, int),
        last_opponent=np.full(shape, -1),
        last_result=np.zeros(shape, int),
    )
    players = {k: v.astype(bool if v.dtype == bool else np.int32) for k, v in players.items()}
    return _game_state(players, rng.integers(1, 46, n), rng.integers(0, 28, (n, sp.NUM_SPECIES)))


_batched = {name: jax.jit(jax.vmap(policy)) for name, policy in bots.BOTS.items()}


@pytest.fixture(scope="module")
def random_states():
    """(states, masks, keys): 256 random games (``_random_states``), their legal masks and one key each."""
    states = _random_states(256, seed=7)
    masks = jax.jit(jax.vmap(jax.vmap(actions.legal_mask)))(states.players)
    return states, masks, jax.random.split(jax.random.key(1), masks.shape[0])


@pytest.mark.parametrize("name", ["random", "greedy", "expert"])
def test_bots_pick_legal_actions_in_random_states(random_states, name):
    states, masks, keys = random_states
    chosen = np.asarray(_batched[name](keys, states, masks))
    assert np.asarray(masks)[np.arange(chosen.shape[0])[:, None], np.arange(C.NUM_PLAYERS), chosen].all()
    if name == "expert":  # it does use the action table (it never locks; selling has its own test below)
        kinds = set(np.asarray(actions.action_kind(jnp.asarray(chosen))).ravel().tolist())
        assert kinds >= {
            actions.KIND_END,
            actions.KIND_BUY,
            actions.KIND_REROLL,
            actions.KIND_XP,
            actions.KIND_PLACE,
            actions.KIND_RECALL,
        }, kinds


def test_expert_jit_equals_vmap_and_is_deterministic(random_states):
    states, masks, keys = random_states
    batched = np.asarray(_batched["expert"](keys, states, masks))
    for i in range(12):
        state = jax.tree_util.tree_map(lambda x, i=i: x[i], states)
        one = np.asarray(bots.expert_policy(keys[i], state, masks[i]))
        np.testing.assert_array_equal(one, batched[i])
        np.testing.assert_array_equal(one, np.asarray(bots.expert_policy(keys[i], state, masks[i])))  # same key
    state = jax.tree_util.tree_map(lambda x: x[0], states)
    np.testing.assert_array_equal(
        bots.expert_policy(jax.random.PRNGKey(5), state, masks[0]),  # legacy key
        bots.expert_policy(jax.random.key(5), state, masks[0]),
    )
    with pytest.raises(TypeError, match="expert_policy key"):
        bots.expert_policy(jax.random.split(jax.random.key(0), 2), state, masks[0])


@pytest.mark.parametrize("gold, bought", [(9, True), (12, False), (13, True)])
def test_expert_keeps_the_interest_step(gold, bought):
    # on its level curve (round 3: level 3), room on the board: a 3-cost is wanted, but not at the price of
    # an interest step: 12 - 3 = 9 drops below the 10 reached; 9 gold earns no interest anyway
    action = _expert_action(round_=3, level=3, gold=gold, shop=["arcanine"])
    assert action == (C.ACTION_BUY if bought else C.ACTION_END_TURN)


def test_expert_completes_merges_whatever_the_interest():
    board = [(3, "arcanine", 1), (4, "arcanine", 1)]  # level 2: the board is full
    assert _expert_action(round_=3, level=2, gold=21, board=board, shop=["lapras", "arcanine"]) == C.ACTION_BUY + 1
    assert _expert_action(round_=3, level=2, gold=21, board=board, shop=["lapras"]) == C.ACTION_END_TURN


def test_expert_follows_its_level_curve():
    board = [(c, "rattata", 2) for c in range(5)]
    xp, end, roll = C.ACTION_BUY_XP, C.ACTION_END_TURN, C.ACTION_REROLL
    assert bots.expert_target_level(jnp.int32(10)) == 6 and bots.expert_target_level(jnp.int32(9)) == 5
    assert _expert_action(round_=10, level=5, gold=34, board=board) == xp  # behind: 34 - 4 keeps 30
    assert _expert_action(round_=10, level=5, gold=33, board=board) == end  # 33 - 4 would lose an interest step
    assert _expert_action(round_=10, level=5, gold=33, streak=2, board=board) == xp  # a win streak to keep going
    assert _expert_action(round_=9, level=5, gold=34, board=board) == end  # on the curve
    assert _expert_action(round_=10, level=6, gold=60, board=board) == xp  # rich: one level above the curve
    assert _expert_action(round_=10, level=7, gold=60, board=board) == roll  # two above: roll the gold over 50


def test_expert_rolls_down_late_or_when_low():
    board = [(c, "rattata", 2) for c in range(8)]
    roll, end = C.ACTION_REROLL, C.ACTION_END_TURN
    assert _expert_action(round_=25, level=8, gold=35, board=board) == roll  # level 8: down to 30
    assert _expert_action(round_=25, level=8, gold=30, board=board) == end
    assert _expert_action(round_=12, level=6, gold=35, board=board) == end  # level 6: only above 50
    assert _expert_action(round_=12, level=6, gold=35, life=40, board=board) == roll  # low life: down to 20


@pytest.mark.parametrize("name, row", [("onix", 0), ("snorlax", 0), ("lapras", 1), ("abra", 2), ("mewtwo", 2)])
def test_expert_places_tanks_in_front_and_ranged_units_behind(name, row):
    assert sp.SPECIES_RANGE[S[name]] == row + 1
    action = _expert_action(round_=5, level=3, bench=[(name, 1)])
    bench_slot, cell = divmod(action - C.ACTION_PLACE, C.BOARD_CELLS)
    assert C.ACTION_PLACE <= action < C.ACTION_RECALL and bench_slot == 0
    assert cell // C.BOARD_COLS == row and cell % C.BOARD_COLS in (3, 4)  # the right row, a centre column


def test_expert_gives_the_front_row_to_the_tank_and_moves_a_misplaced_unit():
    # two melee units, one front cell left: the more durable one takes it
    board = [(c, "rattata", 2) for c in (0, 1, 2, 4, 5, 6, 7)]
    action = _expert_action(round_=5, level=9, bench=[("machop", 1), ("snorlax", 1)], board=board)
    assert action == C.ACTION_PLACE + 1 * C.BOARD_CELLS + 3
    # a ranged unit in the front row is recalled (to be placed again behind); a melee unit is left there
    assert _expert_action(round_=5, level=2, board=[(3, "abra", 1), (4, "onix", 1)]) == C.ACTION_RECALL + 3
    assert _expert_action(round_=5, level=2, board=[(20, "abra", 1), (4, "onix", 1)]) == C.ACTION_END_TURN


def test_expert_sells_bench_units_that_do_not_fit():
    board = [(3, "snorlax", 2), (4, "tyranitar", 2)]  # level 2: full, and strong
    bench = [("rattata", 1), ("growlithe", 1), ("growlithe", 1)]
    assert _expert_action(round_=12, level=2, board=board, bench=bench) == C.ACTION_SELL + 0  # lone and weak
    assert _expert_action(round_=12, level=2, board=board, bench=bench[1:]) == C.ACTION_END_TURN  # a pair stays


def test_expert_buys_for_synergies():
    # a fire unit on the board: growlithe (fire, normal) activates fire; squirtle (water, fighting) is as
    # strong but completes nothing, so growlithe is bought first, whichever slot it is in
    board = [(3, "charmander", 1)]
    assert _expert_action(round_=4, level=4, gold=2, board=board, shop=["squirtle", "growlithe"]) == C.ACTION_BUY + 1
    assert _expert_action(round_=4, level=4, gold=2, board=board, shop=["growlithe", "squirtle"]) == C.ACTION_BUY
    # with no fire on the board, the slightly stronger squirtle goes first
    board = [(3, "rattata", 1)]
    assert _expert_action(round_=4, level=4, gold=2, board=board, shop=["growlithe", "squirtle"]) == C.ACTION_BUY + 1


def test_expert_saves_on_a_loss_streak():
    kwargs = dict(round_=8, level=5, gold=25, life=70, board=[(3, "rattata", 1)], shop=["machop"])
    assert _expert_action(streak=-2, **kwargs) == C.ACTION_BUY
    assert _expert_action(streak=-3, **kwargs) == C.ACTION_END_TURN  # the loss streak pays: keep the gold
    assert _expert_action(streak=-3, **{**kwargs, "life": 60}) == C.ACTION_BUY  # not with 60 life or less
