"""A seat for a person: one game in which a human plays one seat and the named players (policies, bots) the 7
others, one decision step at a time, through the same legal-action mask the agents use.

    session = PlaySession("greedy", seat=0, seed=0, rules={"max_rounds": 20})   # 1 player for the 7, or 7
    view = session.view()               # the human seat's public view: legal actions with labels, board, shop, ...
    view = session.act(view["legal"][0]["id"])     # ValueError (the state unchanged) for an illegal action
    ...
    if session.done:
        agents.replays.format.write(session.record(), "game.json")   # a replay (docs/replays.md)

Each ``act`` runs one compiled program per step (``step_program``: the others' decisions, computed in a batch
as the evaluation table computes them, then ``env.step`` once); while the human seat has no choice (its turn
ended or it is out of the game: only "end turn" is legal) the session steps on by itself with "end turn", so a
person acts only when there is something to decide.

The game is game 0 of 1 of the table key ``jax.random.key(seed)`` (``agents.arena.tables``: its reset key and
step keys), so a record's actions replay it from ``record.game_reset_key(seed)``. The record names the human seat
``"human"`` (``lineup``, ``players.seats``, ``players.names``); the policies' top actions and values are kept for
their seats, as ``record.record_game`` keeps them.
"""

from __future__ import annotations

import dataclasses
import functools
import threading

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from agents.arena.tables import initial_carries, make_seat_actions, step_keys, table_keys
from agents.arena.tournament import participant_index, resolve_players, table_game
from agents.core import distributions
from agents.policies.load import parse_spec, rule_differences, table_networks
from agents.replays import fights as fights_lib
from agents.replays import record as record_lib
from agents.replays import seat_view
from jaxgame import constants as C
from jaxgame import economy, species
from jaxgame import game as game_lib
from jaxgame import shop as shop_lib
from jaxgame.actions import KIND_NAMES

#: the name of the human seat's player in a record
HUMAN = "human"


class StaleStepError(ValueError):
    """An action sent for a step that is not the current one (a duplicate post, or another tab acted first)."""


def opponent_players(vs) -> list[str]:
    """``vs`` (1 player spec for the 7 other seats or 7; a list or a comma-separated string) as 7 specs;
    ``ValueError`` for another count, ``PolicyError`` (one line, the closest valid names) for an unknown player."""
    names = [str(p).strip() for p in (vs.split(",") if isinstance(vs, str) else vs)]
    if len(names) == 1:
        names = names * (C.NUM_PLAYERS - 1)
    if len(names) != C.NUM_PLAYERS - 1 or not all(names):
        raise ValueError(f"vs must name 1 or {C.NUM_PLAYERS - 1} players, got {len(names)}")
    for name in dict.fromkeys(names):
        parse_spec(name)
    return names


def _slot_name(slot: int) -> str:
    """'bench 3' or 'board r1c4' (row 0 the front) for a unit slot 0..31."""
    if slot < C.BENCH_SIZE:
        return f"bench {slot}"
    row, col = divmod(slot - C.BENCH_SIZE, 8)
    return f"board r{row}c{col}"


def _unit_name(species_id: int, stars: int) -> str:
    return f"{species.SPECIES_NAMES[species_id]} {'*' * max(int(stars), 1)}"


def action_kind(action: int) -> str:
    """The kind of an action id 0..NUM_ACTIONS-1: end, buy, reroll, xp, lock, sell, place or recall."""
    bounds = (
        C.ACTION_BUY,
        C.ACTION_REROLL,
        C.ACTION_BUY_XP,
        C.ACTION_LOCK,
        C.ACTION_SELL,
        C.ACTION_PLACE,
        C.ACTION_RECALL,
    )
    return KIND_NAMES[sum(action >= b for b in bounds)]


