// The play page: a game against the server's opponents, one request per roll, move or opponent turn.
"use strict";

const $ = (id) => document.getElementById(id);
let options = null;   // GET /api/options
let view = null;      // the game as the server last described it
let lastSetup = null; // the body of the last POST /api/games, for "play again"
let stepTimer = null;
let busy = false;

function speed() { return Number($("speed").value); }

function setStatus(text, isError) {
  $("status").textContent = text || "";
  $("status").className = isError ? "error" : "";
}

function fillSetup() {
  const variant = options.variants.find((v) => v.name === $("variant").value) || options.variants[0];
  const players = $("players");
  const chosenPlayers = Number(players.value) || 4;
  players.innerHTML = "";
  for (const n of variant.players) players.add(new Option(`${n}`, n, false, n === chosenPlayers));
  if (!players.value) players.value = variant.players[variant.players.length - 1];
  const n = Number(players.value);
  const seat = $("seat"), chosenSeat = Number(seat.value) || 0;
  seat.innerHTML = "";
  for (let s = 0; s < n; s++) seat.add(new Option(s === 0 ? "0 (rolls first)" : `${s}`, s, false, s === chosenSeat));
  const box = $("opponents");
  const previous = [...box.querySelectorAll("select")].map((s) => s.value);
  box.innerHTML = "";
  for (let k = 0; k < n - 1; k++) {
    const label = document.createElement("label");
    label.textContent = `Opponent ${k + 1} `;
    const select = document.createElement("select");
    select.id = `opponent-${k}`;
    select.className = "opponent";
    // An opponent that names its rule set (a champion) is offered only for games of that rule set.
    const fits = (o) => o.variant === undefined || (o.variant === variant.name && o.players === n);
    for (const kind of ["bot", "champion", "agent", "league"]) {
      const group = document.createElement("optgroup");
      group.label = {bot: "Seed bots", champion: "Champion", agent: "Agents", league: "League members"}[kind];
      for (const o of options.opponents.filter((o) => o.kind === kind && fits(o))) {
        group.appendChild(new Option(o.label, o.id));
      }
      if (group.children.length) select.appendChild(group);
    }
    select.value = previous[k] || "bot:hybrid";
    if (!select.value) select.selectedIndex = 0;
    label.appendChild(select);
    box.appendChild(label);
  }
}

async function loadOptions() {
  options = await api("GET", "/api/options");
  const variant = $("variant");
  for (const v of options.variants) variant.add(new Option(v.name, v.name, false, v.name === "classic"));
  if (!options.league) $("league-link").classList.add("off");
  fillSetup();
}

// the secret of each name this browser claimed (its first game under the name): sent with every later game
function nameTokenKey(name) { return `ludo-name-token:${name}`; }

async function start(body) {
  lastSetup = body;
  try {
    let game;
    try {
      game = await api("POST", "/api/games", body);
    } catch (err) {
      if (err.status !== 403 || !body.player || !/player token/.test(err.message)) throw err;
      forgetPlayerToken();  // not one this server issued (an older page made it up): the server gives a new one
      delete body.player;
      game = await api("POST", "/api/games", body);
    }
    if (game.player_token) {
      localStorage.setItem("ludo-player", game.player_token);
      body.player = game.player_token;  // "play again" sends it too
    }
    if (game.name_token && body.name) {
      localStorage.setItem(nameTokenKey(body.name), game.name_token);
      body.name_token = game.name_token;  // "play again" sends it too
    }
    show(game);
    history.replaceState(null, "", `#game=${view.id}`);
    setStatus("");
  } catch (err) {
    $("setup").hidden = false;
    setStatus(err.message, true);
    $("setup-status").textContent = err.message;  // said on the setup panel itself, not in a browser alert
  }
}

