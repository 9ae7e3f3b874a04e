"""The league leaderboard: a ranking of the members and a self-contained HTML dashboard.

    rows = ranking(store)                       # one dict per member, strongest first
    run.log({"league/ranking": ranking_table(rows)})
    Path("leaderboard.html").write_text(render_html(store, metrics, title="ppo_selfplay"))

`ranking` orders every member who ever joined (evicted ones too, marked by
``active``) by `ranked`: its ``rank`` is 1 + the number of members whose
openskill rating is clearly above its own (its 95% interval, mu +- 1.96
sigma, wholly above: `policies.league.ratings.shared_ranks`), so members
within noise of each other share a rank and every member of rank 1
is best within the intervals; rows of one rank go by mu. A member that never
played a rated game has no rank (None) and comes last: a rating nothing has
tested says nothing. Ranking by ``ordinal = mu - 3 sigma`` instead would put
a member down for its sigma, which is larger for main (widened every round,
as it trains) and for members that played little, not for playing worse.
Its columns are `COLUMNS`: ``games`` counts the rated matches
the member sat in; ``ahead_of_field`` its score against the field over them
(`policies.league.ratings.field_scores`: the share of its opponents it
finished ahead of, per game; None before its first game), the steadier order
after round robins, since openskill's ratings follow the latest games;
``win_rate_vs_random`` is its greedy win rate against
``players - 1`` random bots from its panel evaluation (None when it was
never evaluated, such as the bots themselves).

`render_html` builds one HTML file that opens offline (plotly.js is inlined
once, in the head; a server gives ``plotly_src``, its cached copy, instead) with four sections:

* ``#ranking``: the ranking as an HTML table, one ``<tr data-member=name>`` per member;
* ``#rating-history``: each member's mu after every rating round, over training
  iterations (over rating rounds when some round has no iteration);
* ``#head-to-head``: the share of the games both played in which the row member
  finished ahead of the column member, with the game counts;
* ``#training-curves``: main's win rate against each panel opponent over
  environment steps, from the run's ``metrics.jsonl`` rows that carry ``eval/`` keys (at the env steps
  of the weights played, ``eval/env_steps``, where a row names them).

A section with nothing to show yet keeps its id and holds a one-line note.
Member names come from users (external agents), so every name is escaped,
in the table and in the plot labels (plotly reads labels as HTML).
"""
from __future__ import annotations

import functools
import html
import json
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.league.ratings import CLEARLY_AHEAD_Z, field_scores, head_to_head, shared_ranks
from policies.league.store import LeagueStore, Match, Member

COLUMNS = ("rank", "name", "kind", "role", "mu", "sigma", "ordinal", "games", "ahead_of_field", "win_rate_vs_random",
           "iteration", "active")
PANEL_BASELINE = "random"
EVAL_PREFIX = "eval/win_rate_vs_"
MISSING = "\u2013"  # an en dash: a cell with no value

PLOT_IDS = ("rating-history", "head-to-head", "training-curves")
MAX_ANNOTATED = 14  # members up to which the head-to-head cells carry their numbers


# ---------------------------------------------------------------------------- ranking
@dataclass(frozen=True)
class _League:
    """Everything a page shows, read once: training may write between two reads of a live database."""

    path: str
    members: list[Member]  # ranked, strongest first
    ranks: list[int | None]  # each member's shared rank (`ranked`)
    matches: list[Match]
    history: list[dict[str, Any]]
    rounds: int

    @classmethod
    def read(cls, store: LeagueStore) -> _League:
        matches = store.matches()
        order = ranked(store.members(), games_played(matches))
        return cls(str(store.path), [m for m, _ in order], [rank for _, rank in order], matches,
                   store.rating_history(), len(store.rounds()))


def games_played(matches: Sequence[Match]) -> Counter:
    """Rated games per member id, a member counted once per game whatever seats it held."""
    played: Counter = Counter()
    for match in matches:
        played.update(set(match.seats))
    return played


def ranked(members: Sequence[Member], games: Mapping[int, int]) -> list[tuple[Member, int | None]]:
    """`members` strongest first, each with its shared rank (module docstring); those without a rated game in
    `games` (per member id) last, by mu, with rank None."""
    by_name = sorted(members, key=lambda m: m.name)  # one order across renders for equal ratings
    played = {m.id: m for m in by_name if games.get(m.id)}
    order = [(played[i], rank) for i, rank in shared_ranks({i: (m.mu, m.sigma) for i, m in played.items()})]
    unplayed = sorted((m for m in by_name if m.id not in played), key=lambda m: -m.mu)
    return order + [(m, None) for m in unplayed]


