"""The replay viewer (agents.replays.viewer): one self-contained HTML page that embeds the record exactly, fetches
nothing, and plays one short recorded game of bots in headless Chromium (tests/browser.py): no errors, the step
counter advances on play, the last step shows the record's placements, a screenshot is not blank, keys focus seats,
fights animate, a policy seat's top actions and value are shown; the CLI's ``--out game.html`` writes the same page."""

from __future__ import annotations

import copy
import functools
import json
import re

import numpy as np
import pytest

from agents.replays import format as replay_format
from agents.replays import record, viewer
from jaxgame import constants as C
from tests import browser as br
from tests.tiny_games import TINY

BOTS = ["expert", "greedy", "random", "greedy", "expert", "random", "greedy", "random"]
SEED = 3
#: a player name that would end the page's script and open a comment if the JSON were embedded as is
NASTY_NAME = "</script><!--<script>alert(1)</script>&amp;"

pytestmark = pytest.mark.xdist_group("browser")  # one worker: one recorded game and one browser for the module


@functools.cache
def bot_record() -> dict:
    """The record of BOTS at SEED with TINY rules, with its fights (a game of 10 steps, 31 fights)."""
    return record.record_game(BOTS, SEED, TINY)


def minimal_record(name: str) -> dict:
    """A record of one step that ``format.check`` accepts (no game played): enough for ``html``."""
    seats = [name] + BOTS[1:]
    return {
        "format": replay_format.FORMAT,
        "version": replay_format.VERSION,
        "settings": {"seed": 0},
        "rules": {"steps_per_round": 2},
        "lineup": seats,
        "players": {"seats": seats, "names": seats, "policy_seats": []},
        "steps": 1,
        "placements": [0] * C.NUM_PLAYERS,
        "state": {},
        "actions": [[0] * C.NUM_PLAYERS],
        "fight": [0],
        "policy": {"top_actions": [[]], "top_probs": [[]], "value": [[0.125]]},
        "note": "a < b && c > d </SCRIPT >",
    }


def embedded(page: str, element_id: str):
    """json.loads of the text of the page's ``<script type="application/json" id=element_id>``."""
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert match, element_id
    return json.loads(match.group(1))


def test_the_page_embeds_the_record_exactly_even_with_script_end_tags_in_it():
    game = minimal_record(NASTY_NAME)
    page = viewer.html(game)
    assert embedded(page, "replay") == game
    # the script ends only where the page ends it: the record's text holds no "<" at all
    body = page.split('id="replay">', 1)[1].split("</script>", 1)[0]
    assert "<" not in body and ">" not in body and "&" not in body
    assert page.count("</script>") == 4  # config, record, drawing code, viewer code
    config = embedded(page, "viewer-config")
    assert config["actions"]["place"] == C.ACTION_PLACE and config["atlas_uri"].startswith("data:image/png;base64,")
    assert "&lt;/script&gt;" in page.split("</title>")[0]  # the title names the players, escaped
    with pytest.raises(ValueError, match="not a jaxgame-replay"):
        viewer.html({"format": "other"})


def test_the_atlas_is_the_renderers_tiles_in_its_palette():
    import io

    import numpy as np
    from PIL import Image

    from jaxgame import packing, render

    image = np.asarray(Image.open(io.BytesIO(viewer.atlas_png())).convert("RGBA"))
    cols, tile = viewer.ATLAS_COLS, packing.TILE
    unit = render.RENDER_UNIT0 + 3 * 5 + 1  # species 5 with 2 stars, as the views draw it
    r, c = divmod(unit, cols)
    cut = image[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile]
    shades = render.RENDER_ATLAS[unit]
    np.testing.assert_array_equal(cut[..., 3] > 0, shades > 0)  # shade 0 transparent
    np.testing.assert_array_equal(cut[..., :3][shades > 0], packing.PALETTE[shades[shades > 0]])


