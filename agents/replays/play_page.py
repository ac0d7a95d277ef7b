"""The play page (``agents.replays.play_server`` serves it): one HTML file, its script, style and the game's tiles
inline, nothing fetched from elsewhere.

    text = page(token)          # the page of a server whose posts carry ``token``

The board, bench and shop are drawn with the replay viewer's tiles and palette (``viewer.DRAW_JS``, ``JG``). A
unit moves by dragging it (pointer events) or by clicking it and then a cell: bench to board places it (onto an
occupied cell: the two swap), board to bench recalls it, onto "sell" sells it. Buy is a click on a shop card;
reroll, XP, lock, sell and end turn are buttons with keys (1-6, R, F, L, S, E or Enter; Esc drops the selection).
After each round the person's own fight plays in the viewer's fight player, with the opponent named and the
round's results beside it. The other seats' boards are small pictures that open larger on a click, and a log
names every seat's actions with their units. ``document.body.dataset`` carries ``step``, ``done`` and ``legal``
(the legal action ids, comma-separated) for tests; ``window.play`` is a small API (``view``, ``move(from, to)``,
``select(slot)``, ``act(id)``).

A board-to-board move is not one action of the game (docs/rules.md): the page says to go through the bench.
"""

from __future__ import annotations

import json

from agents.replays import viewer


def page(token: str) -> str:
    """The play page of a server whose posts carry ``token``."""
    return (
        PAGE.replace("__CSS__", viewer.VIEWER_CSS + PLAY_CSS)
        .replace("__CONFIG__", viewer.config_json())
        .replace("__DRAW_JS__", viewer.DRAW_JS)
        .replace("__PLAY_JS__", PLAY_JS)
        .replace("__TOKEN__", json.dumps(token))
    )


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jaxgame: your seat</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>__CSS__</style></head>
<body>
<header><strong>jaxgame: your seat</strong><span id="status">loading ...</span><span id="stats"></span>
  <span class="help">drag or click a unit, then a cell &middot; 1-6 buy &middot; R reroll &middot; F XP &middot;
  L lock &middot; S sell &middot; E end turn &middot; Esc cancel</span></header>
<div id="error" role="alert" hidden></div>
<section id="over" hidden><h2>Game over</h2><p id="result"></p><table id="placements"></table><p id="saved"></p>
</section>
<main id="table">
<section id="me">
  <h2>Your board <span class="muted">(front row on top)</span></h2>
  <div id="board" class="slots-grid"></div>
  <h2>Bench</h2>
  <div id="bench" class="slots-grid"></div>
  <div id="hint" class="muted">&nbsp;</div>
  <div id="controls">
    <button class="action" data-kind="reroll" data-key="r">reroll <kbd>R</kbd></button>
    <button class="action" data-kind="xp" data-key="f">buy XP <kbd>F</kbd></button>
    <button class="action" data-kind="lock" data-key="l">lock <kbd>L</kbd></button>
    <button id="sell" data-drop="sell">sell <kbd>S</kbd></button>
    <button class="action end" data-kind="end" data-key="e">end turn <kbd>E</kbd></button>
  </div>
  <h2>Shop</h2>
  <div id="shop"></div>
  <h2>Synergies</h2>
  <div id="synergy"></div>
</section>
<section id="fight-panel">
  <h2>Your last fight</h2>
  <canvas id="fight" width="240" height="288"></canvas>
  <div id="fight-info" class="muted">no fight yet: it plays here after the round's last decision</div>
  <button id="replay-fight" hidden>replay the fight</button>
  <h2>The round's results</h2>
  <ul id="results"></ul>
</section>
<section id="others">
  <h2>The other seats <span class="muted">(click a board to open it)</span></h2>
  <div id="seats"></div>
  <h2>Log</h2>
  <div id="log"></div>
