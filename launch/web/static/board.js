// The classic board as SVG, drawn from the server's geometry (launch/play.py's 15 x 15 grid).
"use strict";

const CELL = 40;
// a movable token's tap target, in board units: 44 px across on a 390 px phone's board (382 px for 600 units)
const HIT_RADIUS = CELL * 0.88;
const SVG_NS = "http://www.w3.org/2000/svg";
const COLOUR_NAMES = ["red", "green", "yellow", "blue"];
const FILL = {red: "#d32f2f", green: "#2e7d32", yellow: "#f9c80e", blue: "#1565c0"};
const PALE = {red: "#ffcdd2", green: "#c8e6c9", yellow: "#fff59d", blue: "#bbdefb"};

function svgEl(name, attrs, parent) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (parent) parent.appendChild(el);
  return el;
}

function cellRect(parent, [r, c], fill, cls) {
  return svgEl("rect", {x: c * CELL, y: r * CELL, width: CELL, height: CELL, fill: fill,
                        stroke: "#555", "stroke-width": 1, class: cls || "cell"}, parent);
}

// board: {track, columns, home, corners, colours (per seat)}; tokens: per seat, per token {cell, progress, where};
// opts: {legal: {token: option} for the mover, mover, chosen, onToken(seat, token), names}
function drawBoard(svg, board, tokens, opts) {
  opts = opts || {};
  svg.innerHTML = "";
  svg.setAttribute("viewBox", `0 0 ${15 * CELL} ${15 * CELL}`);
  const active = new Set(board.colours);
  const g = svgEl("g", {class: "ground"}, svg);
  svgEl("rect", {x: 0, y: 0, width: 15 * CELL, height: 15 * CELL, fill: "#fafafa"}, g);
  board.corners.forEach(([r0, c0], colour) => {
    const name = COLOUR_NAMES[colour];
    const fill = active.has(name) ? FILL[name] : "#bdbdbd";
    svgEl("rect", {x: c0 * CELL, y: r0 * CELL, width: 6 * CELL, height: 6 * CELL, fill: fill, stroke: "#555"}, g);
    svgEl("rect", {x: (c0 + 1) * CELL, y: (r0 + 1) * CELL, width: 4 * CELL, height: 4 * CELL, rx: 10,
                   fill: "#fff", stroke: "#555"}, g);
    for (let t = 0; t < 4; t++) {
      const r = r0 + 2 + Math.floor(t / 2), c = c0 + 2 + (t % 2);
      svgEl("circle", {cx: (c + 0.5) * CELL, cy: (r + 0.5) * CELL, r: CELL * 0.38,
                       fill: active.has(name) ? PALE[name] : "#eee", stroke: fill}, g);
    }
  });
  for (const sq of board.track) {
    const start = sq.start === null ? null : COLOUR_NAMES[sq.start];
    cellRect(g, sq.cell, start && active.has(start) ? FILL[start] : "#fff", "cell track");
    // the square's number, small in a corner: the move texts name squares ("square 14 -> 19")
    const n = svgEl("text", {x: sq.cell[1] * CELL + 2, y: sq.cell[0] * CELL + 2, class: "square-number",
                             "text-anchor": "start", "dominant-baseline": "hanging", "data-square": sq.square}, g);
    n.textContent = sq.square;
    if (start && active.has(start)) n.setAttribute("fill", "#fff");
    if (sq.safe || sq.star) {
      const t = svgEl("text", {x: (sq.cell[1] + 0.5) * CELL, y: (sq.cell[0] + 0.5) * CELL, class: "mark",
                               "text-anchor": "middle", "dominant-baseline": "central"}, g);
      t.textContent = sq.safe ? "\u2605" : "\u2726";
      if (start && active.has(start)) t.setAttribute("fill", "#fff");
    }
  }
  board.columns.forEach((cells, colour) => {
    const name = COLOUR_NAMES[colour];
    for (const cell of cells) cellRect(g, cell, active.has(name) ? FILL[name] : "#e0e0e0", "cell column");
  });
  const mid = 7.5 * CELL, lo = 6 * CELL, hi = 9 * CELL;
  const triangles = [[[lo, lo], [lo, hi]], [[lo, lo], [hi, lo]], [[hi, lo], [hi, hi]], [[lo, hi], [hi, hi]]];
  triangles.forEach(([[x1, y1], [x2, y2]], colour) => {
    const name = COLOUR_NAMES[colour];
    svgEl("polygon", {points: `${x1},${y1} ${x2},${y2} ${mid},${mid}`, stroke: "#555",
                      fill: active.has(name) ? FILL[name] : "#e0e0e0"}, g);
  });

  // tokens: several on one cell share it, a quarter each. A token the person can move also gets a hit area
  // (`HIT_RADIUS`, under every token so that a token drawn is always its own), so that a finger can take it on
  // a phone's board; tokens of one seat on one cell are one move, so the first of them takes the stack's.
  const byCell = new Map();
  tokens.forEach((row, seat) => row.forEach((tok) => {
    const key = tok.cell.join(",");
    if (!byCell.has(key)) byCell.set(key, []);
    byCell.get(key).push([seat, tok]);
  }));
  // the last move: its from and to squares ringed, captures crossed
  const marks = svgEl("g", {class: "marks"}, svg);
  if (opts.last && opts.last.from) {
    const [r, c] = opts.last.from;
    svgEl("rect", {x: c * CELL + 3, y: r * CELL + 3, width: CELL - 6, height: CELL - 6, rx: 6, class: "last-from"}, marks);
  }
  for (const [r, c] of opts.captures || []) {
    svgEl("circle", {cx: (c + 0.5) * CELL, cy: (r + 0.5) * CELL, r: CELL * 0.46, class: "capture-mark"}, marks);
    const x = svgEl("text", {x: (c + 0.5) * CELL, y: (r + 0.5) * CELL, class: "capture-cross", "text-anchor": "middle",
                             "dominant-baseline": "central"}, marks);
    x.textContent = "\u2715";
  }
  const hits = svgEl("g", {class: "hits"}, svg);
  const layer = svgEl("g", {class: "tokens"}, svg);
  for (const group of byCell.values()) {
    const hitSeats = new Set();
    group.forEach(([seat, tok], k) => {
      const colour = board.colours[seat];
      let cx = (tok.cell[1] + 0.5) * CELL, cy = (tok.cell[0] + 0.5) * CELL, radius = CELL * 0.34;
      if (group.length > 1) {
        cx += (k % 2 ? 1 : -1) * CELL * 0.22;
        cy += (Math.floor(k / 2) % 2 ? 1 : -1) * CELL * 0.22;
        radius = CELL * 0.25;
      }
      const isMover = opts.mover === seat;
      const option = isMover && opts.legal ? opts.legal[tok.token] : undefined;
      const classes = ["token", `seat-${seat}`];
      if (option) classes.push("legal", ...option.tags.map((t) => `tag-${t}`));
      if (isMover && opts.chosen === tok.token) classes.push("chosen");
      if (opts.last && opts.last.seat === seat && opts.last.token === tok.token) classes.push("last-moved");
      const tg = svgEl("g", {class: classes.join(" "), "data-seat": seat, "data-token": tok.token,
                             "data-progress": tok.progress, "data-colour": colour, "data-cell": tok.cell.join(","),
                             "data-cx": cx, "data-cy": cy}, layer);
      if (opts.last && opts.last.seat === seat && opts.last.token === tok.token) {
        svgEl("circle", {cx: cx, cy: cy, r: radius + 5, class: "last-ring"}, tg);
      }
      svgEl("circle", {cx: cx, cy: cy, r: radius, fill: FILL[colour], stroke: "#222", "stroke-width": 2}, tg);
      const label = svgEl("text", {x: cx, y: cy, "text-anchor": "middle", "dominant-baseline": "central",
                                   class: "token-label"}, tg);
      label.textContent = tok.token;
      const title = svgEl("title", {}, tg);
      title.textContent = `${colour} token ${tok.token}: ${tok.where}` + (option ? ` \u2014 ${option.text}` : "");
      if (opts.onToken) tg.addEventListener("click", () => opts.onToken(seat, tok.token));
      if (option && opts.onToken && !hitSeats.has(seat)) {
        hitSeats.add(seat);
        const centre = [(tok.cell[1] + 0.5) * CELL, (tok.cell[0] + 0.5) * CELL];
        const hit = svgEl("circle", {cx: centre[0], cy: centre[1], r: HIT_RADIUS, class: "hit",
                                     "data-seat": seat, "data-token": tok.token}, hits);
        hit.addEventListener("click", () => opts.onToken(seat, tok.token));
      }
    });
  }
}

