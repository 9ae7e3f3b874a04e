"""The league page: the leaderboard of the league the server was started with (``league=<run folder>``),
rendered afresh on each request, and the plotly.js it draws with, served from this server so the page works
offline."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from launch.web.common import Refused, log
from launch.web.site import Site

LEAGUE_REFRESH_SECONDS = 30  # the league page refreshes its data (not the page) this often


def _plotly_version() -> str:
    try:
        return version("plotly")
    except PackageNotFoundError:
        return "unknown"


PLOTLY_ROUTE = f"/vendor/plotly-{_plotly_version()}.min.js"


def plotly_file() -> Path:
    """plotly.js as the installed plotly package ships it (what the standalone page inlines)."""
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


def routes(site: Site) -> APIRouter:
    """The league page, from the site's league, and the plotly.js it loads."""
    router = APIRouter()

    @router.get(PLOTLY_ROUTE, include_in_schema=False)
    def plotly_js():
        # the league page's 4.8 MB library, fetched once: its address names plotly's version, so it never changes
        return FileResponse(plotly_file(), media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=31536000, immutable"})

    @router.get("/league", include_in_schema=False)
    def league_page():
        if site.league is None:
            raise Refused(404, "this server was started without league=<run folder>: no league to show")
        try:
            page = site.league.render(LEAGUE_REFRESH_SECONDS, plotly_src=PLOTLY_ROUTE, site_nav=True)
        except Exception as err:  # noqa: BLE001 - the database can vanish or stay locked mid-run
            log.error("league render failed: %s", (str(err) or type(err).__name__).splitlines()[0])
            raise Refused(503, "the leaderboard could not be rendered now; try again") from None
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    return router