def test_the_page_fetches_nothing(tmp_path):
    page = viewer.html(bot_record())
    assert "http://" not in page and "https://" not in page
    # no tag's src or href but a data: URI, and the one src the script sets is the config's atlas, a data: URI
    assert not re.search(r"""<[^>]*\s(src|href)\s*=\s*["']?(?!data:)[^"'\s>]""", page)
    assert re.findall(r"\.src\s*=\s*([^;]+);", page) == ["cfg.atlas_uri"]
    assert embedded(page, "viewer-config")["atlas_uri"].startswith("data:image/png;base64,")
    assert not re.search(r"url\(\s*['\"]?(?!data:)", page) and "@import" not in page
    assert "<link " not in page.replace('<link rel="icon" href="data:,">', "")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """(the bot game's page, the same game with seat 2 as a made-up policy seat), written to files."""
    out = tmp_path_factory.mktemp("viewer")
    game = bot_record()
    policy = copy.deepcopy(game)
    # seat 2's actions as the top action of a 'policy' (the format's fields, docs/replays.md), a value per step
    policy["players"]["policy_seats"] = [2]
    policy["policy"] = {
        "top_actions": [[[row[2], C.ACTION_REROLL, -1]] for row in game["actions"]],
        "top_probs": [[[0.75, 0.25, 0.0]] for _ in game["actions"]],
        "value": [[round(0.01 * t, 4)] for t in range(game["steps"])],
    }
    paths = out / "game.html", out / "policy.html"
    sizes = viewer.write_html(game, paths[0]), viewer.write_html(policy, paths[1])
    assert sizes[0] == paths[0].stat().st_size and sizes[0] > len(replay_format.dumps(game))
    return paths


@pytest.fixture(scope="module")
def chromium():
    with br.Browser() as browser:
        yield browser


def _text(b, element_id):
    return b.evaluate(f"document.getElementById({json.dumps(element_id)}).innerText")


def test_the_page_loads_without_errors_and_plays(chromium, pages):
    b, game = chromium, bot_record()
    b.goto(pages[0], budget_ms=300)
    assert b.errors == [], b.errors
    assert b.evaluate("performance.getEntriesByType('resource').map((e) => e.name)") == []  # nothing fetched
    assert b.evaluate("JG.atlas.complete && JG.atlas.naturalWidth") == 8 * viewer.ATLAS_COLS
    assert _text(b, "step") == f"step 0 / {game['steps']}" and b.evaluate("viewer.steps") == game["steps"]
    assert b.evaluate("viewer.play()") is True
    b.advance(4000)  # 0.7 s a step, a fight step waits for its fight's animation (at most 3 s)
    step = b.evaluate("viewer.step")
    assert step >= 2 and _text(b, "step") == f"step {step} / {game['steps']}"
    b.evaluate("viewer.pause()")
    b.advance(2000)
    assert b.evaluate("viewer.step") == step  # paused
    assert b.errors == [], b.errors


def test_the_last_step_shows_the_records_placements(chromium, pages):
    b, game = chromium, bot_record()
    b.goto(pages[0], budget_ms=100)
    assert f"show at the game's end (step {game['steps']})" in _text(b, "placements")  # not before
    per_round = game["rules"]["steps_per_round"]
    for t in range(game["steps"] + 1):  # the counters never leave their range, the last step included
        b.evaluate(f"viewer.seek({t})")
        step_text, round_text = _text(b, "step"), _text(b, "round")
        assert step_text == f"step {t} / {game['steps']}", step_text
        decision = re.search(r"decision (\d+)/(\d+)", round_text)
        if t < game["steps"]:
            assert decision and 1 <= int(decision.group(1)) <= per_round == int(decision.group(2)), round_text
        else:
            assert decision is None and round_text.endswith(": the game is over"), round_text
    b.evaluate("viewer.seek(viewer.steps)")
    b.advance(100)
    shown = re.findall(r"rank (\d+): seat (\d+)", _text(b, "placements"))
    assert len(shown) == C.NUM_PLAYERS
    placements = [0] * C.NUM_PLAYERS
    for rank, seat in shown:
        placements[int(seat)] = int(rank)
    assert game["finished"] and placements == game["placements"]
    assert [int(r) for r, _ in shown] == sorted(game["placements"])  # best first