def action_label(action: int, unit_species, stars, shop, shop_locked: bool) -> str:
    """A person's label of the action id ``action`` for a seat holding ``unit_species``/``stars`` int[32] (bench
    0..7, board 8..31, species -1 empty), ``shop`` int[6] (-1 empty) and ``shop_locked`` (jaxgame/actions.py)."""
    kind = action_kind(action)
    if kind == "end":
        return "end turn"
    if kind == "buy":
        slot = action - C.ACTION_BUY
        s = int(shop[slot])
        return f"buy {species.SPECIES_NAMES[s]} ({species.SPECIES_COST[s]} gold)" if s >= 0 else f"buy slot {slot}"
    if kind == "reroll":
        return f"reroll ({shop_lib.REROLL_COST} gold)"
    if kind == "xp":
        return f"buy {economy.XP_PER_PURCHASE} XP ({economy.XP_COST_GOLD} gold)"
    if kind == "lock":
        return "unlock shop" if shop_locked else "lock shop"
    if kind == "sell":
        slot = action - C.ACTION_SELL
        if unit_species[slot] < 0:
            return f"sell {_slot_name(slot)} (empty)"
        return f"sell {_unit_name(unit_species[slot], stars[slot])} ({_slot_name(slot)})"
    if kind == "place":
        bench, cell = divmod(action - C.ACTION_PLACE, C.BOARD_CELLS)
        unit = _unit_name(unit_species[bench], stars[bench]) if unit_species[bench] >= 0 else f"bench {bench}"
        target = C.BENCH_SIZE + cell
        swap = f", swap with {_unit_name(unit_species[target], stars[target])}" if unit_species[target] >= 0 else ""
        return f"place {unit} (bench {bench}) on {_slot_name(target)[6:]}{swap}"
    cell = action - C.ACTION_RECALL
    target = C.BENCH_SIZE + cell
    if unit_species[target] < 0:
        return f"recall {_slot_name(target)} (empty)"
    return f"recall {_unit_name(unit_species[target], stars[target])} ({_slot_name(target)}) to the bench"


def why_illegal(action: int, p) -> str:
    """Why the legal-action mask refuses ``action`` for one seat's ``Players`` ``p`` (numpy leaves, no seat axis)."""
    if not p.alive:
        return "your seat is out of the game"
    if p.turn_ended:
        return "your turn has ended this round (only end turn)"
    kind, gold = action_kind(action), int(p.gold)
    if kind == "buy":
        s = int(p.shop[action - C.ACTION_BUY])
        if s < 0:
            return f"shop slot {action - C.ACTION_BUY} is empty"
        if gold < species.SPECIES_COST[s]:
            return f"{species.SPECIES_NAMES[s]} costs {species.SPECIES_COST[s]} gold, you have {gold}"
        return "no room for it on the bench"
    if kind == "reroll":
        return f"a reroll costs {shop_lib.REROLL_COST} gold, you have {gold}"
    if kind == "xp":
        return (
            "you are at the top level"
            if p.level >= C.MAX_LEVEL
            else f"XP costs {economy.XP_COST_GOLD} gold, you have {gold}"
        )
    if kind == "sell":
        return f"{_slot_name(action - C.ACTION_SELL)} is empty"
    if kind == "place":
        bench = (action - C.ACTION_PLACE) // C.BOARD_CELLS
        return (
            f"bench {bench} is empty"
            if p.species[bench] < 0
            else f"the board holds {int(p.level)} units at level {int(p.level)}"
        )
    if kind == "recall":
        return (
            f"{_slot_name(C.BENCH_SIZE + action - C.ACTION_RECALL)} is empty"
            if p.species[C.BENCH_SIZE + action - C.ACTION_RECALL] < 0
            else "the bench is full"
        )
    return "the legal-action mask refuses it"


def _seat(players, seat: int):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[seat], players)


def _key_data(state):
    return state.replace(key=jax.random.key_data(state.key))