async function act(path, body) {
  if (!view) return;
  clearTimeout(autoTimer);
  autoTimer = null;
  busy = true;
  document.body.dataset.busy = "1";
  try {
    const next = await api("POST", `/api/games/${view.id}/${path}`, body);
    setStatus("");
    show(next);
  } catch (err) {
    // the game goes on: the server refused and nothing changed here; but another tab may have played, so
    // the page takes the server's view again (an opponent's turn stepped by another tab is not an error)
    if (path !== "step") setStatus(err.message, true);
    document.body.dataset.refusals = String(Number(document.body.dataset.refusals || 0) + 1);
    await refresh();
  } finally {
    busy = false;
    document.body.dataset.busy = presenting || autoTimer ? "1" : "";
  }
}

// ------------------------------------------------------------------ following the server
// The server's game is the truth: after a refusal, and every FOLLOW_MS while this tab is idle, the page asks
// for the game's version (its count of rolls and moves) and, when another tab moved on, takes the new view.
const FOLLOW_MS = 1500;

async function refresh() {
  if (!view) return;
  try {
    const fresh = await api("GET", `/api/games/${view.id}`);
    if (view && fresh.id === view.id && fresh.version !== view.version) show(fresh);
  } catch (err) { /* the game is gone from the server: the status already says why */ }
}

async function poll() {
  if (!view || busy || presenting || autoTimer || document.hidden) return;
  try {
    const now = await api("GET", `/api/games/${view.id}/version`);
    if (view && now.version !== view.version && !busy && !presenting) await refresh();
  } catch (err) { /* a server restarting: asked again at the next poll */ }
}

// this browser's player token (GET /api/saved lists its unfinished games): the server issues it with the first
// game (player_token), never the page; null before that
function playerToken() {
  const token = localStorage.getItem("ludo-player");
  return token && /^[A-Za-z0-9_-]{8,64}$/.test(token) ? token : null;
}

function forgetPlayerToken() { localStorage.removeItem("ludo-player"); }

async function loadSaved() {
  let games = [];
  const token = playerToken();
  if (token) {
    try {
      games = (await api("GET", `/api/saved?player=${encodeURIComponent(token)}`)).games;
    } catch (err) {
      if (err.status === 403) forgetPlayerToken();  // a token this server did not issue lists nothing
      games = [];
    }
  }
  const list = $("saved-list");
  list.innerHTML = "";
  for (const g of games) {
    const li = document.createElement("li");
    li.dataset.game = g.id;
    li.append(`${g.variant}, ${g.players} players, against ${g.opponents.join(", ")}: ${g.moves} moves, ` +
              `started ${g.started} `);
    const link = Object.assign(document.createElement("a"), {href: `/#game=${g.id}`, textContent: "resume",
                                                             className: "resume"});
    link.addEventListener("click", async (event) => {
      event.preventDefault();
      try {
        show(await api("GET", `/api/games/${g.id}`));
        history.replaceState(null, "", `#game=${g.id}`);
      } catch (err) { $("setup-status").textContent = err.message; }
    });
    li.appendChild(link);
    list.appendChild(li);
  }
  $("saved").hidden = !games.length;
}