def test_keys_focus_seats_and_step(chromium, pages):
    b = chromium
    b.goto(pages[0], budget_ms=100)

    def press(key):
        b.evaluate(f"document.dispatchEvent(new KeyboardEvent('keydown', {{key: {json.dumps(key)}, bubbles: true}}))")
        b.advance(50)

    press("3")
    assert b.evaluate("viewer.focused") == 2  # keys 1..8 are seats 0..7, the record's numbering
    assert _text(b, "focus-title").startswith("Seat 2: random")
    assert b.evaluate("document.querySelector('.seat.focused').dataset.seat") == "2"
    press("ArrowRight")
    press("ArrowRight")
    press("ArrowLeft")
    assert b.evaluate("viewer.step") == 1
    press(" ")
    assert b.evaluate("viewer.playing") is True
    press(" ")
    assert b.evaluate("viewer.playing") is False
    assert b.errors == [], b.errors


def test_a_fight_step_animates_its_fights_and_the_screenshot_is_not_blank(chromium, pages, tmp_path):
    b, game = chromium, bot_record()
    pvp = next(f for f in game["fights"] if f["kind"] == "pvp" and f["result"]["ticks"] > 20)
    b.goto(pages[0], budget_ms=100)
    b.evaluate(f"viewer.focus({pvp['home']}); viewer.seek({pvp['step']})")
    assert b.evaluate("[viewer.fight.home, viewer.fight.kind, viewer.fightFrame]") == [pvp["home"], "pvp", 0]
    b.advance(500)
    frame = b.evaluate("viewer.fightFrame")
    assert 0 < frame < pvp["result"]["ticks"]  # animating, not yet at the end
    b.advance(4000)
    assert b.evaluate("viewer.fightFrame") == len(pvp["frames"]["x"]) - 1
    assert _text(b, "fight-info").endswith(" | " + result_sentence(pvp))
    # the fight canvas drew units: more than its background and the line between the sides
    colours = b.evaluate(
        "(() => { const c = document.getElementById('fight'); const d = c.getContext('2d')"
        ".getImageData(0, 0, c.width, c.height).data; const s = new Set();"
        " for (let i = 0; i < d.length; i += 4) s.add(d[i] * 65536 + d[i + 1] * 256 + d[i + 2]);"
        " return s.size; })()"
    )
    assert colours >= 3
    shot = b.screenshot(tmp_path / "viewer.png")
    assert not br.is_blank(shot)
    assert b.errors == [], b.errors


def result_sentence(fight) -> str:
    """What the viewer says at a PvP fight's end: the winner and the life each side loses (docs/replays.md)."""
    res, lost = fight["result"], fight["life_damage"]
    who = {0: f"seat {fight['home']} wins", 1: f"seat {fight['away']} wins", 2: "a draw"}[res["winner"]]
    losses = [
        f"seat {seat} loses {n} life" for seat, n in ((fight["home"], lost["home"]), (fight["away"], lost["away"]))
    ]
    return ", ".join([who] + [text for text, n in zip(losses, (lost["home"], lost["away"])) if n])