def mu_interval(member: Member) -> tuple[float, float]:
    """The member's mu with its 95% interval, as the ranking compares them."""
    return member.mu - CLEARLY_AHEAD_Z * member.sigma, member.mu + CLEARLY_AHEAD_Z * member.sigma


def _panel_entry(member: Member, opponent: str = PANEL_BASELINE) -> dict[str, Any] | None:
    entry = (member.panel or {}).get(opponent)
    if not isinstance(entry, dict) or not isinstance(entry.get("win_rate"), (int, float)):
        return None
    return entry if math.isfinite(entry["win_rate"]) else None  # NaN: an evaluation with no finished game


def ranking(store: LeagueStore) -> list[dict[str, Any]]:
    """One row per member (evicted ones included), strongest first (`ranked`), with the keys in `COLUMNS`."""
    return _ranking(_League.read(store))


def _ranking(league: _League) -> list[dict[str, Any]]:
    played = games_played(league.matches)
    scores = field_scores((m.seats, m.places) for m in league.matches)
    rows = []
    for rank, member in zip(league.ranks, league.members):
        panel = _panel_entry(member)
        score = scores.get(member.id)
        rows.append({
            "rank": rank,
            "name": member.name,
            "kind": member.kind,
            "role": member.role,
            "mu": member.mu,
            "sigma": member.sigma,
            "ordinal": member.ordinal,
            "games": played.get(member.id, 0),
            "ahead_of_field": None if score is None else score[0],
            "win_rate_vs_random": None if panel is None else float(panel["win_rate"]),
            "iteration": member.iteration,
            "active": member.active,
        })
    return rows


def ranking_table(rows: Sequence[dict[str, Any]]):
    """`ranking`'s rows as a ``wandb.Table``, for training to log after each evaluation round."""
    import wandb

    return wandb.Table(columns=list(COLUMNS), data=[[row[c] for c in COLUMNS] for row in rows])


# ---------------------------------------------------------------------------- figures
def _label(name: str) -> str:
    return html.escape(name, quote=False)


def _base_layout(x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    # no plot title: the section heading above each plot says what it shows
    layout = {
        "template": "plotly_white",
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}},
        "margin": {"l": 70, "r": 30, "t": 40, "b": 60},  # the top keeps the mode bar off the plot
        "height": 440,
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
        "hovermode": "closest",
    }
    return {**layout, **extra}


def _history_points(history: Sequence[dict[str, Any]]) -> tuple[list[Any], str]:
    """The x position of each history row and the axis title.

    Training rounds carry an iteration; a league played outside training (bots
    only, or between runs) does not. Mixing the two on one axis would place
    rounds by unrelated numbers, so iterations are used only when every row has
    one; otherwise every row is placed by the order of its rating round.
    """
    if history and all(row["iteration"] is not None for row in history):
        return [row["iteration"] for row in history], "training iteration"
    order: dict[Any, int] = {}
    xs = []
    for row in history:
        # set_ratings writes one timestamp per call, so it stands in for a round id that was not given
        key = ("round", row["round_id"]) if row["round_id"] is not None else ("time", row["created_at"])
        xs.append(order.setdefault(key, len(order) + 1))
    return xs, "rating round"


def _rating_history_figure(league: _League):
    import plotly.graph_objects as go

    history = league.history
    if not history:
        return None
    xs, x_title = _history_points(history)
    by_member: dict[int, list[tuple[Any, dict[str, Any]]]] = {}
    for x, row in zip(xs, history):
        by_member.setdefault(row["member_id"], []).append((x, row))
    fig = go.Figure()
    for member in league.members:  # legend in ranking order
        points = by_member.get(member.id)
        if not points:
            continue
        fig.add_trace(go.Scatter(
            x=[x for x, _ in points],
            y=[row["mu"] for _, row in points],
            customdata=[[row["sigma"], MISSING if row["iteration"] is None else row["iteration"]]
                        for _, row in points],
            mode="lines+markers",
            name=_label(member.name),
            line={"dash": "solid" if member.active else "dot"},
            # the name comes in through fullData: a name inside the template could hold %{...}
            hovertemplate=("<b>%{fullData.name}</b><br>mu %{y:.2f} \u00b1 %{customdata[0]:.2f}"
                           "<br>iteration %{customdata[1]}<extra></extra>"),
        ))
    fig.update_layout(**_base_layout(x_title, "openskill mu"))
    return fig