@functools.lru_cache(maxsize=8)
def step_program(game: jaxgame.AutoChessEnv, networks: tuple, bot_names: tuple, deterministic: bool, top_k: int):
    """The jitted step of a ``PlaySession`` with these participants (the policies ``networks``, then the bots
    ``bot_names``), kept for the next session (compiled once):

    ``step(params, carries, player, states, ts, key, human_action, seat) -> (states, ts, key, actions int32[8],
    fight bool[], top_actions int32[8, k], top_probs float32[8, k], value float32[8], carries)``: the other seats'
    decisions (``player`` int32[8]: each seat's participant; computed as the evaluation table computes them, with the
    step keys ``step_keys(key)``), the human's ``human_action`` int32[] in seat ``seat`` int32[], then ``env.step``
    once. ``states``/``ts`` have a leading axis of 1, and so have ``carries``, the policies' carries (one entry per
    network, ``agents.arena.tables.initial_carries(networks, 1)`` at the game's start, None for a feed-forward
    one; returned stepped, as the table steps them). ``top_actions``/``top_probs``/``value``: each seat's policy's
    ``top_k`` most likely legal actions (-1 past the legal ones), their probabilities and its value estimate
    (meaningless for a seat no policy plays)."""
    seat_actions, _ = make_seat_actions(networks, bot_names, deterministic, 1, 1)
    venv, seats = jaxgame.VecEnv(game, 1), jnp.arange(C.NUM_PLAYERS)

    def policy_view(player, logits, values, mask):
        if not networks:
            return (
                jnp.full((C.NUM_PLAYERS, top_k), -1, jnp.int32),
                jnp.zeros((C.NUM_PLAYERS, top_k), jnp.float32),
                jnp.zeros(C.NUM_PLAYERS, jnp.float32),
            )
        own = jnp.clip(player, 0, len(networks) - 1)  # a seat of no policy: any policy's, not kept
        probs = jax.nn.softmax(distributions.mask_logits(logits[own, seats], mask), axis=-1)
        top_probs, top = jax.lax.top_k(probs, top_k)
        legal = jnp.take_along_axis(distributions.legal(mask), top, axis=-1)
        return jnp.where(legal, top, -1), jnp.where(legal, top_probs, 0.0), values[own, seats]

    def step(params, carries, player, states, ts, key, human_action, seat):
        key, policy_key, bot_key = step_keys(key)
        actions, logits, values, carries = seat_actions.of_env(
            jnp.int32(0), params, carries, player[None], states, ts, policy_key, bot_key
        )
        actions = actions.at[0, seat].set(human_action)
        top, probs, value = policy_view(player, logits[:, 0], values[:, 0], ts.action_mask[0])
        fight = game_lib.fight_due(states, game.config)[0]
        states, ts = venv.step(states, actions)
        return states, ts, key, actions[0], fight, top, probs, value, carries

    return jax.jit(step)


@dataclasses.dataclass
class _Row:
    """One played step on the host: the state its actions were chosen in (key as key data) and what followed."""

    state: jaxgame.GameState
    actions: np.ndarray  # int32[8]
    fight: bool
    top_actions: np.ndarray  # int32[8, k]
    top_probs: np.ndarray  # float32[8, k]
    value: np.ndarray  # float32[8]


