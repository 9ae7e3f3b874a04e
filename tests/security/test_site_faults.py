"""The site's tracebacks and unclear answers: Ctrl-C while serve.py restored games (a 24-line traceback); uvicorn's
text/plain 400 for a request that is not valid HTTP; 405 answers without ``Allow``; a 4.89 MB league page on a
first visit (plotly.js sent uncompressed); and a stopped server that left "Failed to fetch" on the page until
it was reloaded."""
from __future__ import annotations

import json
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from fastapi.testclient import TestClient

from launch.web.app import create_app
from launch.web.site import Site
from tests.launch.test_serve import ROOT, play_out, start_server, stop_server

QUICK = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]}


def test_ctrl_c_while_serve_restores_games_is_one_line_and_130(tmp_path):
    records = tmp_path / "records"
    client = TestClient(create_app(Site(records, [])))
    view = play_out(client, client.post("/api/games", json={**QUICK, "players": 4,
                                                            "opponents": ["bot:random"] * 3}).json(), actions=120)
    assert not view["over"]
    with sqlite3.connect(records / "games.db") as db:  # 500 games to replay: seconds of restoring
        row = db.execute("SELECT * FROM games").fetchone()
        db.executemany(f"INSERT INTO games VALUES ({', '.join('?' * len(row))})",
                       [(f"copy-{k:05d}", *row[1:]) for k in range(499)])
    server = subprocess.Popen([sys.executable, "launch/serve.py", "port=0", f"records={records}"], cwd=ROOT,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: said.put(server.stderr.readline()), daemon=True).start()
        line = said.get(timeout=120)  # the server says it is restoring, before it serves
        assert line.startswith("restoring 500 unfinished games"), line
        time.sleep(0.5)
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    finally:
        server.kill()
    err = line + err
    lines = err.strip().splitlines()
    assert server.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert lines[-1].startswith("interrupted: serve.py stopped before it served"), err[-3000:]
    assert "serving" not in out


def test_a_request_that_is_not_http_gets_the_sites_json_400(tmp_path):
    server, url = start_server(f"records={tmp_path / 'records'}")
    try:
        host, port = url.split("//")[1].rstrip("/").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(b"POST /api/games HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    finally:
        stop_server(server)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"content-type: application/json" in head.lower(), answer
    error = json.loads(body)["error"]
    assert "not valid HTTP" in error and "\n" not in error


def test_a_405_names_the_methods_the_path_takes(tmp_path):
    client = TestClient(create_app(Site(tmp_path / "records", [])))
    for method, path, allowed in (("DELETE", "/api/games", "POST"), ("GET", "/api/games/abc/roll", "POST"),
                                  ("POST", "/api/options", "GET")):
        answer = client.request(method, path)
        assert answer.status_code == 405 and answer.headers["allow"] == allowed, (method, path, answer.headers)
        assert answer.headers["content-type"] == "application/json" and "not allowed" in answer.json()["error"]


def test_the_league_page_is_under_1_5_mb_on_a_first_visit(tmp_path):
    from tests.launch.test_serve_league import learned_run

    run = learned_run(tmp_path / "run", rated=True)
    server, url = start_server(f"league={run}", f"records={tmp_path / 'records'}")
    sizes = {}
    try:
        def fetch(path: str) -> bytes:
            request = urllib.request.Request(url.rstrip("/") + path, headers={"Accept-Encoding": "gzip, deflate"})
            with urllib.request.urlopen(request, timeout=120) as answer:
                sizes[path] = len(raw := answer.read())  # the bytes sent: urllib does not decompress
                return raw

        import gzip

        page = gzip.decompress(fetch("/league")).decode()
        for asset in re.findall(r'(?:src|href)="(/[^"]+\.(?:js|css))"', page):
            fetch(asset)
    finally:
        stop_server(server)
    print(f"league page, first visit: {sum(sizes.values()):,} bytes: {sizes}")
    assert any("plotly" in path for path in sizes) and sum(sizes.values()) < 1_500_000, sizes


@pytest.mark.browser
def test_a_stopped_server_shows_a_banner_that_clears_itself_when_it_is_back(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from tests.browser import browser_or_skip, new_chrome

    browser_or_skip()
    records = tmp_path / "records"
    server, url = start_server(f"records={records}")
    port = url.rstrip("/").rsplit(":", 1)[1]
    driver = new_chrome("1300,900")
    wait = WebDriverWait(driver, 60, poll_frequency=0.1)
    banner = "const b = document.getElementById('offline'); return b !== null && !b.hidden"
    try:
        driver.get(url)
        wait.until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
        driver.execute_script("document.getElementById('speed').value = 0;")
        Select(driver.find_element(By.ID, "variant")).select_by_value("quick")
        Select(driver.find_element(By.ID, "players")).select_by_value("2")
        Select(driver.find_element(By.ID, "opponent-0")).select_by_value("bot:random")
        driver.find_element(By.ID, "start").click()
        wait.until(lambda d: d.execute_script("return document.body.dataset.turn") in ("roll", "move"))
        stop_server(server)
        wait.until(lambda d: d.execute_script(banner))  # the page's own poll finds the server gone
        assert "cannot be reached" in driver.find_element(By.ID, "offline").text
        server, _ = start_server(f"records={records}", f"port={port}")  # the same address, the game restored
        wait.until(lambda d: not d.execute_script(banner))
        assert "Failed to fetch" not in driver.find_element(By.ID, "status").text
        assert driver.execute_script("return document.body.dataset.turn") in ("roll", "move")
    finally:
        driver.quit()
        stop_server(server)