def _head_to_head_figure(league: _League):
    import plotly.graph_objects as go

    records = head_to_head((m.seats, m.places) for m in league.matches)
    if not records:
        return None
    met = {member_id for pair in records for member_id in pair}
    order = [m for m in league.members if m.id in met]  # strongest first, top row and left column
    labels = [_label(m.name) for m in order]
    z, text = [], []
    for a in order:
        z_row, text_row = [], []
        for b in order:
            ahead, games = records.get((a.id, b.id), (0, 0))
            z_row.append(ahead / games if games else None)
            text_row.append(f"{ahead / games:.0%}<br>{ahead}/{games}" if games else "")
        z.append(z_row)
        text.append(text_row)
    # past a dozen or so members the cells get too small to read; the counts stay in the hover text
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, text=text, texttemplate="%{text}" if len(order) <= MAX_ANNOTATED else "",
        textfont={"size": 11},
        zmin=0.0, zmax=1.0, zmid=0.5, colorscale="RdBu", xgap=2, ygap=2,
        colorbar={"title": {"text": "ahead"}, "tickformat": ".0%"},
        hovertemplate="<b>%{y}</b> ahead of <b>%{x}</b>: %{z:.1%}<br>(%{text})<extra></extra>",
    ))
    side = max(360, min(900, 140 + 70 * len(order)))
    fig.update_layout(**_base_layout("column member", "row member", height=side))
    fig.update_yaxes(autorange="reversed", type="category", showgrid=False)
    fig.update_xaxes(type="category", side="bottom", showgrid=False)
    return fig


def _training_curves_figure(metrics: Sequence[dict[str, Any]] | None):
    import plotly.graph_objects as go

    rows = [r for r in metrics or () if any(k.startswith(EVAL_PREFIX) for k in r)]
    if not rows:
        return None
    keys = (k for r in rows for k in r if k.startswith(EVAL_PREFIX))
    opponents = list(dict.fromkeys(k[len(EVAL_PREFIX):] for k in keys))
    fig = go.Figure()
    for opponent in opponents:
        points = [r for r in rows if r.get(EVAL_PREFIX + opponent) is not None]
        # An evaluation played beside training is logged iterations after the one it played (eval/iteration).
        fig.add_trace(go.Scatter(
            x=[r.get("eval/env_steps", r.get("env_steps")) for r in points],
            y=[r[EVAL_PREFIX + opponent] for r in points],
            customdata=[[r.get("eval/iteration", r.get("iteration", MISSING)), r.get("minutes", MISSING)]
                        for r in points],
            mode="lines+markers",
            name=f"vs {_label(opponent)}",
            hovertemplate=("%{fullData.name}: %{y:.1%}<br>%{x:,} env steps"
                           "<br>iteration %{customdata[0]}, %{customdata[1]} min<extra></extra>"),
        ))
    fig.update_layout(**_base_layout("environment steps", "win rate"))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    return fig


@functools.lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


PLOT_CONFIG = {"displaylogo": False, "responsive": True,
               "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}


def _json_script(text: str, **attributes: str) -> str:
    """JSON `text` in a ``<script type="application/json">``, with ``<`` escaped so that no text in it (a member's
    name) ends the script."""
    attrs = "".join(f' {k.replace("_", "-")}="{html.escape(v, quote=True)}"' for k, v in attributes.items())
    safe = text.replace("<", "\\u003c")
    return f'<script type="application/json"{attrs}>{safe}</script>'


def _figure_div(fig, div_id: str, empty_note: str, min_width: int | None = None) -> str:
    """A plot's box (``data-plot=<id>``): the plot drawn by plotly and its figure as JSON, which the page's
    refresh hands to ``Plotly.react``; or the note when there is nothing to plot. `min_width` (px) keeps a plot
    readable on a narrow screen: its box scrolls sideways instead."""
    if fig is None:
        return (f'<div class="plot-box" data-plot="{div_id}"><div id="{div_id}" class="plot empty">'
                f'<p class="note">{html.escape(empty_note)}</p></div></div>')
    import plotly.io as pio

    style = f' style="--min-width: {int(min_width)}px"' if min_width else ""
    figure = _json_script(f'{{"figure":{pio.to_json(fig)},"config":{json.dumps(PLOT_CONFIG)}}}', data_figure=div_id)
    return (f'<div class="plot-box" data-plot="{div_id}"{style}><div class="plot">'
            + pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=div_id, config=PLOT_CONFIG,
                          default_height=f"{fig.layout.height}px", post_script="window.leagueFit('{plot_id}');")
            + f"</div>{figure}</div>")