</section>
</main>
<script type="application/json" id="viewer-config">__CONFIG__</script>
<script>__DRAW_JS__</script>
<script>__PLAY_JS__</script>
</body></html>
"""

PLAY_CSS = r"""
header strong { font-size: 14px; }
#stats { font-weight: bold; }
#error { background: var(--c3); color: var(--c0); padding: 6px 10px; }
#over { margin: 10px; padding: 6px 10px; border: 2px solid var(--c3); background: #d0ecbc; }
#over td, #over th { padding: 1px 8px; text-align: left; }
main#table { grid-template-columns: minmax(340px, 1.3fr) 260px minmax(280px, 1fr); }
@media (max-width: 1000px) { main#table { grid-template-columns: 1fr; } }
.slots-grid { display: grid; grid-template-columns: repeat(8, 40px); gap: 2px; user-select: none; touch-action: none; }
.slot { width: 40px; height: 40px; border: 1px solid var(--c1); background: var(--c0); position: relative;
  cursor: pointer; display: flex; align-items: center; justify-content: center; }
.slot.unit { cursor: grab; }
.slot.selected { outline: 3px solid var(--c3); outline-offset: -2px; }
.slot.target { background: #d0ecbc; border-color: var(--c2); }
.slot canvas { pointer-events: none; }
#board .slot.front { border-top: 2px solid var(--c2); }
#controls { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0; }
#controls button, #shop button, #replay-fight { font: inherit; font-size: 12px; background: var(--c0); color: var(--c3);
  border: 1px solid var(--c3); padding: 3px 8px; cursor: pointer; }
#controls button:disabled, #shop button:disabled { opacity: 0.45; cursor: not-allowed; }
#controls button.end { background: var(--c2); color: var(--c0); font-weight: bold; }
#sell.armed { background: var(--c3); color: var(--c0); }
kbd { font: inherit; font-size: 10px; border: 1px solid currentColor; padding: 0 2px; }
#shop { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); gap: 4px; }
@media (max-width: 520px) { #shop { grid-template-columns: repeat(3, minmax(0, 1fr)); } }
#shop button { display: flex; flex-direction: column; align-items: center; padding: 3px; min-height: 96px; }
#shop button .types, #shop button .extra { font-size: 10px; }
#shop button .extra { font-weight: bold; }
#seats { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 4px; }
.other { border: 1px solid var(--c1); padding: 3px; display: grid; grid-template-columns: 132px 1fr; gap: 4px;
  font-size: 12px; cursor: pointer; }
.other.open { grid-template-columns: 1fr; }
.other.out { opacity: 0.45; }
.other .units { font-size: 10px; opacity: 0.8; }
#log { max-height: 220px; overflow-y: auto; border: 1px solid var(--c1); padding: 2px 4px; font-size: 12px; }
#log .me, #results .me { font-weight: bold; }
#results { padding-left: 16px; margin: 0; font-size: 12px; }
#ghost { position: fixed; pointer-events: none; opacity: 0.8; z-index: 5; }
"""

PLAY_JS = r"""
"use strict";
(() => {
  const TOKEN = __TOKEN__;
  const cfg = JG.cfg, A = cfg.actions, BENCH = cfg.bench, CELLS = cfg.board_rows * cfg.board_cols;
  const RESULTS = ["", "won", "lost", "draw"];
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    e.append(...children);
    return e;
  };
  let view = null, busy = false, legal = new Set(), selected = null, drag = null, shownFight = null;
  const history = [];
  const fightPlayer = { fight: null, frame: 0, timer: null, labels: {} };

  // --- talking to the server ------------------------------------------------------------------------------------
  function showError(text) { $("error").textContent = text || ""; $("error").hidden = !text; }
  async function load() {
    try {
      const r = await fetch("/state", { cache: "no-store" });
      show(await r.json());
    } catch (e) { showError("the game server does not answer (" + e + "); is it still running?"); }
  }
  async function act(id) {
    if (busy || !view || view.done) return;
    busy = true;
    document.body.dataset.busy = "1";
    select(null);
    try {
      const r = await fetch("/act", { method: "POST", headers: { "Content-Type": "application/json" },
                                      body: JSON.stringify({ action: id, step: view.step, session: TOKEN }) });
      const body = await r.json();
      busy = false;
      if (r.ok) { showError(""); show(body); } else { showError(body.error || "HTTP " + r.status); await load(); }
    } catch (e) {
      busy = false;
      showError("the game server does not answer (" + e + "); is it still running?");
    }
    document.body.dataset.busy = "0";
  }

  // --- moves: a unit from slot `from` to slot `to` (bench 0..7, board 8..31) --------------------------------------
  function moveAction(from, to) {  // [action id or null, why not]
    if (from === to) return [null, ""];
    const fromBench = from < BENCH, toBench = to < BENCH;
    if (fromBench && !toBench) return [A.place + from * CELLS + (to - BENCH), ""];
    if (!fromBench && toBench) return [A.recall + (from - BENCH), ""];
    if (!fromBench) return [null, "a board unit moves through the bench: drag it to the bench, then to its new cell"];
    return [null, "the bench has no order: drag a bench unit onto the board"];
  }
  function move(from, to) {
    const [id, why] = moveAction(from, to);
    if (id === null) { select(null); if (why) $("hint").textContent = why; return false; }
    act(id);
    return true;
  }
  function sell(slot) {
    if (slot === null || slot === undefined) { $("hint").textContent = "select a unit to sell first"; return; }
    act(A.sell + slot);
  }
  function select(slot) {
    selected = slot;
    document.querySelectorAll(".slot").forEach((s) => {
      const i = Number(s.dataset.slot);
      s.classList.toggle("selected", i === slot);
      s.classList.toggle("target", slot !== null && legal.has(moveAction(slot, i)[0]));
    });
    $("sell").classList.toggle("armed", slot !== null);
    const units = view ? view.you.slots : null;
    $("hint").textContent = slot === null || !units ? "\u00a0" :
      unitName(units.species[slot], units.stars[slot]) + " selected: click or drop it on a cell, or sell it (S)";
  }
  function unitName(species, stars) {
    return species >= 0 ? view.species_names[species] + " " + "*".repeat(stars) : "";
  }

  // --- the board and the bench -----------------------------------------------------------------------------------
  function slotElement(i) {
    const s = el("div", { class: "slot", "data-slot": i });
    s.append(el("canvas", { width: 32, height: 32 }));
    s.addEventListener("pointerdown", (e) => {
      if (busy || !view || view.done) return;
      e.preventDefault();
      if (view.you.slots.species[i] < 0) {  // an empty cell: the selected unit goes there
        if (selected !== null) move(selected, i);
        return;
      }
      drag = { from: i, x: e.clientX, y: e.clientY, moved: false };
    });
    return s;
  }
  for (let i = BENCH; i < BENCH + CELLS; i++) {
    const s = slotElement(i);
    if (i < BENCH + cfg.board_cols) s.classList.add("front");
    $("board").append(s);
  }
  for (let i = 0; i < BENCH; i++) $("bench").append(slotElement(i));
  const ghost = el("canvas", { id: "ghost", width: 32, height: 32, hidden: "" });
  document.body.append(ghost);
  document.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (!drag.moved && Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4) {
      drag.moved = true;
      select(drag.from);
      const u = view.you.slots, ctx = ghost.getContext("2d");
      ctx.clearRect(0, 0, 32, 32);
      JG.tile(ctx, JG.unitTile(u.species[drag.from], u.stars[drag.from]), 0, 0, 4);
      ghost.hidden = false;
    }
    if (drag.moved) { ghost.style.left = (e.clientX - 16) + "px"; ghost.style.top = (e.clientY - 16) + "px"; }
  });
  document.addEventListener("pointerup", (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    ghost.hidden = true;
    const under = document.elementFromPoint(e.clientX, e.clientY);
    const slot = under && under.closest("[data-slot]"), sellZone = under && under.closest("[data-drop=sell]");
    if (d.moved) {
      if (slot) move(d.from, Number(slot.dataset.slot));
      else if (sellZone) sell(d.from);
      else select(null);
      return;
    }
    if (selected !== null && selected !== d.from) { move(selected, d.from); return; }  // onto a unit: a swap
    select(selected === d.from ? null : d.from);
  });
  $("sell").addEventListener("click", () => sell(selected));
  document.querySelectorAll("#controls button.action").forEach((b) => {
    b.addEventListener("click", () => { if (b.dataset.action) act(Number(b.dataset.action)); });
  });
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    if (k >= "1" && k <= String(cfg.shop_size)) {
      const id = A.buy + Number(k) - 1;
      if (legal.has(id)) act(id);
    } else if (k === "escape") select(null);
    else if (k === "s") sell(selected);
    else if (k === "enter" || k === "e") act(A.end_turn);
    else {
      const b = document.querySelector("#controls button[data-key='" + k + "']");
      if (b && !b.disabled && b.dataset.action) act(Number(b.dataset.action));
      else return;
    }
    e.preventDefault();
  });

  function drawSlots(v) {
    const u = v.you.slots;
    document.querySelectorAll(".slot").forEach((s) => {
      const i = Number(s.dataset.slot), sp = u.species[i], ctx = s.firstChild.getContext("2d");
      ctx.clearRect(0, 0, 32, 32);
      if (sp >= 0) JG.tile(ctx, JG.unitTile(sp, u.stars[i]), 0, 0, 4);
      s.classList.toggle("unit", sp >= 0);
      s.title = sp >= 0 ? unitName(sp, u.stars[i]) : (i < BENCH ? "bench " + i : "board cell");
    });
  }

  // --- the controls and the shop ---------------------------------------------------------------------------------
  function controlId(kind) { return { reroll: A.reroll, xp: A.buy_xp, lock: A.lock, end: A.end_turn }[kind]; }
  function drawControls(v) {
    document.querySelectorAll("#controls button.action").forEach((b) => {
      const id = controlId(b.dataset.kind), label = v.labels[id];
      b.dataset.action = id;
      b.disabled = !legal.has(id);
      b.title = label || "";
      if (b.dataset.kind === "lock") b.firstChild.textContent = (v.you.shop_locked ? "unlock" : "lock") + " ";
    });
    $("sell").disabled = v.done;
  }
  function drawShop(v) {
    const shop = $("shop");
    shop.replaceChildren();
    v.you.shop.forEach((o, k) => {
      const id = A.buy + k;
      if (!o) { shop.append(el("button", { class: "action", "data-kind": "buy", disabled: "" }, "sold")); return; }
      const cv = el("canvas", { width: 32, height: 32 });
      JG.tile(cv.getContext("2d"), cfg.atlas.species0 + o.species, 0, 0, 4);
      const extra = [o.completes.length ? "completes " + o.completes.join(", ") : "",
                     o.copies >= 2 ? "a 3rd: 2 stars" : o.copies ? o.copies + " owned" : ""].filter(Boolean);
      const b = el("button", { class: "action", "data-kind": "buy", "data-action": id, "data-slot": k,
                               title: v.labels[id] || "buy " + o.name },
                   cv, el("span", { text: (k + 1) + " " + o.name + " " + o.cost + "g" }),
                   el("span", { class: "types", text: o.types.join(" / ") }),
                   el("span", { class: "extra", text: extra.join("; ") }));
      if (!legal.has(id)) b.disabled = true;
      b.addEventListener("click", () => act(id));
      shop.append(b);
    });
    if (v.you.shop_locked) shop.append(el("div", { class: "muted", text: "(locked for the next round)" }));
    const syn = v.you.synergy.map((lvl, t) => (lvl ? v.types[t] + " " + lvl : "")).filter(Boolean);
    $("synergy").textContent = syn.length ? syn.join(", ") : "none active";
  }

  // --- the person's fight ----------------------------------------------------------------------------------------
  function fightLabels(v, f) {
    const other = (s) => "seat " + s + " " + v.players[s];
    const mine = f.home === v.seat;
    const foe = f.kind === "pve" ? "creeps" : f.kind === "ghost" ? "a ghost of " + other(f.away)
      : other(mine ? f.away : f.home);
    const home = mine ? "you (seat " + v.seat + ")" : other(f.home), away = mine ? foe : "you (seat " + v.seat + ")";
    const res = f.result, youWon = (res.winner === 0) === mine && res.winner !== 2;
    const lost = mine ? f.life_damage.home : f.life_damage.away;
    const result = (res.winner === 2 ? "a draw" : youWon ? "you win" : "you lose") +
      (lost ? ", you lose " + lost + " life" : "");
    return { home: "home: " + home, away: "away: " + away, result, foe };
  }
  function playFight(v) {
    const f = v.fight;
    clearInterval(fightPlayer.timer);
    fightPlayer.fight = f;
    fightPlayer.frame = 0;
    $("replay-fight").hidden = !f;
    if (!f) return;
    const labels = fightLabels(v, f), frames = f.frames.x.length, skip = Math.max(1, Math.ceil(frames / 80));
    fightPlayer.labels = { ...labels, span: skip };
    const draw = () => {
      JG.drawFight($("fight"), f, fightPlayer.frame, 3, fightPlayer.labels);
      $("fight-info").textContent = "round " + f.round + " vs " + labels.foe + " | tick " + fightPlayer.frame + " / " +
        (frames - 1) + (fightPlayer.frame >= frames - 1 ? " | " + labels.result : "");
      document.body.dataset.fightFrame = fightPlayer.frame;
    };
    draw();
    fightPlayer.timer = setInterval(() => {
      if (fightPlayer.frame >= frames - 1) { clearInterval(fightPlayer.timer); return; }
      fightPlayer.frame = Math.min(frames - 1, fightPlayer.frame + skip);
      draw();
    }, 50);
  }
  $("replay-fight").addEventListener("click", () => playFight({ ...view, fight: fightPlayer.fight }));

  // --- the others, the results and the log -------------------------------------------------------------------------
  const opened = new Set();
  function drawOthers(v) {
    const box = $("seats");
    box.replaceChildren();
    for (const s of v.others) {
      const open = opened.has(s.seat);
      const cv = el("canvas", open ? { width: 256, height: 148 } : { width: 128, height: 48 });
      JG.drawBoard(cv, s.slots.species, s.slots.stars, open ? 4 : 2, open);
      const units = s.board.flat().concat(s.bench).filter(Boolean).map((u) => u.name + " " + "*".repeat(u.stars));
      const card = el("div", { class: "other" + (open ? " open" : "") + (s.alive ? "" : " out"), "data-seat": s.seat },
        cv, el("div", {},
          el("div", { class: "name", text: "seat " + s.seat + " " + s.player }),
          el("div", { text: s.alive ? "life " + s.life + " lvl " + s.level + " " + s.gold + "g"
                                    : "out, place " + s.rank }),
          el("div", { class: "muted", text: s.last_result ? RESULTS[s.last_result] +
                      (s.last_opponent >= 0 ? " vs seat " + s.last_opponent : " vs creeps") : "" }),
          el("div", { class: "units", text: units.length ? units.join(", ") : "no units" })));
      card.addEventListener("click", () => {
        if (open) opened.delete(s.seat); else opened.add(s.seat);
        drawOthers(view);
      });
      box.append(card);
    }
  }
  function drawResults(v) {
    $("results").replaceChildren(...v.round_results.map((text) =>
      el("li", { class: text.includes("seat " + v.seat + " (you)") ? "me" : "", text })));
  }
  function addLog(v) {
    if (!v.last_actions || history.length && history[history.length - 1].step === v.step) return;
    const lines = v.last_actions.filter((a) => a.id !== A.end_turn)
      .map((a) => ({ me: a.seat === v.seat, text: "seat " + a.seat + ": " + a.label }));
    history.push({ step: v.step, round: v.round, lines });
    const log = $("log");
    log.replaceChildren(...history.flatMap((h) => h.lines.map((l) =>
      el("div", { class: l.me ? "me" : "", text: "step " + h.step + "  " + l.text }))));
    log.scrollTop = log.scrollHeight;
  }

  // --- a view -----------------------------------------------------------------------------------------------------
  function show(v) {
    view = v;
    legal = new Set(v.legal.map((a) => a.id));
    v.labels = Object.fromEntries(v.legal.map((a) => [a.id, a.label]));
    v.players = Array.from({ length: cfg.num_players }, (_, s) => (s === v.seat ? "you" : ""));
    v.others.forEach((o) => { v.players[o.seat] = o.player; });
    document.body.dataset.step = v.step;
    document.body.dataset.done = v.done ? "1" : "0";
    document.body.dataset.legal = [...legal].join(",");
    const you = v.you, perRound = v.steps_per_round;
    $("status").textContent = v.done ? "the game is over after round " + v.round + " (" + v.step + " steps)"
      : "round " + v.round + "/" + v.max_rounds + ", decision " + Math.min(v.step_in_round + 1, perRound) + "/" +
        perRound + " \u00b7 seat " + v.seat;
    $("stats").textContent = "life " + you.life + " \u00b7 " + you.gold + " gold \u00b7 level " + you.level +
      " (xp " + you.xp + ") \u00b7 streak " + you.streak + (you.turn_ended ? " \u00b7 turn ended" : "") +
      (you.alive ? "" : " \u00b7 out of the game");
    drawSlots(v);
    select(null);
    drawControls(v);
    drawShop(v);
    drawOthers(v);
    drawResults(v);
    addLog(v);
    if (v.fight_step !== shownFight) { shownFight = v.fight_step; playFight(v); }
    $("over").hidden = !v.done;
    if (v.done) {
      const order = v.placements.map((p, s) => [p, s]).sort((a, b) => a[0] - b[0]);
      $("result").textContent = v.finished ? "You placed " + v.placements[v.seat] + " of 8."
        : "The game reached its step limit unfinished.";
      $("placements").replaceChildren(el("tr", {}, el("th", { text: "place" }), el("th", { text: "seat" }),
        el("th", { text: "player" })), ...order.map(([p, s]) => el("tr", { class: s === v.seat ? "me" : "",
          "data-seat": s }, el("td", { class: "place", text: p }), el("td", { text: s }),
          el("td", { text: v.players[s] }))));
      $("saved").textContent = v.saved ? "The game is saved as a replay: " + v.saved +
        (v.viewer ? " (viewer: " + v.viewer + ")" : "") : (v.save_error ? "Not saved: " + v.save_error : "");
    }
  }

  window.play = { get view() { return view; }, move, select, act, sell, get selected() { return selected; } };
  window.addEventListener("focus", () => { if (!busy) load(); });
  JG.ready.then(load);
})();
"""

__all__ = ["PAGE", "PLAY_CSS", "PLAY_JS", "page"]
