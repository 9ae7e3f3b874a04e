"""The league page: the leaderboard of the league the server was started with (``league=<run folder>``),
rendered afresh on each request, and the plotly.js it draws with, served from this server so the page works
offline: gzip-compressed once (4.8 MB becomes 1.4 MB) for every browser that accepts gzip, and cached by the
browser for good, as its address names plotly's version."""
from __future__ import annotations

import functools
import gzip
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

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


@functools.cache
def plotly_gzip() -> bytes:
    """plotly.js compressed at gzip's best level, once per server (about 0.3 s)."""
    return gzip.compress(plotly_file().read_bytes(), compresslevel=9, mtime=0)


def routes(site: Site) -> APIRouter:
    """The league page, from the site's league, and the plotly.js it loads."""
    router = APIRouter()

    @router.get(PLOTLY_ROUTE, include_in_schema=False)
    def plotly_js(request: Request):
        # the league page's 4.8 MB library, fetched once: its address names plotly's version, so it never changes
        cache = {"Cache-Control": "public, max-age=31536000, immutable", "Vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", "").lower():
            return Response(plotly_gzip(), media_type="text/javascript",
                            headers={**cache, "Content-Encoding": "gzip", "ETag": f'"plotly-{_plotly_version()}-gzip"'})
        return FileResponse(plotly_file(), media_type="text/javascript", headers=cache)

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