# ---------------------------------------------------------------------------- page
def _number(value: float | None, digits: int = 2) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def _percent(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1%}"


def _win_rate_cell(member: Member) -> str:
    panel = _panel_entry(member)
    if panel is None:
        return f'<td class="num">{MISSING}</td>'
    detail = []
    ci = panel.get("ci95")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(c, (int, float)) for c in ci):
        detail.append(f"95% CI {ci[0]:.1%} to {ci[1]:.1%}")
    if panel.get("games"):
        detail.append(f"{panel['games']} games")
    title = f' title="{html.escape(", ".join(detail))}"' if detail else ""
    return f'<td class="num"{title}>{float(panel["win_rate"]):.1%}</td>'


def _ranking_table(league: _League) -> str:
    body = []
    for member, row in zip(league.members, _ranking(league)):
        name = html.escape(row["name"], quote=True)
        status = "active" if row["active"] else "evicted"
        low, high = mu_interval(member)
        body.append(
            f'<tr data-member="{name}" class="{status}">'
            f'<td class="num">{MISSING if row["rank"] is None else row["rank"]}</td>'
            f'<td class="name">{name}</td>'  # a name only: a spec (a path, a module) stays on the server
            f'<td><span class="kind kind-{row["kind"]}">{row["kind"]}</span></td>'
            f'<td class="role">{MISSING if row["role"] is None else html.escape(row["role"])}</td>'
            f'<td class="num">{_number(row["mu"])}</td>'
            f'<td class="num">{_number(row["sigma"])}</td>'
            f'<td class="num strong">{_number(low)} to {_number(high)}</td>'
            f'<td class="num">{row["games"]:,}</td>'
            f'<td class="num">{_percent(row["ahead_of_field"])}</td>'
            f'{_win_rate_cell(member)}'
            f'<td class="num">{MISSING if row["iteration"] is None else row["iteration"]}</td>'
            f'<td>{status}</td>'
            "</tr>"
        )
    head = ('<tr><th class="num" title="1 + the members clearly rated above it: members within noise of each other '
            'share a rank">#</th><th>member</th><th>kind</th>'
            '<th title="the learner it was, or is: main, a main exploiter or a league exploiter">role</th>'
            '<th class="num">mu</th>'
            '<th class="num">sigma</th>'
            '<th class="num" title="mu &#177; 1.96 sigma: a member whose interval lies wholly above another\'s is '
            'clearly stronger">mu, 95%</th>'
            '<th class="num" title="rated games it played">games</th>'
            '<th class="num" title="per game, the share of its opponents it finished ahead of, over its games">'
            "ahead of field</th>"
            '<th class="num" title="greedy play against players - 1 random bots (panel evaluation)">'
            "win vs random</th>"
            '<th class="num" title="the training iteration it was taken at">iteration</th>'
            "<th>status</th></tr>")
    empty = "" if body else '<p class="note">No members yet.</p>'
    return (f'<div class="table-box" id="ranking-box"><table id="ranking"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table>{empty}</div>')


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2933;
       margin: 0; background: #f5f7fa; }