class PlaySession:
    """One game: a person in seat ``seat`` (0..7), the players ``vs`` (1 spec for the 7 other seats, or 7 in seat
    order skipping the human's) in the others; seed ``seed`` (the table key ``jax.random.key(seed)``, game 0).
    ``rules`` (``GameConfig`` fields): games of bots only (a policy plays the rules it trained with).
    ``deterministic``: the policies take their most likely legal action instead of sampling. ``top_k``: each
    policy's most likely legal actions kept per step in the record. ``fights``: after each round's fights the
    view holds the person's own fight tick by tick and a sentence for every fight of the round (recorded as the
    replays record them, ``agents.replays.fights``). Thread-safe: ``act``, ``view`` and ``record`` hold one lock.
    ``ValueError`` (``PolicyError`` among them) for a bad argument."""

    def __init__(
        self,
        vs,
        seat: int = 0,
        seed: int = 0,
        rules: dict | None = None,
        deterministic: bool = False,
        top_k: int = 5,
        notes=None,
        fights: bool = True,
    ):
        for name, value, low, high in (
            ("seat", seat, 0, C.NUM_PLAYERS - 1),
            ("top_k", top_k, 1, C.NUM_ACTIONS),
            ("seed", seed, -(1 << 63), (1 << 64) - 1),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
                raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
        others = opponent_players(vs)
        self.seat, self.seed, self.deterministic, self.top_k = int(seat), int(seed), bool(deterministic), top_k
        self.fights = bool(fights)
        self._round_fights: tuple[int, list[dict]] | None = None  # (step, fights) of the person's last fight step
        policies, player_of = resolve_players(sorted(set(others)))
        self.game = table_game(policies, rules)
        for note in rule_differences(policies):
            (notes or (lambda _: None))(f"note: {note}")
        index, bot_names = participant_index(policies, player_of)
        self.seats = others[: self.seat] + [HUMAN] + others[self.seat :]
        self.names = [HUMAN if s == HUMAN else player_of[s] for s in self.seats]
        player = [0 if s == HUMAN else index[player_of[s]] for s in self.seats]  # the human's entry is overridden
        self.policy_seats = np.asarray([s != HUMAN and p < len(policies) for s, p in zip(self.seats, player)])
        self.max_steps = self.game.config.max_rounds * self.game.config.steps_per_round + 1
        self._networks = table_networks(policies, self.game)
        self._params = tuple(p.params for p in policies)
        self._player = jnp.asarray(player, jnp.int32)
        self._advance = step_program(self.game, self._networks, bot_names, self.deterministic, top_k)
        self._carries = initial_carries(self._networks, 1)  # the policies' memories (None: feed-forward)
        reset_key, self._key = table_keys(jax.random.key(self.seed))
        self._states, self._ts = jax.vmap(self.game.reset)(jax.random.split(reset_key, 1))  # the table's game 0
        self._lock = threading.RLock()
        self._rows: list[_Row] = []
        self._final = None  # the game's last state (numpy, key data) once it ended
        self.placements = np.zeros(C.NUM_PLAYERS, np.int32)
        self.finished = False  # the game ended (not cut at max_steps)
        self._current = jax.device_get(_key_data(jax.tree_util.tree_map(lambda x: x[0], self._states)))
        self._mask = np.asarray(self._ts.action_mask[0, self.seat])

    def _advance_from_here(self, action: int) -> tuple:
        """The step program's outputs from the session's current state, the human's seat playing ``action``;
        nothing is stored."""
        args = (self._params, self._carries, self._player, self._states, self._ts, self._key)
        return self._advance(*args, jnp.int32(action), jnp.int32(self.seat))

    def _step(self, action: int) -> None:
        """Play one step with the human's ``action`` (already checked) and keep it on the host."""
        before = self._current
        states, ts, self._key, actions, fight, top, probs, value, self._carries = self._advance_from_here(action)
        self._states, self._ts = states, ts
        actions, fight, top, probs, value, done = jax.device_get((actions, fight, top, probs, value, ts.done[0]))
        self._rows.append(_Row(before, np.asarray(actions, np.int32), bool(fight), top, probs, value))
        if fight and self.fights and np.asarray(before.players.alive)[self.seat]:
            self._round_fights = (len(self._rows) - 1, fights_lib.fights_of_step(self.game, before, actions))
        if done or len(self._rows) >= self.max_steps:
            final = jax.tree_util.tree_map(lambda x: x[0], ts.info["final_state"])
            self._final = self._current = jax.device_get(_key_data(final))
            self.finished = bool(done)
            self.placements = np.asarray(ts.info["rank"][0], np.int32) if done else self.placements
        else:
            self._current = jax.device_get(_key_data(jax.tree_util.tree_map(lambda x: x[0], states)))
        self._mask = np.asarray(ts.action_mask[0, self.seat])

    def warm_up(self) -> None:
        """Compile the step program now (a step computed and thrown away), and with ``fights`` the fights'
        recorder, so the first ``act`` and the first round's end are quick."""
        jax.block_until_ready(self._advance_from_here(0))
        if self.fights:
            fights_lib.warm_up(self.game, self._current)

    # --- the person's side ---------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """The game is over (it ended, or reached its step limit)."""
        return self._final is not None

    @property
    def step(self) -> int:
        """The decision steps played so far."""
        return len(self._rows)

    def legal_actions(self) -> list[int]:
        """The human seat's legal action ids now, ascending ([] once the game is over)."""
        return [] if self.done else np.flatnonzero(self._mask).tolist()

    def check_action(self, action) -> int:
        """``action`` as an int, or ``ValueError`` naming it and why it cannot be played now: not an int, out of
        range, masked (with the reason), or the game is over."""
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(
                f"action must be an int action id in [0, {C.NUM_ACTIONS - 1}], got {action!r} ({type(action).__name__})"
            )
        action = int(action)
        if not 0 <= action < C.NUM_ACTIONS:
            raise ValueError(f"action {action} is out of range: action ids are 0..{C.NUM_ACTIONS - 1}")
        if self.done:
            raise ValueError(f"action {action}: the game is over")
        if not self._mask[action]:
            p = _seat(self._current.players, self.seat)
            label = action_label(action, p.species, p.stars, p.shop, bool(p.shop_locked))
            raise ValueError(f"action {action} ({label}) is not legal now: {why_illegal(action, p)}")
        return action

    def act(self, action, step: int | None = None) -> dict:
        """Play ``action`` (a legal action id of the human seat) and return the new ``view``. ``step``: the step
        the action was chosen at (``view()["step"]``); another one is a ``StaleStepError``. Refuses an illegal or
        malformed action with ``ValueError`` and changes nothing. While the human seat has no choice afterwards
        (only end turn is legal), the game steps on by itself with end turn."""
        with self._lock:
            if step is not None and (isinstance(step, bool) or step != self.step):
                raise StaleStepError(
                    f"step {step!r} is not the current step {self.step}: the game has moved on "
                    "(another tab, or a repeated request); reload its state"
                )
            self._step(self.check_action(action))
            while not self.done and self.legal_actions() == [C.ACTION_END_TURN]:
                self._step(C.ACTION_END_TURN)
            return self.view()

    def view(self) -> dict:
        """The human seat's view now (JSON-ready): ``seat``, ``step``, ``round``, ``step_in_round``,
        ``steps_per_round``, ``max_rounds``; ``you`` (gold, level, xp, life, streak, alive, rank, shop_locked,
        turn_ended, synergy [NUM_TYPES], ``bench`` [8] and ``board`` [3 rows][8 cols] of units or null, ``slots``
        (``species`` and ``stars`` int[32]: bench 0..7, board 8..31, as the replays hold them), ``shop`` [6] of offers
        or null: ``seat_view.shop_offers``); ``legal`` (each legal action's ``id``, ``kind`` and ``label``);
        ``others`` (each other seat's public state: player, life, gold, level, xp, streak, alive, rank, bench,
        board, slots, synergy, last result); ``last_actions`` (the previous step's action labels of every seat,
        naming the units they bought, or null); ``done``, ``finished`` and ``placements`` (each seat's final rank,
        all 0 until the game is over); ``fight_step``, ``fight`` and ``round_results`` (``fights``: the person's
        last fight and its round's results, ``_fight_view``)."""
        with self._lock:
            return self._view()

    def _view(self) -> dict:
        state = self._current
        public = record_lib.public_state(state)
        you = self._seat_view(public, self.seat)
        p = _seat(state.players, self.seat)
        you.update(
            {
                "shop": seat_view.shop_offers(p.species, p.stars, p.shop),
                "shop_locked": bool(p.shop_locked),
                "turn_ended": bool(p.turn_ended),
            }
        )
        legal = [
            {"id": a, "kind": action_kind(a), "label": action_label(a, p.species, p.stars, p.shop, bool(p.shop_locked))}
            for a in self.legal_actions()
        ]
        others = [self._seat_view(public, s) for s in range(C.NUM_PLAYERS) if s != self.seat]
        return {
            "seat": self.seat,
            "step": self.step,
            "max_steps": self.max_steps,
            "round": int(public["round"]),
            "step_in_round": int(public["step_in_round"]),
            "steps_per_round": self.game.config.steps_per_round,
            "max_rounds": self.game.config.max_rounds,
            "you": you,
            "legal": legal,
            "others": others,
            "last_actions": self._last_actions(),
            "done": self.done,
            "finished": self.finished,
            "placements": self.placements.tolist(),
            "types": list(species.TYPE_NAMES),
            "species_names": list(species.SPECIES_NAMES),
            **self._fight_view(),
        }

    def _fight_view(self) -> dict:
        """``fight_step`` (the step after whose actions the person last fought, or null), ``fight`` (that fight,
        a replay's fight record: docs/replays.md) and ``round_results`` (a sentence per fight of that step)."""
        if self._round_fights is None:
            return {"fight_step": None, "fight": None, "round_results": []}
        step, fought = self._round_fights
        names = [("you" if s == self.seat else name) for s, name in enumerate(self.names)]
        return {
            "fight_step": step,
            "fight": seat_view.own_fight(fought, self.seat),
            "round_results": [seat_view.fight_sentence(f, names) for f in fought],
        }

    def _seat_view(self, public: dict, seat: int) -> dict:
        """Seat ``seat``'s public facts (docs/observation.md, "What is public"): no shop."""

        def unit(slot):
            s = int(public["species"][seat, slot])
            return (
                None
                if s < 0
                else {"species": s, "name": species.SPECIES_NAMES[s], "stars": int(public["stars"][seat, slot])}
            )

        board = [[unit(C.BENCH_SIZE + row * 8 + col) for col in range(8)] for row in range(C.BOARD_CELLS // 8)]
        fields = ("life", "gold", "level", "xp", "streak", "alive", "rank", "last_opponent", "last_result")
        view = {"seat": seat, "player": self.names[seat], **{f: int(public[f][seat]) for f in fields}}
        view.update(
            {
                "bench": [unit(slot) for slot in range(C.BENCH_SIZE)],
                "board": board,
                "slots": {"species": public["species"][seat].tolist(), "stars": public["stars"][seat].tolist()},
                "synergy": public["synergy"][seat].tolist(),
            }
        )
        return view

    def _last_actions(self):
        if not self._rows:
            return None
        row = self._rows[-1]
        labels = []
        for seat, a in enumerate(row.actions.tolist()):
            p = _seat(row.state.players, seat)
            shop = p.shop
            if seat != self.seat:  # another seat's shop is hidden, but what it bought is public once bought
                shop = np.where(np.arange(len(p.shop)) == a - C.ACTION_BUY, p.shop, -1)
            labels.append({"seat": seat, "id": a, "label": action_label(a, p.species, p.stars, shop, False)})
        return labels

    # --- the record ----------------------------------------------------------------------------------------------

    def trace(self) -> record_lib.GameTrace:
        """The steps played as a ``record.GameTrace`` (states [T + 1]: each step's state, then the current one)."""
        with self._lock:
            rows = self._rows
            states = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *[r.state for r in rows], self._current)
            k = self.top_k
            return record_lib.GameTrace(
                states=states,
                actions=np.asarray([r.actions for r in rows], np.int32).reshape(-1, C.NUM_PLAYERS),
                fight=np.asarray([r.fight for r in rows], bool),
                top_actions=np.asarray([r.top_actions for r in rows], np.int32).reshape(-1, C.NUM_PLAYERS, k),
                top_probs=np.asarray([r.top_probs for r in rows], np.float32).reshape(-1, C.NUM_PLAYERS, k),
                value=np.asarray([r.value for r in rows], np.float32).reshape(-1, C.NUM_PLAYERS),
                policy_seats=self.policy_seats.copy(),
                placements=self.placements.copy(),
                finished=self.finished,
            )

    def meta(self) -> dict:
        """``record.to_record``'s meta of this game: game 0 of 1, rotation 0, the human seat named ``HUMAN``."""
        return {
            "seed": self.seed,
            "game": 0,
            "num_games": 1,
            "rotation": 0,
            "deterministic": self.deterministic,
            "top_k": self.top_k,
            "lineup": list(self.seats),
            "seats": list(self.seats),
            "names": list(self.names),
            "rules": dataclasses.asdict(self.game.config),
            "max_steps": self.max_steps,
        }

    def record(self, fights: bool = True) -> dict:
        """The replay record (docs/replays.md) of the steps played so far (``finished`` false and placements 0
        until the game has ended). ``fights``: every fight tick by tick (``agents.replays.fights``)."""
        with self._lock:
            trace = self.trace()
        fought = None
        if fights:
            fought = fights_lib.as_json_list(fights_lib.fights_of_game(self.game, trace.states, trace.actions))
        return record_lib.to_record(trace, self.meta(), fought)


__all__ = [
    "HUMAN",
    "PlaySession",
    "StaleStepError",
    "action_kind",
    "action_label",
    "opponent_players",
    "step_program",
    "why_illegal",
]
