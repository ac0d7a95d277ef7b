"""A seat for a person (agents.replays.play, play_server, experiments.play): a game played through ``act`` ends and
its record replays through the env; bad actions are refused without changing the game; the local server refuses
bad, stale and foreign posts and serialises concurrent ones; a real browser plays a whole game by clicking the
page's action buttons; the CLI serves, saves and stops on Ctrl-C. Short games of bots (one compiled step program
shared by every session here)."""

from __future__ import annotations

import _thread
import collections
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.replays import format as replay_format
from agents.replays import play, play_server, record
from jaxgame import actions as actions_lib
from jaxgame import constants as C
from jaxgame import species

#: short games: at most 6 rounds of 2 decision steps, life enough for a person to reach the last rounds
TINY = dict(steps_per_round=2, max_rounds=6, starting_life=20, max_combat_ticks=150)
VS = ["greedy", "random", "greedy", "random", "greedy", "random", "greedy"]
SEED = 5

pytestmark = pytest.mark.xdist_group("play")


def new_session(seat=2, seed=SEED, fights=False):
    """A session of VS at TINY rules; ``fights``: the view shows the person's fights (the page's; off where a test
    does not look at them, as recording them costs time)."""
    return play.PlaySession(VS, seat=seat, seed=seed, rules=TINY, fights=fights)


def _replayed_states(game, key, actions):
    """The states before each step of ``actions`` int[T, 8] and the game's final state, through ``env.step``."""
    state, ts = game.reset(key)
    states = [state]
    for row in actions:
        state, ts = game.step(state, jnp.asarray(row, jnp.int32))
        states.append(state)
    states[-1] = ts.info["final_state"]  # the step that ends the game resets; its pre-reset state is the last
    return states, bool(ts.done)


def test_a_game_of_random_legal_actions_ends_and_its_record_replays_through_the_env(tmp_path):
    session = new_session(fights=True)
    rng = np.random.default_rng(0)
    chosen = []  # (step, action) of every act
    shown = {}  # the person's fights the views showed: {fight step: (fight, the round's results)}
    view = session.view()
    assert view["seat"] == 2 and view["step"] == 0 and [s["seat"] for s in view["others"]] == [0, 1, 3, 4, 5, 6, 7]
    assert view["fight"] is None and view["fight_step"] is None and view["round_results"] == []
    while not session.done:
        legal = [a["id"] for a in view["legal"]]
        assert legal == session.legal_actions() and legal[0] == C.ACTION_END_TURN
        action = int(rng.choice(legal))
        chosen.append((view["step"], action))
        view = session.act(action, step=view["step"])
        if view["fight_step"] is not None:
            shown[view["fight_step"]] = (view["fight"], view["round_results"])
    assert view["done"] and view["finished"] and view["legal"] == []
    assert sorted(view["placements"]) == list(range(1, 9))
    with pytest.raises(ValueError, match="the game is over"):
        session.act(0)

    game = session.record()
    path = tmp_path / "played.json"
    replay_format.write(game, path)
    written = replay_format.read(path)
    assert written == game and written["finished"] and written["placements"] == view["placements"]
    assert written["players"]["seats"][2] == play.HUMAN and written["players"]["policy_seats"] == []
    assert written["steps"] == session.step and len(written["fights"]) > 0
    actions = replay_format.actions(written)
    for step, action in chosen:  # the person's choices are the record's; the steps between them were end turns
        assert actions[step, 2] == action
    others = set(range(session.step)) - {s for s, _ in chosen}
    assert all(actions[t, 2] == C.ACTION_END_TURN for t in others)
    # the fight a view showed after a round is the person's fight of that step in the record, as recorded
    assert shown
    for step, (fight, results) in shown.items():
        fought = [{k: v for k, v in f.items() if k != "step"} for f in written["fights"] if f["step"] == step]
        own = [f for f in fought if f["home"] == 2] or [f for f in fought if f["kind"] == "pvp" and f["away"] == 2]
        assert fight == own[0]
        assert len(results) == len(fought) and sum("seat 2 (you)" in line for line in results) >= 1

    states, done = _replayed_states(jaxgame.make("autochess", **TINY), record.game_reset_key(SEED), actions)
    assert done  # the game ends on the recorded last step
    for t, state in enumerate(states):
        public = record.public_state(jax.device_get(state))
        for name in record.STATE_FIELDS:
            np.testing.assert_array_equal(public[name], np.asarray(written["state"][name][t]), err_msg=f"{name} {t}")
    masks = np.asarray(
        jax.vmap(jax.vmap(actions_lib.legal_mask))(
            jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *[s.players for s in states[:-1]])
        )
    )
    assert masks[np.arange(len(actions))[:, None], np.arange(8)[None], actions].all()  # every action was legal
    np.testing.assert_array_equal(np.asarray(states[-1].players.rank), written["placements"])


