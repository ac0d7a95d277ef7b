"""The replay viewer: one self-contained HTML file that plays a game record (docs/replays.md) in a browser.

    size = write_html(record, "game.html")     # -> bytes written (atomically)
    text = html(record)                        # the page as a string

The page works offline from a file URL: nothing is fetched (no server, no CDN, no fonts). The record is embedded
as JSON in a ``<script type="application/json" id="replay">`` (every ``<``, ``>`` and ``&`` written as a
``\\u00XX`` escape, so no text in the record can end the script), the viewer's constants in another
(``id="viewer-config"``), the script and style inline, and the game's own tiles (``jaxgame.render.RENDER_ATLAS``:
every species sprite with its star pips, the empty-cell outline, glyphs) as a PNG data URI in the renderer's palette
(``jaxgame.packing.PALETTE``), shade 0 transparent so a cell's background shows through as in the fight GIFs.

The page: a step timeline (play/pause, a scrubber, ``#step`` reading ``step t / T``), the 8 seats at a glance
(board, life, gold, level, rank), one seat in focus (board and bench, shop, stats, synergies, its action log to the
current step, a policy's top actions and value), the current step's fights animated tick by tick, and the final
placements (``#placements``) at the last step. Keys: space plays/pauses, the arrows step, 1-8 focus seats 0-7.
``window.viewer`` is a small API for tests and the console (``seek``, ``play``, ``pause``, ``focus``, ...).

The style (``VIEWER_CSS``), the drawing code (``DRAW_JS``: tiles, boards, fights, action names; it reads the
config and the atlas and knows nothing of the page) and the page's script (``VIEWER_JS``) are module constants so
another page (``agents.replays.play``) can reuse them with ``config_json()`` and ``atlas_data_uri()``.
"""

from __future__ import annotations

import base64
import functools
import io
import json
from pathlib import Path

import numpy as np

from agents.replays import format as replay_format
from agents.storage.run_dir import atomic_write
from jaxgame import constants as C
from jaxgame import packing, render
from jaxgame import tiles as T

#: tiles per row of the atlas image
ATLAS_COLS = 32


