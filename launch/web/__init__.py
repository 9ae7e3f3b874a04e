"""The local site `launch/serve.py` serves: play against agents, replay records, the league leaderboard.

`launch.web.app.create_app` builds the FastAPI app from a `launch.web.site.Site`
(the opponents the server was started with, the records folder, the league),
with the routes of `games`, `records` and `league`; `common` holds the
refusals and error texts they share, `saved` the unfinished games kept on
disk. ``static/`` holds every page, script and style it serves, so the site
works offline.
"""