def test_the_fight_canvas_draws_bars_actions_sides_and_the_result(chromium, pages):
    """Each layer of a fight frame changes the picture: drawn once as recorded and once without that layer."""
    b, game = chromium, bot_record()
    pvp = next(f for f in game["fights"] if f["kind"] == "pvp" and f["result"]["ticks"] > 20)
    acting = sorted({tick + 1 for tick, _, _, _ in pvp["events"]})
    cast = next(tick + 1 for tick, _, kind, _ in pvp["events"] if kind == 2)
    mana = np.asarray(pvp["frames"]["mana"])
    full = int(np.flatnonzero((mana > 0).any(axis=1))[0])  # a frame where some bar shows mana
    last = len(pvp["frames"]["x"]) - 1
    b.goto(pages[0], budget_ms=100)
    b.evaluate(
        "window.pixels = (fight, frame, labels) => { const c = document.createElement('canvas');"
        " JG.drawFight(c, fight, frame, 3, labels); return [c.width, c.height,"
        " Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data).join(',')]; };"
        f" window.F = viewer.record.fights[{game['fights'].index(pvp)}];"
        " window.without = (field, value) => { const g = JSON.parse(JSON.stringify(F));"
        " field.split('.').reduce((o, k, i, ks) => (i === ks.length - 1 ? (o[k] = value(o[k])) : o[k]), g);"
        " return g; };"
    )

    def differs(frame, changed, labels="{}"):  # frame drawn from F and from `changed` (JS) differ, same size
        return b.evaluate(
            f"(() => {{ const a = pixels(F, {frame}, {labels}), b = pixels({changed}, {frame}, {labels});"
            " return a[0] === b[0] && a[1] === b[1] && a[2] !== b[2]; })()"
        )

    size = b.evaluate("pixels(F, 0, {}).slice(0, 2)")
    assert size == [240, 288] and b.evaluate("[JG.fightSize(3).w, JG.fightSize(3).h]") == size
    assert differs(acting[0], "without('events', () => [])")  # attack lines
    assert differs(cast, "without('events', (e) => e.filter((x) => x[2] !== 2))")  # a cast's frame and line
    assert not differs(0, "without('events', () => [])")  # no action before the first tick
    assert differs(full, "without('frames.mana', (m) => m.map((row) => row.map(() => 0)))")  # mana bars
    assert differs(1, "without('frames.hp', (h) => h.map((row) => row.map((v) => (v > 0 ? 1 : 0))))")  # hp bars
    assert b.evaluate("pixels(F, 0, {home: 'home: seat 9'})[2] !== pixels(F, 0, {})[2]")  # the side labels
    # the result's banner at the last frame only
    banner = "{result: 'seat 1 wins, seat 2 loses 3 life'}"
    assert b.evaluate(f"pixels(F, {last}, {banner})[2] !== pixels(F, {last}, {{}})[2]")
    assert b.evaluate(f"pixels(F, {last - 1}, {banner})[2] === pixels(F, {last - 1}, {{}})[2]")
    assert b.errors == [], b.errors


def test_a_policy_seat_shows_its_top_actions_and_value(chromium, pages):
    b, game = chromium, bot_record()
    b.goto(pages[1], budget_ms=100)
    b.evaluate("viewer.focus(2); viewer.seek(1)")
    b.advance(50)
    text = _text(b, "focus-policy")
    assert "value 0.010" in text and "0.750" in text and "0.250" in text and "reroll" in text
    assert "<- taken" in text  # the recorded action is the top one
    b.evaluate("viewer.focus(1)")
    assert _text(b, "focus-policy") == ""  # a bot's seat has none
    # the action log names the seat's actions up to the step
    b.evaluate(f"viewer.focus(2); viewer.seek({game['steps']})")
    log = _text(b, "log")
    assert re.search(r"r\d+\.\d+ +(buy|sell|place|recall|reroll|end turn|toggle)", log), log
    assert b.errors == [], b.errors


def test_cli_writes_the_viewer_for_an_html_out(tmp_path, capsys):
    from experiments import replay as replay_cli

    out = tmp_path / "game.html"
    rules = [arg for name, value in TINY.items() for arg in ("--set", f"{name}={value}")]
    lineup = [BOTS[0], "--vs", ",".join(BOTS[1:])]
    result = replay_cli.main([*lineup, "--seed", str(SEED), "--out", str(out), "--quiet", *rules])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    assert out.read_text(encoding="utf-8") == viewer.html(bot_record()) and result["bytes"] == out.stat().st_size