function render(next) {
  view = next;
  $("setup").hidden = true;
  $("table").hidden = false;
  const you = view.you, mover = view.current;
  const legal = {};
  for (const option of view.legal) legal[option.token] = option;
  drawBoard($("board"), view.board, view.tokens, {
    mover: view.turn === "move" ? you : null, legal: legal, last: lastMove, captures: lastCaptures,
    onToken: (seat, token) => act("move", {token: token, seat: seat}),
  });
  const seats = $("seats");
  seats.innerHTML = "";
  for (const s of view.seats) {
    const div = document.createElement("div");
    div.className = `seat colour-${s.colour}` + (s.seat === mover && !view.over ? " to-move" : "");
    const place = view.places[s.seat] ? ` \u2014 place ${view.places[s.seat]}` : "";
    div.textContent = `${s.colour}: ${s.player}${place}`;
    seats.appendChild(div);
  }
  // An opponent that failed and was replaced: said for as long as the game lasts, not only once.
  const notices = $("notices");
  notices.innerHTML = "";
  for (const text of [view.warning, ...(view.notices || [])].filter(Boolean)) notices.appendChild(Object.assign(document.createElement("p"), {textContent: text}));
  notices.hidden = !notices.children.length;
  showDie(view);
  $("die").disabled = view.turn !== "roll";
  $("turn").textContent = {roll: "Your turn: click the die", move: `You rolled ${view.die}: pick a highlighted token`,
                           opponent: `Next: ${who(mover)}`, over: "Game over"}[view.turn];
  const moves = $("moves");
  moves.innerHTML = "";
  for (const option of view.legal) {
    const li = document.createElement("li");
    li.dataset.token = option.token;
    li.className = option.tags.map((t) => `tag-${t}`).join(" ");
    li.textContent = option.text + (option.tags.length ? `  [${option.tags.join(", ")}]` : "");
    li.addEventListener("click", () => act("move", {token: option.token}));
    moves.appendChild(li);
  }
  const log = $("log");
  log.innerHTML = "";
  view.log.slice().reverse().forEach((entry) => {
    const li = document.createElement("li");
    li.textContent = entry.text;
    li.className = `colour-${view.seats[entry.seat].colour}`;
    li.dataset.seat = entry.seat;
    li.dataset.die = entry.die;
    li.dataset.token = entry.token === null ? "" : entry.token;
    log.appendChild(li);
  });
  log.dataset.count = view.log.length;
  $("finish").hidden = !view.over;
  showBanner(view);
  if (view.over) {
    $("order").textContent = `Finishing order: ${view.order}`;
    $("rated").textContent = view.rated || "";
    const record = $("record");
    record.innerHTML = "";
    if (view.record) {
      record.append("Saved as ", Object.assign(document.createElement("code"), {textContent: view.record}), " (",
        Object.assign(document.createElement("a"), {href: `/replay#file=records/${encodeURIComponent(view.record)}&game=0`,
                                                    textContent: "replay it"}), ")");
    }
  }
  document.body.dataset.turn = view.turn;
  document.body.dataset.version = view.version;
  clearTimeout(stepTimer);
  clearTimeout(autoTimer);
  autoTimer = null;
  if (view.turn === "opponent") stepTimer = setTimeout(() => act("step"), speed());
  if (view.turn === "move" && view.legal.length === 1 && $("autoplay").checked) {
    // a forced move: played for you after a short pause (the setting "auto-play forced moves")
    const token = view.legal[0].token;
    follow.push({kind: "auto", token: token});
    autoTimer = setTimeout(() => { autoTimer = null; act("move", {token: token}); }, Math.max(300, speed() / 2));
  }
  document.body.dataset.busy = busy || presenting || autoTimer ? "1" : "";
}

// ------------------------------------------------------------------ following the game
// Each new view is compared with the last one: the die rolls in the roller's colour, a moved token walks its
// path square by square, a captured token is crossed out where it stood and goes back to its base, a roll with
// no move is held up for a moment. The pace follows the speed setting; at 0 ms, and when the system asks for
// reduced motion (`prefers-reduced-motion`), tokens are put in place at once.
const reducedMotion = window.matchMedia ? matchMedia("(prefers-reduced-motion: reduce)") : {matches: false};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const follow = [];  // what the page showed, in order ({kind: "roll" | "no-move" | "move" | "capture" | "auto" ...})
window.follow = follow;

function who(seat) { return `${view.seats[seat].colour} (${view.seats[seat].player})`; }
function animated() { return !reducedMotion.matches && speed() > 0; }
function stepMs() { return Math.round(Math.min(220, Math.max(60, speed() / 5))); }
function rollMs() { return Math.round(Math.min(700, Math.max(200, speed() / 2))); }
function holdMs() { return speed() > 0 ? Math.max(speed(), 700) : 0; }

function setBusy(on) { document.body.dataset.busy = on || busy || autoTimer ? "1" : ""; }