main { max-width: 1180px; margin: 0 auto; padding: 20px 28px 40px; }
header h1 { font-size: 24px; margin: 0 0 4px; }
header p { margin: 0; color: #52606d; font-size: 14px; }
header code { background: #e4e7eb; padding: 1px 5px; border-radius: 3px; }
section { background: #fff; border: 1px solid #e4e7eb; border-radius: 8px; padding: 14px 18px;
          margin-top: 18px; }
section h2 { font-size: 17px; margin: 0 0 4px; }
section > p.about { margin: 0 0 10px; color: #616e7c; font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { padding: 6px 10px; border-bottom: 1px solid #e4e7eb; text-align: left; white-space: nowrap; }
th { background: #f0f4f8; font-weight: 600; cursor: default; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.strong { font-weight: 600; }
td.name { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; white-space: normal;
          word-break: break-all; }
tr.evicted td { color: #9aa5b1; }
tbody tr:hover td { background: #f8fafc; }
.kind { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #e4e7eb; }
.kind-main { background: #d9e8ff; } .kind-snapshot { background: #e3f6e8; }
.kind-bot { background: #fdebd3; } .kind-external { background: #eee3fb; }
.kind-human { background: #fde2e4; }
.note { color: #7b8794; font-style: italic; margin: 8px 0; }
.table-box { overflow-x: auto; }
.plot-box { overflow-x: auto; }
.plot-box > .plot { min-width: min(var(--min-width, 0px), 100%); }
nav.site { display: flex; align-items: center; flex-wrap: wrap; gap: 0 2em; padding: 0.2em 1.5em;
           background: #263238; color: #fff; }
nav.site .brand { font-size: 1.3em; font-weight: bold; margin-right: 1em; }
nav.site a { color: #cfd8dc; margin-right: 1em; text-decoration: none; display: inline-block; padding: 0.7em 0.2em; }
nav.site a.here { color: #fff; font-weight: bold; border-bottom: 2px solid #fff; }
@media (max-width: 700px) {
  nav.site { padding: 4px 8px 0; gap: 0 1em; }
  nav.site .brand { font-size: 1.1em; }
  main { padding: 10px 4px 30px; }
  section { padding: 10px 6px; }
  header h1 { font-size: 19px; }
  table { font-size: 12px; }
  th, td { padding: 5px 3px; }
  .kind { padding: 0 5px; font-size: 11px; }
  th { white-space: normal; vertical-align: bottom; }
  /* role, mu, sigma, iteration and status give way: the member's name carries its role's prefix, the interval and
     the greyed rows say the rest in short */
  #ranking :is(th, td):is(:nth-child(4), :nth-child(5), :nth-child(6), :nth-child(11), :nth-child(12)) {
    display: none; }
  /* the interval's two ends may stack */
  #ranking td:nth-child(7) { white-space: normal; }
  .plot-box > .plot { min-width: var(--min-width, 0px); }
}
"""

_SITE_NAV = ('<nav class="site"><span class="brand">ludo-league</span><span><a href="/">Play</a>'
             '<a href="/replay">Replays</a><a href="/league" class="here">League</a></span></nav>')

# The page's refresh (``<body data-refresh=<seconds>>``): the page is fetched again and its summary, ranking and
# figures replace these, with Plotly.react, so the plots keep their zoom and hidden traces; nothing reloads.
# On a narrow screen the legends go under the plots. ``window.leagueRefresh()`` refreshes now.
_SCRIPT = """
(function () {
  "use strict";
  const narrow = () => window.innerWidth < 700;
  function fit(layout) {
    layout.uirevision = "keep";
    if (narrow() && layout.legend) {
      layout.legend = Object.assign({}, layout.legend, {orientation: "h", x: 0, y: -0.3, yanchor: "top"});
      layout.margin = Object.assign({}, layout.margin, {l: 50, r: 10});
    }
    return layout;
  }
  function figure(root, id) {
    const script = root.querySelector('script[data-figure="' + id + '"]');
    return script ? JSON.parse(script.textContent) : null;
  }
  function draw(id, spec, fresh) {
    const div = document.getElementById(id);
    if (fresh || !div.classList.contains("js-plotly-plot")) {
      return window.Plotly["newPlot"](div, spec.figure.data, fit(spec.figure.layout), spec.config);
    }
    return window.Plotly.react(div, spec.figure.data, fit(spec.figure.layout), spec.config);
  }
  async function refresh() {
    const response = await fetch(location.href, {cache: "no-store"});
    if (!response.ok) throw new Error("the server answered " + response.status);
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const id of ["summary", "ranking-box"]) {
      const fresh = doc.getElementById(id);
      if (fresh) document.getElementById(id).replaceWith(document.adoptNode(fresh));
    }
    for (const box of doc.querySelectorAll(".plot-box")) {
      const id = box.dataset.plot, spec = figure(box, id);
      const here = document.querySelector('.plot-box[data-plot="' + id + '"]');
      if (!here) continue;
      if (spec && figure(here, id)) {
        here.querySelector('script[data-figure="' + id + '"]').textContent =
          box.querySelector('script[data-figure="' + id + '"]').textContent;
        await draw(id, spec, false);
      } else {  // a plot appears (or goes): the box is built again; its own script does not run here
        for (const s of box.querySelectorAll('script:not([type="application/json"])')) s.remove();
        here.replaceWith(document.adoptNode(box));
        if (spec) await draw(id, spec, true);
      }
    }
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  }
  window.leagueRefresh = refresh;
  // each plot, once plotly has drawn it (pio's post_script): on a narrow screen its legend goes under it
  window.leagueFit = (id) => {
    const div = document.getElementById(id);
    if (narrow() && div.layout && div.layout.showlegend !== false && div.data.some((t) => t.type !== "heatmap")) {
      const {legend, margin} = fit({legend: div.layout.legend, margin: div.layout.margin});
      return window.Plotly.relayout(div, {legend: legend, margin: margin, uirevision: "keep"});
    }
  };
  window.addEventListener("load", () => {
    const seconds = Number(document.body.dataset.refresh || 0);
    if (!seconds) return;
    const again = () => setTimeout(() => refresh().catch((err) => {
      document.body.dataset.refreshError = String(err.message || err);
    }).finally(again), seconds * 1000);
    again();
  });
})();
"""


def render_html(store: LeagueStore, metrics: list[dict] | None, title: str,
                refresh_seconds: int | None = None, *, plotly_src: str | None = None,
                site_nav: bool = False) -> str:
    """The dashboard page for the league in `store` (and the run's metrics rows, if any), as one string.

    `refresh_seconds`: the page fetches itself again that often and refreshes its data in place (the
    ranking, the summary, the plots), without reloading. `plotly_src`: plotly.js from that address (a server's
    cached file) instead of inlined, which a page opened offline as a file needs. `site_nav`: the header of the
    ``launch/serve.py`` site (Play, Replays, League) above the page."""
    league = _League.read(store)
    active = sum(m.active for m in league.members)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    head_to_head = _head_to_head_figure(league)
    sections = [
        ("Ranking", ("Strongest first by openskill Plackett-Luce mu; # is 1 + the members clearly rated above "
                     "(their 95% interval of mu wholly above), so members within noise of each other share a "
                     "rank and each of rank 1 is best within the intervals; a member with no "
                     "rated game has none. Greyed rows are evicted members. People (kind human) are ranked with the "
                     "agents: a game played under a name on the play page against league members only is rated; a game "
                     "against any non-member is not."), _ranking_table(league)),
        ("Rating history", ("Each member's mu after every rating round it played (dotted: evicted). "
                            "Click a legend entry to hide it, double-click to show it alone."),
         _figure_div(_rating_history_figure(league), "rating-history", "No rating rounds yet.")),
        ("Head to head", ("The share of the games both played in which the row member finished ahead of "
                          "the column member, with the counts; rows and columns in ranking order."),
         _figure_div(head_to_head, "head-to-head", "No rated games yet.",
                     min_width=None if head_to_head is None else 100 + 50 * len(head_to_head.data[0].x))),
        ("Training curves", ("Main's greedy win rate against each panel opponent at each evaluation "
                             "(from the run's metrics.jsonl)."),
         _figure_div(_training_curves_figure(metrics), "training-curves",
                     "No evaluation rows in the run's metrics yet (or no metrics.jsonl beside the league).")),
    ]
    body = "".join(
        f'<section><h2>{name}</h2><p class="about">{html.escape(about)}</p>{content}</section>'
        for name, about, content in sections
    )
    plotly = (f'<script src="{html.escape(plotly_src, quote=True)}"></script>' if plotly_src
              else f'<script type="text/javascript">{_plotly_js()}</script>')
    refresh = f' data-refresh="{int(refresh_seconds)}"' if refresh_seconds else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'  # no favicon request: it would 404 when served
        f"<title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style>"
        f"{plotly}<script>{_SCRIPT}</script>"
        f"</head><body{refresh}>"
        f"{_SITE_NAV if site_nav else ''}<main>"
        f"<header><h1>{html.escape(title)}</h1>"
        f'<p id="summary">League <code>{html.escape(league.path)}</code> \u00b7 {len(league.members)} members '
        f"({active} active) \u00b7 {league.rounds} rating rounds \u00b7 "
        f"{len(league.matches):,} rated games \u00b7 rendered {when}</p></header>"
        f"{body}"
        "</main></body></html>\n"
    )