// Where a token at `progress` stands, as launch/play.py's token_cell places it, from the board the server sent:
// the track from the seat's start square, then its home column, then home (track_steps is 51 with a home
// column, a full lap of 52 without one: every variant the board draws).
function cellAt(board, seat, token, progress) {
  const colour = COLOUR_NAMES.indexOf(board.colours[seat]);
  const column = board.columns[colour] || [];
  const steps = column.length ? 51 : 52, home = steps + column.length;
  if (progress < 0) {
    const [r0, c0] = board.corners[colour];
    return [r0 + 2 + Math.floor(token / 2), c0 + 2 + (token % 2)];
  }
  if (progress >= home) return board.home[colour];
  if (progress >= steps) return column[progress - steps];
  const start = board.track.find((sq) => sq.start === colour).square;
  const square = (start + progress) % board.track.length;
  return board.track.find((sq) => sq.square === square).cell;
}

// The cells a token walks through moving `die` from progress `from` to `to`: one square at a time, bouncing off
// home when the rules bounce; a star jump, a capture of the mover or an overshoot that finishes ends with a
// jump to where it landed. Leaving the base is one step onto the start square.
function movePath(board, seat, token, from, to, die) {
  const last = cellAt(board, seat, token, to);
  if (from < 0) return [last];
  const colour = COLOUR_NAMES.indexOf(board.colours[seat]);
  const column = (board.columns[colour] || []).length, home = (column ? 51 : 52) + column;
  const cells = [];
  let p = from, dir = 1;
  for (let k = 0; k < die; k++) {
    if (p + dir > home) dir = -1;
    p += dir;
    cells.push(cellAt(board, seat, token, p));
    if (p === home && to === home) break;
  }
  if (p !== to) cells.push(last);
  return cells;
}

