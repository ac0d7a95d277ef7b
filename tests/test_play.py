"""A seat for a person (agents.replays.play, play_server, experiments.play): a game played through ``act`` ends and
its record replays through the env; bad actions are refused without changing the game; the local server refuses
bad, stale and foreign posts and serialises concurrent ones; a real browser plays a whole game by clicking the
page's action buttons; the CLI serves, saves and stops on Ctrl-C. Short games of bots (one compiled step program
shared by every session here)."""

from __future__ import annotations

import _thread
import http.client
import json
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

#: short, deadly games: at most 6 rounds of 2 decision steps
TINY = dict(steps_per_round=2, max_rounds=6, starting_life=12, max_combat_ticks=150)
VS = ["greedy", "random", "greedy", "random", "greedy", "random", "greedy"]
SEED = 5

pytestmark = pytest.mark.xdist_group("play")


def new_session(seat=2, seed=SEED):
    return play.PlaySession(VS, seat=seat, seed=seed, rules=TINY)


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
    session = new_session()
    rng = np.random.default_rng(0)
    chosen = []  # (step, action) of every act
    view = session.view()
    assert view["seat"] == 2 and view["step"] == 0 and [s["seat"] for s in view["others"]] == [0, 1, 3, 4, 5, 6, 7]
    while not session.done:
        legal = [a["id"] for a in view["legal"]]
        assert legal == session.legal_actions() and legal[0] == C.ACTION_END_TURN
        action = int(rng.choice(legal))
        chosen.append((view["step"], action))
        view = session.act(action, step=view["step"])
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
        server = play_server.PlayServer(new_session(seat, seed), tmp_path / f"game-{len(servers)}.json", fights=fights)
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


def test_a_browser_plays_a_whole_game_by_clicking_the_pages_action_buttons(served):
    from tests.browser import Browser

    server = served(seat=3, seed=SEED + 2, fights=True)
    # real time: under the harness's virtual time the page's second POST never resolved (its response was sent;
    # the browser's clock stayed paused on the pending fetch), and this page has no timers to fast-forward
    with Browser(virtual_time=False) as browser:
        browser.goto(server.url, budget_ms=200)
        browser.wait_for("document.body.dataset.step === '0'", timeout_ms=10000)
        assert browser.evaluate("document.querySelectorAll('button.action[data-action]').length") == len(
            server.session.legal_actions()
        )
        clicks = bought = 0
        while browser.evaluate("document.body.dataset.done") != "1":
            assert clicks < 40, "the game did not end within 40 clicks"
            step = browser.evaluate("document.body.dataset.step")
            buy = browser.evaluate("!!document.querySelector('button.action[data-kind=\"buy\"]')")
            if buy and bought < 3:  # a few purchases first, then end turn every round
                browser.click('button.action[data-kind="buy"]')
                bought += 1
            else:
                browser.click('button.action[data-action="0"]')
            clicks += 1
            browser.wait_for(f"document.body.dataset.step !== '{step}'", timeout_ms=60000)
        over = browser.evaluate("document.getElementById('over').innerText")
        places = browser.evaluate("[...document.querySelectorAll('#placements td.place')].map(e => +e.textContent)")
        errors = list(browser.errors)
    assert errors == []
    session = server.session
    assert session.done and session.finished and bought >= 1
    assert f"You placed {session.placements[3]} of 8." in over and str(server.out) in over
    assert places == sorted(session.placements.tolist())
    written = replay_format.read(server.out)
    assert written["placements"] == session.placements.tolist() and written["players"]["seats"][3] == play.HUMAN
    assert written["fights"] and (replay_format.actions(written)[:, 3] != 0).sum() == bought
    # the replay viewer's page of the record, beside it (agents.replays.viewer)
    assert server.viewer == str(server.out.with_suffix(".html")) and f"viewer: {server.viewer}" in over
    assert "jaxgame" in server.out.with_suffix(".html").read_text()


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