// What happened from one view of a game to the next: one new roll (with its move, or none), or your own roll
// that waits on your move; null when there is nothing to show step by step (another game, several rolls at once).
function changeOf(prev, next) {
  if (!prev || prev.id !== next.id || next.log.length < prev.log.length) return null;
  const fresh = next.log.slice(prev.log.length);
  if (fresh.length === 0) {
    return prev.turn === "roll" && next.turn === "move" ? {entry: {seat: next.you, die: next.die, token: null}, waits: true} : null;
  }
  if (fresh.length > 1) return null;
  const entry = fresh[0];
  const change = {entry: entry, waits: false, move: null, captured: [], shownRoll: prev.turn === "move"};
  if (entry.token !== null) {
    const before = prev.tokens[entry.seat][entry.token], after = next.tokens[entry.seat][entry.token];
    change.move = {seat: entry.seat, token: entry.token, from: before.cell,
                   path: movePath(next.board, entry.seat, entry.token, before.progress, after.progress, entry.die)};
    next.tokens.forEach((row, seat) => row.forEach((tok) => {
      const was = prev.tokens[seat][tok.token];
      if (seat !== entry.seat && tok.progress < was.progress) change.captured.push({seat: seat, token: tok.token, cell: was.cell});
    }));
  }
  return change;
}

// the last move, marked on the board until the next one: its token ringed, where it came from outlined,
// whatever it captured crossed out
let lastMove = null, lastCaptures = [];

function rememberLast(next, change) {
  if (change && change.move) {
    lastMove = {seat: change.move.seat, token: change.move.token, from: change.move.from};
    lastCaptures = change.captured.map((c) => c.cell);
  } else if (!change && next.log.length) {
    const entry = [...next.log].reverse().find((e) => e.token !== null);
    lastMove = entry ? {seat: entry.seat, token: entry.token, from: null} : null;
    lastCaptures = [];
  } else if (!next.log.length) {
    lastMove = null;
    lastCaptures = [];
  }
}

// the die as it stands: whose roll it shows, said beside it
function showDie(v, entry) {
  const last = entry || (v.log.length ? v.log[v.log.length - 1] : null);
  const owner = $("die-owner");
  let seat, value;
  if (v.turn === "roll") [seat, value] = [v.you, 0];
  else if (v.turn === "move") [seat, value] = [v.you, v.die];
  else if (last) [seat, value] = [last.seat, last.die];
  else [seat, value] = [v.current, 0];
  drawDie($("die-face"), value, v.seats[seat].colour);
  $("die-face").dataset.seat = seat;
  owner.className = `colour-${v.seats[seat].colour}`;
  if (v.turn === "move") owner.textContent = "You rolled " + v.die;
  else if (last) {
    owner.textContent = last.seat === v.you ? `You rolled ${last.die}` : `${who(last.seat)} rolled ${last.die}`;
    if (last.token === null) owner.textContent += /third six/.test(last.text) ? ": the third six, the roll is lost" : ": no legal move";
  } else owner.textContent = "";
  owner.classList.toggle("no-move", v.turn !== "roll" && v.turn !== "move" && !!last && last.token === null);
  owner.dataset.seat = value ? seat : "";
}

function showBanner(v) {
  const banner = $("banner");
  if (!v.over) { banner.hidden = true; delete banner.dataset.shown; return; }
  if (banner.dataset.shown === v.id) return;  // closed by the person: stays closed for this game
  banner.dataset.shown = v.id;
  const first = v.seats.find((s) => v.places[s.seat] === 1);
  const won = first && first.seat === v.you;
  $("banner-title").textContent = won ? "You win!" : first ? `${first.colour} (${first.player}) wins` : "Game over";
  banner.className = won ? "won" : "lost";
  if (first) banner.style.setProperty("--seat", FILL[first.colour]);
  $("banner-order").textContent = v.place_text || (v.order ? `Finishing order: ${v.order}` : "");
  banner.hidden = false;
  follow.push({kind: "banner", winner: first ? first.seat : null});
}