def atlas_rgba() -> np.ndarray:
    """uint8[8 * rows, 8 * ATLAS_COLS, 4]: ``render.RENDER_ATLAS`` (every tile of the rendered views) laid out
    ``ATLAS_COLS`` tiles a row, tile ``i`` at tile row ``i // ATLAS_COLS``, column ``i % ATLAS_COLS``; RGB from
    ``packing.PALETTE``, shade 0 transparent."""
    shades = render.RENDER_ATLAS  # uint8[N, 8, 8], 0..3
    n, tile = len(shades), packing.TILE
    rows = -(-n // ATLAS_COLS)
    grid = np.zeros((rows * ATLAS_COLS, tile, tile), np.uint8)
    grid[:n] = shades
    grid = grid.reshape(rows, ATLAS_COLS, tile, tile).transpose(0, 2, 1, 3).reshape(rows * tile, ATLAS_COLS * tile)
    rgba = np.zeros(grid.shape + (4,), np.uint8)
    rgba[..., :3] = packing.PALETTE[grid]
    rgba[..., 3] = np.where(grid > 0, 255, 0)
    return rgba


@functools.cache
def atlas_png() -> bytes:
    """The atlas (``atlas_rgba``) as PNG bytes (pillow)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(atlas_rgba(), "RGBA").save(out, format="PNG", optimize=True)
    return out.getvalue()


def atlas_data_uri() -> str:
    """The atlas PNG as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(atlas_png()).decode("ascii")


def config() -> dict:
    """The constants the drawing code needs: the action table's offsets, the board's shape, the atlas layout
    (tile indices into the atlas image) and the palette (``"#rrggbb"``, light to dark)."""
    return {
        "num_players": C.NUM_PLAYERS,
        "bench": C.BENCH_SIZE,
        "board_rows": C.BOARD_ROWS,
        "board_cols": C.BOARD_COLS,
        "shop_size": C.SHOP_SIZE,
        "grid_rows": C.GRID_ROWS,
        "grid_cols": C.GRID_COLS,
        "actions": {
            "end_turn": C.ACTION_END_TURN,
            "buy": C.ACTION_BUY,
            "reroll": C.ACTION_REROLL,
            "buy_xp": C.ACTION_BUY_XP,
            "lock": C.ACTION_LOCK,
            "sell": C.ACTION_SELL,
            "place": C.ACTION_PLACE,
            "recall": C.ACTION_RECALL,
            "num": C.NUM_ACTIONS,
        },
        "atlas": {
            "cols": ATLAS_COLS,
            "tile": packing.TILE,
            "empty_cell": T.ATLAS_EMPTY_CELL,
            "species0": T.ATLAS_SPECIES0,
            "unit0": render.RENDER_UNIT0,
            "heart": T.ATLAS_GLYPH0 + T.glyph_index(T.HEART),
            "coin": T.ATLAS_GLYPH0 + T.glyph_index(T.COIN),
            "padlock": render.RENDER_PADLOCK,
        },
        "palette": ["#%02x%02x%02x" % tuple(int(v) for v in rgb) for rgb in packing.PALETTE],
    }


def script_json(obj) -> str:
    """``obj`` as JSON safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` (which appear only inside JSON
    strings) as ``\\u003c``, ``\\u003e``, ``\\u0026``; ``json.loads`` of it gives ``obj`` back."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def config_json() -> str:
    """``config()`` with the atlas URI, as script-safe JSON."""
    return script_json({**config(), "atlas_uri": atlas_data_uri()})


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def html(record: dict) -> str:
    """The viewer page of ``record`` (a replay record, ``format.check``-ed; ``ValueError`` otherwise)."""
    replay_format.check(record)
    names = record.get("players", {}).get("names") or record.get("lineup") or []
    title = _escape_text(
        f"jaxgame replay: {', '.join(dict.fromkeys(map(str, names)))} "
        f"(seed {record.get('settings', {}).get('seed', '?')})"
    )
    return PAGE.format(
        title=title,
        css=VIEWER_CSS,
        config=config_json(),
        record=script_json(record),
        draw_js=DRAW_JS,
        viewer_js=VIEWER_JS,
    )


def write_html(record: dict, path) -> int:
    """Write ``html(record)`` to ``path`` atomically (its directory created); returns the bytes written."""
    data = html(record).encode("utf-8")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: f.write(data))
    return len(data)


# --- the page ------------------------------------------------------------------------------------------------------

# str.format fields: title, css, config, record, draw_js, viewer_js (so no other braces in it)
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" href="data:,">
<style>{css}</style>
</head>
<body>
<header>
  <button id="prev" title="previous step (left arrow)">&#9664;</button>
  <button id="play" title="play / pause (space)">play</button>
  <button id="next" title="next step (right arrow)">&#9654;</button>
  <input id="scrubber" type="range" min="0" max="0" value="0" aria-label="step">
  <span id="step">step 0 / 0</span>
  <span id="round"></span>
  <label>speed <select id="speed"><option value="0.5">0.5x</option><option value="1" selected>1x</option>
    <option value="2">2x</option><option value="4">4x</option></select></label>
  <span class="help">space: play/pause &middot; arrows: step &middot; 1-8: focus seat 0-7</span>
</header>
<main>
  <section id="seats"></section>
  <section id="focus"></section>
  <section id="fights-panel">
    <h2>Fights</h2>
    <div id="fight-list"></div>
    <canvas id="fight" width="240" height="288"></canvas>
    <div id="fight-info"></div>
    <h2>Final placements</h2>
    <ul id="placements"></ul>
  </section>
</main>
<script type="application/json" id="viewer-config">{config}</script>
<script type="application/json" id="replay">{record}</script>
<script>{draw_js}</script>
<script>{viewer_js}</script>
</body>
</html>
"""

VIEWER_CSS = r"""
:root { --c0: #e0f8d0; --c1: #88c070; --c2: #346856; --c3: #081820; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--c0); color: var(--c3); font: 13px/1.35 monospace; }
header { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 6px 10px; background: var(--c2);
  color: var(--c0); position: sticky; top: 0; z-index: 1; }
header button, header select { font: inherit; background: var(--c0); color: var(--c3); border: 1px solid var(--c3);
  padding: 2px 8px; cursor: pointer; }
#scrubber { flex: 1 1 240px; min-width: 160px; }
#step { min-width: 11ch; font-weight: bold; }
.help { opacity: 0.8; font-size: 11px; }
main { display: grid; grid-template-columns: 300px minmax(380px, 1fr) 290px; gap: 10px; padding: 10px; }
h2 { font-size: 13px; margin: 8px 0 4px; border-bottom: 1px solid var(--c2); }
canvas { image-rendering: pixelated; image-rendering: crisp-edges; display: block; }
.seat { display: grid; grid-template-columns: 136px 1fr; gap: 4px; padding: 3px; margin-bottom: 3px;
  font-size: 12px; line-height: 1.25;
  border: 1px solid var(--c1); cursor: pointer; }
.seat.focused { border: 2px solid var(--c3); background: #d0ecbc; }
.seat.out { opacity: 0.45; }
.seat .name { font-weight: bold; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.lifebar { height: 5px; background: var(--c1); margin: 2px 0; }
.lifebar > div { height: 100%; background: var(--c3); }
.stats { display: grid; grid-template-columns: repeat(3, auto); gap: 2px 12px; margin: 4px 0; }
.shop { display: flex; gap: 6px; flex-wrap: wrap; }
.shop .slot { text-align: center; font-size: 10px; width: 74px; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }
.shop .slot canvas { margin: 0 auto; background: var(--c0); border: 1px solid var(--c1); }
#log { max-height: 260px; overflow-y: auto; border: 1px solid var(--c1); padding: 2px 4px; }
#log div.now { background: var(--c1); font-weight: bold; }
.policy td { padding: 0 4px; }
.bar { display: inline-block; height: 8px; background: var(--c2); vertical-align: middle; }
#fight { background: var(--c0); border: 1px solid var(--c2); }
#fight-list button { font: inherit; font-size: 11px; margin: 0 2px 2px 0; background: var(--c0);
  border: 1px solid var(--c2); cursor: pointer; }
#fight-list button.on { background: var(--c2); color: var(--c0); }
#placements { list-style: none; padding: 0; margin: 0; }
#placements li.top { font-weight: bold; }
.muted { opacity: 0.7; }
"""

DRAW_JS = r"""
"use strict";
// Drawing with the game's own tiles: needs a config (agents.replays.viewer.config()) and the tables of a record.
const JG = (() => {
  const cfg = JSON.parse(document.getElementById("viewer-config").textContent);
  const atlas = new Image();
  const ready = new Promise((resolve) => { atlas.onload = () => resolve(); atlas.onerror = () => resolve(); });
  atlas.src = cfg.atlas_uri;
  const TILE = cfg.atlas.tile;

  function tile(ctx, index, x, y, scale) {  // atlas tile `index` at canvas pixel (x, y), `scale` px per tile px
    if (!atlas.complete || !atlas.naturalWidth) return;
    const sx = (index % cfg.atlas.cols) * TILE, sy = Math.floor(index / cfg.atlas.cols) * TILE;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(atlas, sx, sy, TILE, TILE, x, y, TILE * scale, TILE * scale);
  }
  function unitTile(species, stars) {  // sprite with star pips, as the rendered views draw a unit
    return cfg.atlas.unit0 + 3 * species + Math.min(Math.max(stars, 1), 3) - 1;
  }
  // A seat's board (3 rows, row 0 the front, drawn on top) and optionally its bench below: slots int[32].
  function drawBoard(canvas, species, stars, scale, withBench) {
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = cfg.palette[0];
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const cell = TILE * scale;
    for (let r = 0; r < cfg.board_rows; r++) {
      for (let c = 0; c < cfg.board_cols; c++) {
        const slot = cfg.bench + r * cfg.board_cols + c;
        tile(ctx, species[slot] >= 0 ? unitTile(species[slot], stars[slot]) : cfg.atlas.empty_cell,
             c * cell, r * cell, scale);
      }
    }
    if (!withBench) return;
    const y = (cfg.board_rows + 0.5) * cell;
    ctx.fillStyle = cfg.palette[1];
    ctx.fillRect(0, y - scale, canvas.width, scale);
    for (let b = 0; b < cfg.bench; b++) {
      tile(ctx, species[b] >= 0 ? unitTile(species[b], stars[b]) : cfg.atlas.empty_cell, b * cell, y + scale, scale);
    }
  }
  // One frame of a recorded fight (docs/replays.md, "A fight"), `scale` canvas px per tile px. Each grid cell is
  // FIGHT_CELL tile px: the sprite inset by 1 px (away units on a shade-1 square, so the sides read apart), an hp bar
  // (2 px) and a mana bar (1 px) under it. Home fights at the bottom (row y drawn at 5 - y), with a label strip
  // above and below (`labels.away`, `labels.home`). The events of the `labels.span` ticks that led to this frame
  // show: a basic attack as a line from the attacker to its target, a cast as a frame around the caster and a
  // thick line to its target. At the fight's last frame a banner names the winner and the life each side loses.
  // The canvas is sized to fit (fightSize).
  const FIGHT_CELL = { w: 10, h: 13 }, FIGHT_LABEL = 9;
  function fightSize(scale) {
    return { w: cfg.grid_cols * FIGHT_CELL.w * scale, h: (cfg.grid_rows * FIGHT_CELL.h + 2 * FIGHT_LABEL) * scale };
  }
  function fightEventsByTick(fight) {  // {tick: [[unit, kind, target], ...]}, kept on the fight
    if (!fight._eventsByTick) {
      const by = {};
      (fight.events || []).forEach(([t, u, k, v]) => { (by[t] = by[t] || []).push([u, k, v]); });
      Object.defineProperty(fight, "_eventsByTick", { value: by, enumerable: false });
    }
    return fight._eventsByTick;
  }
  function fitText(ctx, text, width) {  // `text`, cut with an ellipsis to fit `width` px
    if (ctx.measureText(text).width <= width) return text;
    let n = text.length;
    while (n > 1 && ctx.measureText(text.slice(0, n) + "...").width > width) n--;
    return text.slice(0, n) + "...";
  }
  function drawFight(canvas, fight, frame, scale, labels) {
    const L = labels || {}, size = fightSize(scale);
    if (canvas.width !== size.w || canvas.height !== size.h) { canvas.width = size.w; canvas.height = size.h; }
    const ctx = canvas.getContext("2d"), cw = FIGHT_CELL.w * scale, ch = FIGHT_CELL.h * scale;
    const top = FIGHT_LABEL * scale, rows = cfg.grid_rows;
    ctx.fillStyle = cfg.palette[0];
    ctx.fillRect(0, 0, size.w, size.h);
    ctx.fillStyle = cfg.palette[2];  // the label strips and the line between the sides
    ctx.fillRect(0, 0, size.w, top);
    ctx.fillRect(0, size.h - top, size.w, top);
    ctx.fillRect(0, top + (rows / 2) * ch - scale / 2, size.w, Math.max(1, scale / 2));
    ctx.font = (6 * scale) + "px monospace";
    ctx.textBaseline = "middle";
    ctx.fillStyle = cfg.palette[0];
    ctx.fillText(fitText(ctx, L.away || "away", size.w - 2 * scale), scale, top / 2);
    ctx.fillText(fitText(ctx, L.home || "home", size.w - 2 * scale), scale, size.h - top / 2);
    if (!fight || !fight.units || !fight.frames) return;
    const u = fight.units, f = fight.frames, half = cfg.board_rows * cfg.board_cols;
    const t = Math.max(0, Math.min(frame, f.x.length - 1));
    const cellX = (i) => f.x[t][i] * cw, cellY = (i) => top + (rows - 1 - f.y[t][i]) * ch;
    for (let i = 0; i < u.species.length; i++) {
      const hp = f.hp[t][i];
      if (hp <= 0) continue;
      const px = cellX(i) + scale, py = cellY(i) + scale, w = TILE * scale;
      if (u.fighter[i] >= half) {
        ctx.fillStyle = cfg.palette[1];
        ctx.fillRect(px, py, w, w);
      }
      tile(ctx, unitTile(u.species[i], u.stars[i]), px, py, scale);
      const bar = (y, height, value, most) => {
        ctx.fillStyle = cfg.palette[1];
        ctx.fillRect(px, y, w, height);
        ctx.fillStyle = cfg.palette[3];
        ctx.fillRect(px, y, Math.min(TILE, Math.ceil(TILE * value / Math.max(most, 1))) * scale, height);
      };
      bar(py + w, 2 * scale, hp, u.max_hp[i]);
      if (f.mana && u.max_mana) bar(py + w + 2 * scale, scale, f.mana[t][i], u.max_mana[i]);
    }
    const byTick = fightEventsByTick(fight), span = Math.max(1, L.span || 1);
    const centre = (i) => [cellX(i) + cw / 2, cellY(i) + (TILE * scale) / 2 + scale];
    ctx.strokeStyle = cfg.palette[3];
    for (let tick = Math.max(0, t - span); tick < t; tick++) {
      (byTick[tick] || []).forEach(([a, kind, v]) => {
        if (v < 0) return;
        const [ax, ay] = centre(a), [vx, vy] = centre(v);
        ctx.lineWidth = kind === 2 ? 2 * scale : Math.max(1, scale / 2);
        ctx.beginPath();
        ctx.moveTo(ax, ay);
        ctx.lineTo(vx, vy);
        ctx.stroke();
        if (kind === 2) ctx.strokeRect(cellX(a) + scale / 2, cellY(a) + scale / 2, cw - scale, ch - scale);
      });
    }
    if (t === f.x.length - 1 && L.result) {  // the result, a line per ", "-separated part
      const lines = L.result.split(", "), line = 7 * scale, h = lines.length * line + 2 * scale;
      const y0 = top + (rows / 2) * ch - h / 2;
      ctx.globalAlpha = 0.85;
      ctx.fillStyle = cfg.palette[3];
      ctx.fillRect(0, y0, size.w, h);
      ctx.globalAlpha = 1;
      ctx.fillStyle = cfg.palette[0];
      ctx.textAlign = "center";
      lines.forEach((text, k) => ctx.fillText(fitText(ctx, text, size.w - 2 * scale), size.w / 2,
                                              y0 + scale + (k + 0.5) * line));
      ctx.textAlign = "start";
    }
  }
  // A readable name of action `a` of a seat whose slots are `species`/`stars` and shop `shop` (a state row).
  function slotName(slot) {
    if (slot < cfg.bench) return "bench " + slot;
    const cell = slot - cfg.bench;
    return "board r" + Math.floor(cell / cfg.board_cols) + "c" + (cell % cfg.board_cols);
  }
  function unitName(tables, species, stars, slot) {
    const s = species[slot];
    return s >= 0 ? tables.species[s] + " " + "*".repeat(stars[slot]) : "empty";
  }
  function actionName(a, tables, species, stars, shop) {
    const A = cfg.actions;
    if (a === A.end_turn) return "end turn";
    if (a >= A.buy && a < A.reroll) {
      const k = a - A.buy, s = shop ? shop[k] : -1;
      return "buy shop " + k + (s >= 0 ? " (" + tables.species[s] + ", " + tables.species_cost[s] + "g)" : "");
    }
    if (a === A.reroll) return "reroll";
    if (a === A.buy_xp) return "buy XP";
    if (a === A.lock) return "toggle shop lock";
    if (a >= A.sell && a < A.place) {
      const slot = a - A.sell;
      return "sell " + slotName(slot) + (species ? " (" + unitName(tables, species, stars, slot) + ")" : "");
    }
    const cells = cfg.board_rows * cfg.board_cols;
    if (a >= A.place && a < A.recall) {
      const b = Math.floor((a - A.place) / cells), c = (a - A.place) % cells;
      return "place bench " + b + (species ? " (" + unitName(tables, species, stars, b) + ")" : "") +
        " on " + slotName(cfg.bench + c);
    }
    if (a >= A.recall && a < A.num) {
      const c = a - A.recall;
      return "recall " + slotName(cfg.bench + c) +
        (species ? " (" + unitName(tables, species, stars, cfg.bench + c) + ")" : "");
    }
    return "action " + a + " (not in the table)";
  }
  return { cfg, atlas, ready, tile, unitTile, drawBoard, drawFight, fightSize, actionName };
})();
"""

VIEWER_JS = r"""
"use strict";
(() => {
  const R = JSON.parse(document.getElementById("replay").textContent);
  const cfg = JG.cfg, S = R.state, T = R.steps, N = cfg.num_players;
  const names = (R.players && R.players.names) || R.lineup;
  const policySeats = (R.players && R.players.policy_seats) || [];
  const fightsAt = {};
  (R.fights || []).forEach((f) => { (fightsAt[f.step] = fightsAt[f.step] || []).push(f); });
  const RESULT = ["", "won", "lost", "draw"];
  const BASE_STEP_MS = 700, FRAME_MS = 50, MAX_FIGHT_FRAMES = 60;
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const V = { step: 0, steps: T, focused: 0, playing: false, fight: null, fightFrame: 0, speed: 1 };
  let timer = null, sinceStep = 0;

  // --- the 8 seats -------------------------------------------------------------------------------------------
  const seatCards = [];
  for (let s = 0; s < N; s++) {
    const card = el("div", { class: "seat", "data-seat": s });
    const cv = el("canvas", { width: 128, height: 48 });
    const info = el("div");
    card.append(cv, info);
    card.addEventListener("click", () => focus(s));
    $("seats").append(card);
    seatCards.push({ card, cv, info });
  }
  // --- the focus panel ----------------------------------------------------------------------------------------
  const F = $("focus");
  F.innerHTML = '<h2 id="focus-title"></h2><canvas id="focus-board" width="320" height="180"></canvas>' +
    '<div class="stats" id="focus-stats"></div><h2>Shop</h2><div class="shop" id="focus-shop"></div>' +
    '<h2>Synergies</h2><div id="focus-synergy"></div><div id="focus-policy"></div>' +
    '<h2>Actions</h2><div id="log"></div>';

  function seatLabel(s) { return "seat " + s + " " + names[s]; }

  function drawSeats(t) {
    for (let s = 0; s < N; s++) {
      const { card, cv, info } = seatCards[s];
      JG.drawBoard(cv, S.species[t][s], S.stars[t][s], 2, false);
      const life = S.life[t][s], start = (R.rules && R.rules.starting_life) || Math.max(...S.life[0]);
      const rank = S.rank[t][s], alive = S.alive[t][s];
      card.classList.toggle("focused", s === V.focused);
      card.classList.toggle("out", !alive);
      info.innerHTML = "";
      const head = el("div", { class: "name", title: names[s] + " (key " + (s + 1) + ")" }, seatLabel(s));
      const bar = el("div", { class: "lifebar" });
      bar.append(el("div", { style: "width:" + Math.round(100 * Math.min(life / Math.max(start, 1), 1)) + "%" }));
      info.append(head, bar, el("div", {}, "life " + life + " " + S.gold[t][s] + "g lvl " + S.level[t][s]),
                  el("div", { class: "muted" }, alive ? (S.turn_ended[t][s] ? "turn ended" : "in the game")
                                                        : "out, rank " + rank));
    }
  }

  function drawFocus(t) {
    const s = V.focused;
    $("focus-title").textContent = "Seat " + s + ": " + names[s] +
      (S.alive[t][s] ? "" : " (out, rank " + S.rank[t][s] + ")");
    JG.drawBoard($("focus-board"), S.species[t][s], S.stars[t][s], 5, true);
    const stats = $("focus-stats");
    stats.innerHTML = "";
    const last = S.last_result[t][s], opp = S.last_opponent[t][s];
    const lastFight = last ? RESULT[last] + (opp >= 0 ? " vs seat " + opp : " vs creeps") : "-";
    [["life", S.life[t][s]], ["gold", S.gold[t][s]], ["level", S.level[t][s]], ["xp", S.xp[t][s]],
     ["streak", S.streak[t][s]], ["last fight", lastFight]]
      .forEach(([k, v]) => stats.append(el("span", {}, k + ": " + v)));
    const shop = $("focus-shop");
    shop.innerHTML = "";
    S.shop[t][s].forEach((sp, k) => {
      const slot = el("div", { class: "slot" }), cv = el("canvas", { width: 32, height: 32 });
      const ctx = cv.getContext("2d");
      ctx.fillStyle = cfg.palette[0];
      ctx.fillRect(0, 0, 32, 32);
      JG.tile(ctx, sp >= 0 ? cfg.atlas.species0 + sp : cfg.atlas.empty_cell, 0, 0, 4);
      slot.append(cv, el("div", {}, sp >= 0 ? R.tables.species[sp] : "-"),
                  el("div", { class: "muted" }, sp >= 0 ? R.tables.species_cost[sp] + "g" : ""));
      shop.append(slot);
    });
    if (S.shop_locked[t][s]) shop.append(el("div", { class: "muted" }, "(locked)"));
    const syn = S.synergy[t][s].map((lv, ty) => lv > 0 ? R.tables.types[ty] + " " + lv : null).filter((x) => x);
    $("focus-synergy").textContent = syn.length ? syn.join(", ") : "none";
    drawPolicy(t, s);
    drawLog(t, s);
  }

  function drawPolicy(t, s) {
    const box = $("focus-policy"), i = policySeats.indexOf(s);
    box.innerHTML = "";
    if (i < 0) return;
    box.append(el("h2", {}, "Policy"));
    if (t >= T) { box.append(el("div", { class: "muted" }, "the game is over")); return; }
    box.append(el("div", { id: "policy-value" }, "value " + R.policy.value[t][i].toFixed(3)));
    const table = el("table", { class: "policy" });
    R.policy.top_actions[t][i].forEach((a, k) => {
      if (a < 0) return;
      const p = R.policy.top_probs[t][i][k], row = el("tr", a === R.actions[t][s] ? { class: "now" } : {});
      const bar = el("span", { class: "bar", style: "width:" + Math.round(80 * p) + "px" });
      const cell = el("td");
      cell.append(bar);
      row.append(cell, el("td", {}, p.toFixed(3)),
                 el("td", {}, JG.actionName(a, R.tables, S.species[t][s], S.stars[t][s], S.shop[t][s]) +
                              (a === R.actions[t][s] ? "  <- taken" : "")));
      table.append(row);
    });
    box.append(table);
  }

  function drawLog(t, s) {
    const log = $("log");
    log.innerHTML = "";
    let now = null;
    for (let u = 0; u <= Math.min(t, T - 1); u++) {
      if (!S.alive[u][s] || S.turn_ended[u][s]) continue;  // its actions are no-ops then
      const a = R.actions[u][s];
      const line = el("div", u === t ? { class: "now" } : {},
        "r" + S.round[u] + "." + S.step_in_round[u] + "  " +
        JG.actionName(a, R.tables, S.species[u][s], S.stars[u][s], S.shop[u][s]));
      log.append(line);
      if (u === t) now = line;
    }
    if (!log.childElementCount) log.append(el("div", { class: "muted" }, "no actions yet"));
    log.scrollTop = log.scrollHeight;
    if (now) now.scrollIntoView({ block: "nearest" });
  }

  // --- fights ---------------------------------------------------------------------------------------------------
  function fightLabel(f) {
    return "r" + f.round + " " + f.kind + " seat " + f.home + (f.kind === "pve" ? " vs creeps" : " vs seat " + f.away);
  }
  function pickFight(t) {
    const list = fightsAt[t] || [], s = V.focused;
    return list.find((f) => f.home === s || (f.kind === "pvp" && f.away === s)) || list[0] || null;
  }
  function fightFrames(f) { return f && f.frames ? f.frames.x.length : 0; }
  function fightSkip(f) { return Math.max(1, Math.ceil(fightFrames(f) / MAX_FIGHT_FRAMES)); }
  function fightDone() { return !V.fight || V.fightFrame >= fightFrames(V.fight) - 1; }
  function showFight(f) {
    V.fight = f;
    V.fightFrame = 0;
    drawFightList();
    drawFightFrame();
  }
  function drawFightList() {
    const box = $("fight-list"), list = fightsAt[V.step] || [];
    box.innerHTML = "";
    if (!list.length) {
      box.append(el("div", { class: "muted" }, R.fights ? "no fights after this step" : "recorded without fights"));
    }
    list.forEach((f) => {
      const b = el("button", f === V.fight ? { class: "on" } : {}, fightLabel(f));
      b.addEventListener("click", () => showFight(f));
      box.append(b);
    });
  }
  function fightSides(f) {  // (home label, away label, the result's sentence) of fight f
    const away = f.kind === "pve" ? "creeps" : f.kind === "ghost" ? "a ghost of seat " + f.away
      : "seat " + f.away + " " + names[f.away];
    const res = f.result, loses = (side, seat) => (side > 0 ? seat + " loses " + side + " life" : null);
    const who = res.winner === 2 ? "a draw" : res.winner === 0 ? "seat " + f.home + " wins"
      : f.kind === "pve" ? "the creeps win" : (f.kind === "ghost" ? "the ghost" : "seat " + f.away) + " wins";
    const lost = [loses(f.life_damage.home, "seat " + f.home),
                  f.life_damage.away !== null ? loses(f.life_damage.away, "seat " + f.away) : null].filter((x) => x);
    return ["home: seat " + f.home + " " + names[f.home], "away: " + away,
            who + (lost.length ? ", " + lost.join(", ") : "")];
  }
  function drawFightFrame() {
    const f = V.fight;
    const [home, away, result] = f ? fightSides(f) : ["home", "away", ""];
    const span = f ? Math.max(1, Math.round(fightSkip(f) * V.speed)) : 1;  // the ticks since the last frame shown
    JG.drawFight($("fight"), f, V.fightFrame, 3, { home, away, result, span });
    if (!f) { $("fight-info").textContent = ""; return; }
    $("fight-info").textContent = fightLabel(f) + " | tick " + V.fightFrame + " / " + Math.max(fightFrames(f) - 1, 0) +
      (fightDone() ? " | " + result : "");
  }

  // --- placements -------------------------------------------------------------------------------------------------
  function drawPlacements(t) {
    const box = $("placements");
    box.innerHTML = "";
    if (t < T) {
      box.append(el("li", { class: "muted" }, "the final placements show at the game's end (step " + T + ")"));
      return;
    }
    if (!R.finished) {
      box.append(el("li", { class: "muted" }, "the game did not end within " + T + " steps"));
      return;
    }
    const order = R.placements.map((rank, seat) => [rank, seat]).sort((a, b) => a[0] - b[0]);
    order.forEach(([rank, seat]) => box.append(
      el("li", { "data-seat": seat, "data-rank": rank, class: rank === 1 ? "top" : "" },
         "rank " + rank + ": seat " + seat + " " + names[seat])));
  }

  // --- the timeline -----------------------------------------------------------------------------------------------
  function render() {
    const t = V.step;
    $("step").textContent = "step " + t + " / " + T;
    $("scrubber").value = String(t);
    const perRound = (R.rules && R.rules.steps_per_round) || null;
    const decision = perRound ? Math.min(S.step_in_round[t] + 1, perRound) : S.step_in_round[t] + 1;
    $("round").textContent = t >= T
      ? "round " + S.round[t] + ": " + (R.finished ? "the game is over" : "the step limit")
      : "round " + S.round[t] + ", decision " + decision + "/" + (perRound || "?") +
        (R.fight[t] ? ", fights follow" : "");
    drawSeats(t);
    drawFocus(t);
    drawPlacements(t);
  }
  function seek(n) {
    const t = Math.max(0, Math.min(T, Math.round(Number(n)) || 0));
    V.step = t;
    sinceStep = 0;
    render();
    showFight(pickFight(t));
    return t;
  }
  function focus(seat) {
    if (!(seat >= 0 && seat < N)) return V.focused;
    V.focused = seat;
    render();
    if (!V.playing) showFight(pickFight(V.step));
    return seat;
  }
  function tick() {  // every FRAME_MS: the fight animation, then (playing) the next step
    if (V.fight && !fightDone()) {
      V.fightFrame = Math.min(V.fightFrame + Math.max(1, Math.round(fightSkip(V.fight) * V.speed)),
                              fightFrames(V.fight) - 1);
      drawFightFrame();
      return;
    }
    if (!V.playing) return;
    sinceStep += FRAME_MS;
    if (sinceStep < BASE_STEP_MS / V.speed) return;
    if (V.step >= T) { pause(); return; }
    seek(V.step + 1);
  }
  function play() {
    if (V.step >= T) seek(0);
    V.playing = true;
    $("play").textContent = "pause";
    return true;
  }
  function pause() {
    V.playing = false;
    $("play").textContent = "play";
    return false;
  }
  const toggle = () => (V.playing ? pause() : play());

  $("scrubber").max = String(T);
  $("scrubber").addEventListener("input", (e) => { pause(); seek(e.target.value); });
  $("play").addEventListener("click", toggle);
  $("prev").addEventListener("click", () => { pause(); seek(V.step - 1); });
  $("next").addEventListener("click", () => { pause(); seek(V.step + 1); });
  $("speed").addEventListener("change", (e) => { V.speed = Number(e.target.value) || 1; });
  document.addEventListener("keydown", (e) => {
    if (e.target && e.target.tagName === "SELECT") return;
    if (e.key === " " || e.code === "Space") { toggle(); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { pause(); seek(V.step - 1); e.preventDefault(); }
    else if (e.key === "ArrowRight") { pause(); seek(V.step + 1); e.preventDefault(); }
    else if (e.key >= "1" && e.key <= String(N)) focus(Number(e.key) - 1);
  });

  window.viewer = {
    get step() { return V.step; }, steps: T, get focused() { return V.focused; }, get playing() { return V.playing; },
    get fightFrame() { return V.fightFrame; }, get fight() { return V.fight; }, record: R,
    seek, play, pause, focus,
  };
  seek(0);
  JG.ready.then(() => { render(); drawFightFrame(); });
  timer = setInterval(tick, FRAME_MS);
})();
"""

__all__ = [
    "DRAW_JS",
    "PAGE",
    "VIEWER_CSS",
    "VIEWER_JS",
    "atlas_data_uri",
    "atlas_png",
    "config",
    "config_json",
    "html",
    "script_json",
    "write_html",
]
