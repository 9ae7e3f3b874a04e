// The replay viewer: one recorded game, step by step, drawn as the engine placed every token.
"use strict";

const $ = (id) => document.getElementById(id);
let replay = null;  // GET /api/replay
let index = 0;      // 0..steps.length - 1: before that decision; steps.length: after the last one

function render() {
  const steps = replay.steps, atEnd = index >= steps.length;
  const step = atEnd ? null : steps[index];
  const legal = {};
  if (step) for (const option of step.legal) legal[option.token] = option;
  drawBoard($("replay-board"), replay.board, atEnd ? replay.final : step.tokens,
            {mover: step ? step.seat : null, legal: legal, chosen: step ? step.chosen : null});
  $("position").textContent = atEnd ? `end (${steps.length} decisions)` : `decision ${index + 1} of ${steps.length}`;
  $("position").dataset.index = index;
  drawDie($("replay-die"), step ? step.die : 0, step ? replay.colours[step.seat] : null);
  $("mover").textContent = step ? `${replay.colours[step.seat]} (${step.player}) rolled ${step.die}` : "after the last recorded move";
  $("move-text").textContent = step ? `Played: ${step.text}` : "";
  const moves = $("replay-moves");
  moves.innerHTML = "";
  for (const option of step ? step.legal : []) {
    const li = document.createElement("li");
    li.textContent = option.text + (option.token === step.chosen ? "  \u2190 played" : "");
    li.dataset.token = option.token;
    moves.appendChild(li);
  }
  const insight = step && step.insight;
  $("insight").hidden = !insight;
  const body = $("insight").querySelector("tbody");
  body.innerHTML = "";
  if (insight) {
    $("insight-kind").textContent = insight.kind;
    insight.tokens.forEach((value, token) => {
      if (value === null) return;
      const tr = document.createElement("tr");
      tr.dataset.token = token;
      tr.innerHTML = `<td>${token}</td><td>${insight.kind === "probabilities" ? (100 * value).toFixed(1) + " %" : value.toFixed(3)}</td>`;
      body.appendChild(tr);
    });
  }
  $("prev").disabled = $("first").disabled = index === 0;
  $("next").disabled = $("last").disabled = atEnd;
}

function go(to) {
  if (!replay) return;
  index = Math.max(0, Math.min(replay.steps.length, to));
  render();
}

async function open(file, game) {
  try {
    replay = await api("GET", `/api/replay?file=${encodeURIComponent(file)}&game=${game}`);
  } catch (err) {
    $("viewer").hidden = false;
    $("replay-title").textContent = err.message;
    return;
  }
  history.replaceState(null, "", `#file=${encodeURIComponent(file)}&game=${game}`);
  $("viewer").hidden = false;
  $("replay-title").textContent = `${replay.file} \u2014 ${replay.variant}, ${replay.players} players`;
  // the players in seat order (red first), as the board colours them
  const bySeat = [];
  for (const step of replay.steps) if (bySeat[step.seat] === undefined) bySeat[step.seat] = step.player;
  const seats = $("replay-seats");
  seats.innerHTML = "";
  replay.colours.forEach((colour, seat) => {
    const div = document.createElement("div");
    div.className = `seat colour-${colour}`;
    div.dataset.seat = seat;
    div.textContent = `${colour}: ${bySeat[seat] === undefined ? "no decisions" : bySeat[seat]}`;
    seats.appendChild(div);
  });
  for (const a of document.querySelectorAll("#record-list a")) {
    a.classList.toggle("current", a.dataset.file === file && Number(a.dataset.game) === game);
  }
  go(0);
}

async function list() {
  const {records} = await api("GET", "/api/records");
  const ol = $("record-list");
  ol.innerHTML = "";
  for (const r of records) {
    const li = document.createElement("li");
    if (r.error) {
      li.className = "error";
      li.textContent = `${r.file}: ${r.error}`;
    } else {
      const a = document.createElement("a");
      a.href = "#";
      a.dataset.file = r.file;
      a.dataset.game = r.game;
      a.textContent = `${r.file} #${r.game}`;
      a.addEventListener("click", (e) => { e.preventDefault(); open(r.file, r.game); });
      li.append(a, ` \u2014 ${r.variant}, ${r.decisions} decisions, ${r.players.join(", ")}`);
    }
    ol.appendChild(li);
  }
}

window.addEventListener("DOMContentLoaded", async () => {
  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(index - 1));
  $("next").addEventListener("click", () => go(index + 1));
  $("last").addEventListener("click", () => go(Infinity));
  document.addEventListener("keydown", (e) => {
    const to = {ArrowLeft: index - 1, ArrowRight: index + 1, Home: 0, End: Infinity}[e.key];
    if (to !== undefined) go(to);
  });
  await list();
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.get("file")) await open(params.get("file"), Number(params.get("game") || 0));
  document.body.dataset.ready = "1";
});