let presenting = false, followSeq = 0, autoTimer = null;

function show(next) {
  const prev = view;
  const change = changeOf(prev, next);
  const seq = ++followSeq;
  clearTimeout(stepTimer);
  clearTimeout(autoTimer);
  autoTimer = null;
  if (!change) {
    presenting = false;
    if (!(prev && prev.id === next.id && prev.log.length === next.log.length)) rememberLast(next, null);
    render(next);
    return;
  }
  presenting = true;
  setBusy(true);
  present(prev, next, change, seq).catch((err) => console.warn(err)).finally(() => {
    if (seq !== followSeq) return;
    presenting = false;
    rememberLast(next, change);
    render(next);
  });
}

async function present(prev, next, change, seq) {
  const entry = change.entry, colour = next.seats[entry.seat].colour;
  const stale = () => seq !== followSeq;
  view = next;  // requests made now (none: the die and the tokens wait) name the new view's game
  $("die").disabled = true;
  $("moves").innerHTML = "";  // the choice is made: nothing to click while it is shown
  const face = $("die-face"), owner = $("die-owner");
  owner.className = `colour-${colour}`;
  owner.classList.remove("no-move");
  owner.textContent = entry.seat === next.you ? "You roll\u2026" : `${who(entry.seat)} rolls\u2026`;
  $("turn").textContent = "";
  if (animated() && !change.shownRoll) {
    $("die").classList.add("rolling");
    const end = performance.now() + rollMs();
    while (performance.now() < end) {
      drawDie(face, 1 + Math.floor(Math.random() * 6), colour);
      face.dataset.value = 0;  // not a roll yet
      await sleep(70);
      if (stale()) return;
    }
    $("die").classList.remove("rolling");
  }
  drawDie(face, entry.die, colour);
  face.dataset.seat = entry.seat;
  owner.dataset.seat = entry.seat;
  owner.textContent = entry.seat === next.you ? `You rolled ${entry.die}` : `${who(entry.seat)} rolled ${entry.die}`;
  follow.push({kind: "roll", seat: entry.seat, die: entry.die});
  if (change.waits) return;
  if (change.move === null) {  // a roll with no move: said, and held up for a moment
    const lost = /third six/.test(entry.text);
    owner.textContent += lost ? ": the third six, the roll is lost" : ": no legal move";
    owner.classList.add("no-move");
    document.body.dataset.noMove = "1";
    $("board").classList.add("no-move");
    $("board-note").textContent = lost ? `${colour}: third six, roll lost` : `${colour} rolled ${entry.die}: no move`;
    $("board-note").hidden = false;
    follow.push({kind: "no-move", seat: entry.seat, die: entry.die});
    await sleep(holdMs());
    $("board-note").hidden = true;
    $("board").classList.remove("no-move");
    document.body.dataset.noMove = "";
    return;
  }
  if (!animated()) {
    follow.push({kind: "move", seat: entry.seat, token: entry.token, animated: false, from: change.move.from,
                 path: change.move.path});
    if (change.captured.length) follow.push({kind: "capture", tokens: change.captured});
    return;
  }
  // the board as it was, but for the roll: the mover and whatever it captures still stand where they stood
  const shown = next.tokens.map((row) => row.map((tok) => ({...tok})));
  shown[entry.seat][entry.token].cell = change.move.from;
  for (const c of change.captured) shown[c.seat][c.token].cell = c.cell;
  drawBoard($("board"), next.board, shown, {last: {seat: entry.seat, token: entry.token, from: null}, captures: lastCaptures});
  const svg = $("board");
  const el = (seat, token) => svg.querySelector(`.token[data-seat="${seat}"][data-token="${token}"]`);
  const walker = el(entry.seat, entry.token);
  walker.classList.add("walking");
  walker.parentNode.appendChild(walker);  // over the others while it walks
  const ms = stepMs();
  const place = (node, cell, duration) => {
    const dx = (cell[1] + 0.5) * CELL - Number(node.dataset.cx), dy = (cell[0] + 0.5) * CELL - Number(node.dataset.cy);
    node.style.transition = `transform ${duration}ms ease-in-out`;
    node.style.transform = `translate(${dx}px, ${dy}px)`;
    node.dataset.cell = cell.join(",");
  };
  follow.push({kind: "move", seat: entry.seat, token: entry.token, animated: true, path: change.move.path});
  for (const cell of change.move.path) {
    place(walker, cell, ms);
    await sleep(ms);
    if (stale()) return;
  }
  if (change.captured.length) {
    follow.push({kind: "capture", tokens: change.captured});
    const layer = svg.querySelector(".marks");
    for (const c of change.captured) {
      svgEl("circle", {cx: (c.cell[1] + 0.5) * CELL, cy: (c.cell[0] + 0.5) * CELL, r: CELL * 0.7, class: "capture-burst"}, layer);
    }
    await sleep(2 * ms);
    for (const c of change.captured) {
      const node = el(c.seat, c.token);
      node.classList.add("captured");
      place(node, cellAt(next.board, c.seat, c.token, -1), 4 * ms);
    }
    await sleep(4 * ms);
  }
}

