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
    for (const kind of ["bot", "agent", "league"]) {
      const group = document.createElement("optgroup");
      group.label = {bot: "Seed bots", agent: "Agents", league: "League members"}[kind];
      for (const o of options.opponents.filter((o) => o.kind === kind)) group.appendChild(new Option(o.label, o.id));
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

async function start(body) {
  lastSetup = body;
  try {
    show(await api("POST", "/api/games", body));
    history.replaceState(null, "", `#game=${view.id}`);
    setStatus("");
  } catch (err) {
    $("setup").hidden = false;
    setStatus(err.message, true);
    alert(err.message);
  }
}

async function act(path, body) {
  if (!view) return;
  busy = true;
  document.body.dataset.busy = "1";
  try {
    const next = await api("POST", `/api/games/${view.id}/${path}`, body);
    setStatus("");
    show(next);
  } catch (err) {
    setStatus(err.message, true);   // the game goes on: the server refused and nothing changed
    document.body.dataset.refusals = String(Number(document.body.dataset.refusals || 0) + 1);
  } finally {
    busy = false;
    document.body.dataset.busy = "";
  }
}

function show(next) {
  view = next;
  $("setup").hidden = true;
  $("table").hidden = false;
  const you = view.you, mover = view.current;
  const legal = {};
  for (const option of view.legal) legal[option.token] = option;
  drawBoard($("board"), view.board, view.tokens, {
    mover: view.turn === "move" ? you : null, legal: legal,
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
  for (const text of view.notices || []) notices.appendChild(Object.assign(document.createElement("p"), {textContent: text}));
  notices.hidden = !notices.children.length;
  const last = view.log.length ? view.log[view.log.length - 1] : null;
  const dieValue = view.die || (last ? last.die : 0);
  const dieSeat = view.turn === "roll" || view.turn === "move" ? you : (last ? last.seat : mover);
  drawDie($("die-face"), view.turn === "roll" ? 0 : dieValue, view.seats[dieSeat].colour);
  $("die").disabled = view.turn !== "roll";
  $("turn").textContent = {roll: "Your turn: click the die", move: `You rolled ${view.die}: pick a highlighted token`,
                           opponent: `${view.seats[mover].colour} (${view.seats[mover].player}) to play`,
                           over: "Game over"}[view.turn];
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
  if (view.over) {
    $("order").textContent = `Finishing order: ${view.order}`;
    const record = $("record");
    record.innerHTML = "";
    if (view.record) {
      record.append("Saved as ", Object.assign(document.createElement("code"), {textContent: view.record}), " (",
        Object.assign(document.createElement("a"), {href: `/replay#file=records/${encodeURIComponent(view.record)}&game=0`,
                                                    textContent: "replay it"}), ")");
    }
  }
  document.body.dataset.turn = view.turn;
  clearTimeout(stepTimer);
  if (view.turn === "opponent") stepTimer = setTimeout(() => act("step"), speed());
}

function setupBody() {
  return {variant: $("variant").value, players: Number($("players").value), seat: Number($("seat").value),
          opponents: [...document.querySelectorAll("#opponents select")].map((s) => s.value)};
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
  $("setup-again").addEventListener("click", () => {
    clearTimeout(stepTimer);
    view = null;
    history.replaceState(null, "", "#");
    $("table").hidden = true;
    $("setup").hidden = false;
    document.body.dataset.turn = "setup";
  });
  try {
    await loadOptions();
  } catch (err) {
    setStatus(err.message, true);
    return;
  }
  const match = location.hash.match(/game=([\w-]+)/);
  if (match) {
    try { show(await api("GET", `/api/games/${match[1]}`)); } catch (err) { setStatus(err.message, true); }
  }
  document.body.dataset.ready = "1";
});