const DIE_PIPS = {1: [[1, 1]], 2: [[0, 0], [2, 2]], 3: [[0, 0], [1, 1], [2, 2]], 4: [[0, 0], [0, 2], [2, 0], [2, 2]],
                  5: [[0, 0], [0, 2], [1, 1], [2, 0], [2, 2]], 6: [[0, 0], [1, 0], [2, 0], [0, 2], [1, 2], [2, 2]]};

function drawDie(svg, value, colour) {
  svg.innerHTML = "";
  svg.setAttribute("viewBox", "0 0 60 60");
  svgEl("rect", {x: 3, y: 3, width: 54, height: 54, rx: 10, fill: "#fff", stroke: colour ? FILL[colour] : "#333",
                 "stroke-width": 4}, svg);
  for (const [r, c] of DIE_PIPS[value] || []) {
    svgEl("circle", {cx: 15 + c * 15, cy: 15 + r * 15, r: 5, fill: "#222"}, svg);
  }
  if (!DIE_PIPS[value]) {
    const t = svgEl("text", {x: 30, y: 31, "text-anchor": "middle", "dominant-baseline": "central",
                             "font-size": 14, fill: "#333"}, svg);
    t.textContent = value === "wait" ? "\u2026" : "roll";
  }
  svg.setAttribute("data-value", DIE_PIPS[value] ? value : 0);
}

// When the server cannot be reached (stopped, restarting, the network gone), the page says so in one banner and
// asks again every RECONNECT_MS; once the server answers the banner goes by itself, and the page is told
// ("ludo-reconnected") so that it takes the server's state again.
const RECONNECT_MS = 2000;
let reconnectTimer = null;

function serverReachable(reachable) {
  let banner = document.getElementById("offline");
  if (!banner && reachable) return;
  if (!banner) {
    banner = Object.assign(document.createElement("div"), {id: "offline", hidden: true,
      textContent: "The server cannot be reached (stopped or restarting): trying again\u2026"});
    banner.setAttribute("role", "status");
    document.body.prepend(banner);
  }
  const was = !banner.hidden;
  banner.hidden = reachable;
  document.body.dataset.offline = reachable ? "" : "1";
  if (reachable) {
    clearInterval(reconnectTimer);
    reconnectTimer = null;
    if (was) window.dispatchEvent(new Event("ludo-reconnected"));
  } else if (!reconnectTimer) {
    reconnectTimer = setInterval(async () => {
      try { await fetch("/static/style.css", {cache: "no-store"}); } catch (err) { return; }
      serverReachable(true);
    }, RECONNECT_MS);
  }
}

async function api(method, path, body) {
  const init = {method: method, headers: {}};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {  // no answer at all: not the server refusing, the server gone
    serverReachable(false);
    throw new Error("the server cannot be reached: it may be stopped or restarting; this page tries again by itself");
  }
  serverReachable(true);
  let data;
  try { data = await response.json(); } catch (e) { data = {error: `the server answered ${response.status}`}; }
  if (!response.ok) {
    const refused = new Error(data.error || `the server answered ${response.status}`);
    refused.status = response.status;  // what a page may act on (a player token the server does not know: 403)
    throw refused;
  }
  return data;
}