function setupBody() {
  const body = {variant: $("variant").value, players: Number($("players").value), seat: Number($("seat").value),
                opponents: [...document.querySelectorAll("#opponents select")].map((s) => s.value)};
  const player = playerToken();
  if (player) body.player = player;
  const name = $("name").value.trim();
  localStorage.setItem("ludo-name", name);
  if (name) {
    body.name = name;
    const secret = localStorage.getItem(nameTokenKey(name));
    if (secret) body.name_token = secret;
  }
  return body;
}

window.addEventListener("DOMContentLoaded", async () => {
  const saved = localStorage.getItem("ludo-speed");
  if (saved !== null) $("speed").value = saved;
  $("speed-value").textContent = `${speed()} ms`;
  $("speed").addEventListener("input", () => {
    $("speed-value").textContent = `${speed()} ms`;
    localStorage.setItem("ludo-speed", $("speed").value);
  });
  $("variant").addEventListener("change", fillSetup);
  $("players").addEventListener("change", fillSetup);
  $("start").addEventListener("click", () => start(setupBody()));
  $("die").addEventListener("click", () => act("roll"));
  $("again").addEventListener("click", () => start(lastSetup || setupBody()));
  $("banner-again").addEventListener("click", () => start(lastSetup || setupBody()));
  $("banner-close").addEventListener("click", () => { $("banner").hidden = true; });
  const autoplay = localStorage.getItem("ludo-autoplay");
  if (autoplay !== null) $("autoplay").checked = autoplay === "1";
  $("autoplay").addEventListener("change", () => localStorage.setItem("ludo-autoplay", $("autoplay").checked ? "1" : "0"));
  $("setup-again").addEventListener("click", () => {
    clearTimeout(stepTimer);
    clearTimeout(autoTimer);
    autoTimer = null;
    followSeq++;
    presenting = false;
    view = null;
    history.replaceState(null, "", "#");
    $("table").hidden = true;
    $("setup").hidden = false;
    document.body.dataset.turn = "setup";
    loadSaved();
  });
  $("name").value = localStorage.getItem("ludo-name") || "";
  setInterval(poll, FOLLOW_MS);
  window.addEventListener("ludo-reconnected", () => {  // the server is back: its view of the game is the truth
    setStatus("");
    if (view) refresh(); else loadSaved();
  });
  try {
    await loadOptions();
  } catch (err) {
    setStatus(err.message, true);
    return;
  }
  await loadSaved();
  const match = location.hash.match(/game=([\w-]+)/);
  if (match) {
    try { show(await api("GET", `/api/games/${match[1]}`)); } catch (err) { setStatus(err.message, true); }
  }
  document.body.dataset.ready = "1";
});
