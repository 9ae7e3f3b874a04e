"""The local site `launch/serve.py` serves: play against agents, replay records, the league leaderboard.

`launch.web.app.create_app` builds the FastAPI app from a `launch.web.app.Site`
(the opponents the server was started with, the records folder, the league);
``static/`` holds every page, script and style it serves, so the site works
offline.
"""