def test_illegal_masked_and_malformed_actions_are_refused_with_the_game_unchanged():
    session = new_session(seat=0, seed=SEED + 1)
    before, trace = session.view(), session.trace()
    legal = session.legal_actions()
    empty_bench_sell = C.ACTION_SELL  # nothing on the bench at the start: selling bench 0 is masked
    assert empty_bench_sell not in legal and before["you"]["bench"][0] is None
    for bad, message in [
        ("1", r"action must be an int action id in \[0, 257\], got '1' \(str\)"),
        (1.0, r"got 1.0 \(float\)"),
        (True, r"got True \(bool\)"),
        (None, r"got None \(NoneType\)"),
        (10**30, "action 1000000000000000000000000000000 is out of range: action ids are 0..257"),
        (-1, "action -1 is out of range"),
        (C.NUM_ACTIONS, "action 258 is out of range"),
        (empty_bench_sell, r"action 10 \(sell bench 0 \(empty\)\) is not legal now: bench 0 is empty"),
    ]:
        with pytest.raises(ValueError, match=message):
            session.act(bad)
        assert session.view() == before and session.step == 0
    with pytest.raises(play.StaleStepError, match="step 3 is not the current step 0"):
        session.act(legal[0], step=3)
    assert session.view() == before and session.trace().steps == trace.steps == 0
    # a legal one is played: the step moves on, and the same step again is stale
    session.act(C.ACTION_END_TURN, step=0)
    assert session.step >= 1
    with pytest.raises(play.StaleStepError):
        session.act(C.ACTION_END_TURN, step=0)


def test_labels_and_opponents():
    assert play.action_kind(0) == "end" and play.action_kind(7) == "reroll" and play.action_kind(257) == "recall"
    units = np.full(32, -1)
    units[3], units[8 + 9] = 0, 1
    stars = np.where(units >= 0, 2, 0)
    name0, name1 = species.SPECIES_NAMES[:2]
    assert (
        play.action_label(42 + 3 * 24 + 9, units, stars, np.full(6, -1), False)
        == f"place {name0} ** (bench 3) on r1c1, swap with {name1} **"
    )
    assert (
        play.action_label(234 + 9, units, stars, np.full(6, -1), True) == f"recall {name1} ** (board r1c1) to the bench"
    )
    assert play.action_label(9, units, stars, np.full(6, -1), True) == "unlock shop"
    assert play.opponent_players("greedy") == ["greedy"] * 7
    with pytest.raises(ValueError, match="1 or 7 players, got 2"):
        play.opponent_players("greedy,random")
    with pytest.raises(ValueError, match="did you mean greedy"):
        play.opponent_players(["grredy"])
    with pytest.raises(ValueError, match=r"seat must be an int in \[0, 7\]"):
        play.PlaySession("greedy", seat=8)


def _post(url, body, host=None):
    """(status, JSON answer) of POST url with a JSON (or raw bytes) body."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Host": host} if host else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def _get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


@pytest.fixture
def served(tmp_path):
    servers = []

    def start(seat=1, seed=SEED, fights=False):
        session = new_session(seat, seed, fights)
        server = play_server.PlayServer(session, tmp_path / f"game-{len(servers)}.json", fights=fights)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def test_the_server_refuses_bad_stale_and_foreign_posts_and_two_tabs_share_one_game(served):
    server = served()
    act, state = server.url + "act", server.url + "state"
    assert server.url.startswith("http://127.0.0.1:") and server.port > 0
    tab_a, tab_b = _get(server.url), _get(server.url)  # two tabs: the same page, the same game
    assert json.dumps(server.token) in tab_a and tab_a == tab_b
    before = json.loads(_get(state))
    assert before["step"] == 0 and before["saved"] is None
    masked = C.ACTION_SELL + 1  # bench 1 is empty
    token = server.token
    for body, code, message in [
        ({"action": masked, "step": 0, "session": token}, 400, "is not legal now: bench 1 is empty"),
        ({"action": "0", "step": 0, "session": token}, 400, "action must be an int"),
        ({"action": 1.5, "step": 0, "session": token}, 400, "action must be an int"),
        ({"action": 10**20, "step": 0, "session": token}, 400, "out of range"),
        ({"action": 0, "session": token}, 400, "needs 'action'"),
        ({"action": 0, "step": 0, "session": "forged"}, 403, "not this game's token"),
        ({"action": 0, "step": 0}, 403, "not this game's token"),
        (b"{not json", 400, "not JSON"),
        (b"[0, 1]", 400, "must be a JSON object"),
        ({"action": 0, "step": 4, "session": token}, 409, "step 4 is not the current step 0"),
    ]:
        status, answer = _post(act, body)
        assert (status, message in answer["error"]) == (code, True), (body, status, answer)
        assert json.loads(_get(state)) == before
    assert _post(act, {"action": 0, "step": 0, "session": token}, host="evil.example:80")[0] == 403
    assert json.loads(_get(state)) == before

    # a closed tab: a post cut off mid-body, then the connection closed; the game waits, unchanged
    with socket.create_connection(("127.0.0.1", server.port)) as conn:
        conn.sendall(b'POST /act HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n\r\n{"action": 0')
    assert json.loads(_get(state)) == before

    # two tabs post the same move at once: one is played, the other is stale
    answers = []
    threads = [
        threading.Thread(target=lambda: answers.append(_post(act, {"action": 0, "step": 0, "session": token})))
        for _ in range(2)
    ]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(status for status, _ in answers) == [200, 409]
    played = next(answer for status, answer in answers if status == 200)
    assert played["step"] > 0 and json.loads(_get(state)) == played  # the other tab now sees the same game
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/nothing")
    assert conn.getresponse().status == 404


#: the kinds of move the person tries first, one a step (then: place, buy, or end the turn)
PAGE_PLAN = ("buy", "place", "buy", "place", "recall", "sell", "end", "end")


def _page_move(browser, ops, want):
    """One move of a person on the play page, through pointer events and keys only, of the kind ``want`` when it
    can be made: place (drag a bench unit onto a free cell, or click it and then the cell), buy (click a shop card),
    sell (drag a bench unit onto "sell"), recall (click a board unit, then a free bench slot), end the turn (the E
    key, or the button); else a place, a buy or the end of the turn. Counts it in ``ops`` and returns the action id
    the person meant."""
    view = browser.evaluate("play.view")
    legal = {int(a) for a in browser.evaluate("document.body.dataset.legal").split(",")}
    species = view["you"]["slots"]["species"]
    bench = [b for b in range(C.BENCH_SIZE) if species[b] >= 0]
    board = [c for c in range(C.BOARD_CELLS) if species[C.BENCH_SIZE + c] >= 0]
    free_bench = [b for b in range(C.BENCH_SIZE) if species[b] < 0]
    places = [
        (b, c)
        for b in bench
        for c in range(C.BOARD_CELLS)
        if species[C.BENCH_SIZE + c] < 0 and C.ACTION_PLACE + b * C.BOARD_CELLS + c in legal
    ]
    buys = [k for k in range(C.SHOP_SIZE) if C.ACTION_BUY + k in legal]
    can = {
        "place": bool(places),
        "buy": bool(buys) and ops["buy"] < 4,
        "sell": bool(bench) and C.ACTION_SELL + (bench or [0])[0] in legal,
        "recall": bool(board and free_bench) and C.ACTION_RECALL + (board or [0])[0] in legal,
        "end": True,
    }
    kind = want if want and can[want] else next(k for k in ("place", "buy", "end") if can[k])

    def slot(i):
        return f".slot[data-slot='{i}']"

    ops[kind] += 1
    if kind == "place":
        b, c = places[-1]
        if ops["place"] % 2:
            browser.drag(slot(b), slot(C.BENCH_SIZE + c))
        else:
            browser.click(slot(b))
            assert browser.evaluate("play.selected") == b  # the first click selects, the second places
            browser.click(slot(C.BENCH_SIZE + c))
        return C.ACTION_PLACE + b * C.BOARD_CELLS + c
    if kind == "buy":
        browser.click(f"#shop button[data-slot='{buys[0]}']")
        return C.ACTION_BUY + buys[0]
    if kind == "sell":
        browser.drag(slot(bench[0]), "#sell")
        return C.ACTION_SELL + bench[0]
    if kind == "recall":
        browser.click(slot(C.BENCH_SIZE + board[0]))
        browser.click(slot(free_bench[0]))
        return C.ACTION_RECALL + board[0]
    if ops["end"] % 2:
        browser.press("e")
    else:
        browser.click("#controls button[data-kind='end']")
    return C.ACTION_END_TURN


def test_a_browser_plays_a_whole_game_with_drags_clicks_and_keys(served, tmp_path):
    from tests import browser as br

    seat = 3
    server = served(seat=seat, seed=SEED + 2, fights=True)
    ops, meant, shots = collections.Counter(), [], []
    # real time: under the harness's virtual time the page's second POST never resolved (its response was sent;
    # the browser's clock stayed paused on the pending fetch)
    with br.Browser(virtual_time=False) as browser:
        browser.goto(server.url, budget_ms=200)
        browser.wait_for("document.body.dataset.step === '0'", timeout_ms=10000)
        while browser.evaluate("document.body.dataset.done") != "1":
            assert len(meant) < 60, "the game did not end within 60 moves"
            step = browser.evaluate("document.body.dataset.step")
            legal = sorted(int(a) for a in browser.evaluate("document.body.dataset.legal").split(","))
            assert legal == server.session.legal_actions()  # the page offers exactly the legal moves
            enabled = browser.evaluate(
                "[...document.querySelectorAll('button.action:not(:disabled)')].map((b) => +b.dataset.action)"
            )
            assert set(enabled) == {a for a in legal if a < C.ACTION_SELL}  # buttons: buy, reroll, XP, lock, end
            meant.append(_page_move(browser, ops, PAGE_PLAN[len(meant)] if len(meant) < len(PAGE_PLAN) else None))
            browser.wait_for(f"document.body.dataset.step !== '{step}'", timeout_ms=60000)
            assert browser.evaluate("document.getElementById('error').hidden"), browser.evaluate("play.view")
            if not shots and browser.evaluate("!!play.view.fight && play.view.fight.result.ticks > 5"):  # it plays
                browser.wait_for("+document.body.dataset.fightFrame > 0", timeout_ms=5000)
                shots.append(browser.screenshot(tmp_path / "mid-game.png"))
                fight_info = browser.evaluate("document.getElementById('fight-info').textContent")
                results = browser.evaluate("document.getElementById('results').innerText")
        over = browser.evaluate("document.getElementById('over').innerText")
        places = browser.evaluate("[...document.querySelectorAll('#placements td.place')].map(e => +e.textContent)")
        shots.append(browser.screenshot(tmp_path / "end.png"))
        errors = list(browser.errors)
    assert errors == []
    assert all(not br.is_blank(shot) for shot in shots) and len(shots) == 2
    assert ops["buy"] >= 2 and ops["place"] >= 2 and ops["sell"] and ops["recall"] and ops["end"] >= 2, ops
    session = server.session
    assert session.done and session.finished
    assert f"You placed {session.placements[seat]} of 8." in over and str(server.out) in over
    assert places == sorted(session.placements.tolist())
    written = replay_format.read(server.out)
    assert written["placements"] == session.placements.tolist() and written["players"]["seats"][seat] == play.HUMAN
    # every move the person made on the page is the seat's action in the saved replay, in order
    mine = [a for a in replay_format.actions(written)[:, seat].tolist()]
    assert [a for a in mine if a != C.ACTION_END_TURN] == [a for a in meant if a != C.ACTION_END_TURN]
    # a fight of the person's was shown, with its round's results (a sentence per fight, the seat's own marked)
    assert re.match(r"round \d+ vs .* \| tick \d+ / \d+", fight_info), fight_info
    assert results.count("seat") >= C.NUM_PLAYERS and f"seat {seat} (you)" in results
    # the replay viewer's page of the record, beside it (agents.replays.viewer)
    assert server.viewer == str(server.out.with_suffix(".html")) and f"viewer: {server.viewer}" in over
    assert "jaxgame" in server.out.with_suffix(".html").read_text()


def test_the_play_page_fits_a_narrow_window_and_places_by_drag(served):
    from tests import browser as br

    server = served(seat=0)
    with br.Browser(virtual_time=False, size=(480, 900)) as browser:
        browser.goto(server.url, budget_ms=200)
        browser.wait_for("document.body.dataset.step === '0'", timeout_ms=10000)
        assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scroll
        widths = browser.evaluate(
            "['board', 'bench', 'shop'].map((id) => document.getElementById(id)"
            ".getBoundingClientRect().right <= window.innerWidth)"
        )
        assert widths == [True, True, True]
        browser.click("#shop button[data-slot='0']")
        browser.wait_for("document.body.dataset.step === '1'", timeout_ms=20000)
        browser.drag(".slot[data-slot='0']", f".slot[data-slot='{C.BENCH_SIZE + 3}']")
        browser.wait_for("document.body.dataset.step === '2'", timeout_ms=20000)
        assert browser.evaluate(f"play.view.you.slots.species[{C.BENCH_SIZE + 3}]") >= 0
        # a board unit dragged onto another board cell is no action of the game: the page says so, nothing is sent
        browser.drag(f".slot[data-slot='{C.BENCH_SIZE + 3}']", f".slot[data-slot='{C.BENCH_SIZE + 4}']")
        assert "through the bench" in browser.evaluate("document.getElementById('hint').textContent")
        assert browser.evaluate("document.body.dataset.step") == "2" and server.session.step == 2
        assert not br.is_blank(browser.screenshot(server.out.parent / "narrow.png"))
        assert browser.errors == []


def test_cli_serves_the_game_saves_it_and_stops_on_ctrl_c(tmp_path, monkeypatch, capsys):
    import signal

    from experiments import play as play_cli

    # Ctrl-C is simulated with _thread.interrupt_main, which does nothing where SIGINT is ignored (pytest-xdist's
    # workers ignore it): Python's own handler for the length of the test, so the CLI's wait ends as a user's would
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _cli_game(tmp_path, monkeypatch, capsys, play_cli)
    finally:
        signal.signal(signal.SIGINT, previous)


def _cli_game(tmp_path, monkeypatch, capsys, play_cli):
    opened = []
    out = tmp_path / "cli" / "game.json"

    def drive(url):  # the page's part, over HTTP, in a thread; then Ctrl-C
        opened.append(url)
        try:
            view = json.loads(_get(url + "state"))
            while not view["done"]:
                status, view = _post(url + "act", {"action": 0, "step": view["step"], "session": _token(_get(url))})
                assert status == 200, view
        finally:
            _thread.interrupt_main()

    monkeypatch.setattr(play_cli.webbrowser, "open", lambda url: threading.Thread(target=drive, args=(url,)).start())
    rules = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    argv = [
        "--vs",
        ",".join(VS),
        "--seat",
        "4",
        "--seed",
        str(SEED),
        "--out",
        str(out),
        "--quiet",
        "--no-cache",
        *rules,
    ]
    result = play_cli.main(argv)
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[0] == opened[0] and printed[0].startswith("http://127.0.0.1:")
    assert json.loads(printed[-1]) == result and result["out"] == str(out) and result["finished"]
    assert replay_format.read(out)["placements"] == result["placements"]

    # stopped before the game ends: one line, status 130, nothing written
    monkeypatch.setattr(play_cli.webbrowser, "open", lambda url: _thread.interrupt_main())
    with pytest.raises(SystemExit) as exit_info:
        play_cli.main([*argv[: -len(rules)], "--out", str(tmp_path / "never.json"), *rules])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 130 and len(err) == 1 and "before the game was saved" in err[0]
    assert not (tmp_path / "never.json").exists()


def _token(page: str) -> str:
    return json.loads(page.split("const TOKEN = ", 1)[1].split(";", 1)[0])


def test_the_server_holds_against_nested_oversized_slow_and_too_many_clients(tmp_path):
    """No request reaches the session here (each is refused first), so the server needs none."""
    server = play_server.PlayServer(None, tmp_path / "game.json", read_timeout=1.0, max_connections=2)
    server.start()
    silent = []
    try:
        act = server.url + "act"
        status, answer = _post(act, b"[" * 60_000)  # under the 64 KB bound, too deep for json
        assert status == 400 and "nested too deeply" in answer["error"], answer
        status, answer = _post(act, b"x" * (play_server.MAX_BODY + 1))
        assert status == 413 and "Content-Length" in answer["error"]
        # the two answered connections give their slots back once their threads end (on a busy machine, after the
        # answer arrived here): wait for that, or the next connection is rightly answered 503
        deadline = time.monotonic() + 5.0
        while server.httpd._slots._value < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.httpd._slots._value == 2, "the answered connections still hold their slots after 5 s"
        # a Content-Length larger than the bytes sent: answered 408 after the read timeout, not held forever
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
            conn.sendall(b'POST /act HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n\r\n{"action": 0')
            started = time.monotonic()
            reply = conn.recv(4096)
            waited = time.monotonic() - started
            while chunk := conn.recv(4096):  # the rest of the answer, until the server closes the connection
                reply += chunk
        assert reply.split(b"\r\n")[0].split()[1] == b"408" and b"did not arrive within 1 s" in reply, reply
        assert 0.5 < waited < 8, waited
    finally:
        server.close()
    # two silent connections hold both slots: a third is answered 503 at once; once they time out, served again. A
    # server of its own with a longer read timeout, so that a busy machine's slow accepts cannot let the first
    # silent connection time out (and free its slot) before the third arrives
    server = play_server.PlayServer(None, tmp_path / "game.json", read_timeout=4.0, max_connections=2)
    server.start()
    try:
        silent = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(2)]
        deadline = time.monotonic() + 3.0
        while server.httpd._slots._value and time.monotonic() < deadline:  # both accepted, each holding a slot
            time.sleep(0.02)
        assert server.httpd._slots._value == 0, "the two silent connections were not accepted within 3 s"
        busy = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        busy.request("GET", "/nothing")
        response = busy.getresponse()
        assert response.status == 503 and "too many connections" in json.load(response)["error"]
        time.sleep(6.0)  # their read timeouts (4 s) drop them
        later = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        later.request("GET", "/nothing")
        assert later.getresponse().status == 404
    finally:
        for conn in silent:
            conn.close()
        server.close()
    with pytest.raises(ValueError, match="read_timeout"):
        play_server.PlayServer(None, tmp_path / "x.json", read_timeout=0)
    with pytest.raises(ValueError, match="max_connections"):
        play_server.PlayServer(None, tmp_path / "x.json", max_connections=0)
