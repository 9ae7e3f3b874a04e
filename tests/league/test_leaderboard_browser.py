"""The written leaderboard.html in headless Chromium: every member's row, every plot drawn, no console errors.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package;
the `browser` fixture installs them when it can (root with apt-get, pip) and
skips otherwise. Selenium is given the driver's path, so its selenium-manager
never downloads a browser. Set ``LEADERBOARD_SCREENSHOT=<png path>`` to keep
the screenshot (the docs' ``docs/pages/images/leaderboard.png`` is made this way).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policies.league.store import LeagueStore
from tests.browser import browser_or_skip, new_chrome

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PLOT_IDS = ("rating-history", "head-to-head", "training-curves")


@pytest.fixture(scope="module")
def driver():
    browser_or_skip()
    chrome = new_chrome()
    yield chrome
    chrome.quit()


def test_the_page_renders_every_member_and_plot_without_console_errors(driver, league_db, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    page = tmp_path / "leaderboard.html"
    run = subprocess.run([sys.executable, "launch/leaderboard.py", f"league={league_db}", f"out={page}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr

    driver.get(page.as_uri())
    wait = WebDriverWait(driver, 30)
    for plot_id in PLOT_IDS:
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, f"#{plot_id} .main-svg")))

    with LeagueStore.open(league_db, create=False) as store:
        expected = sorted(m.name for m in store.members())
    rows = driver.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")
    assert sorted(r.get_attribute("data-member") for r in rows) == expected
    # the odd name shows as the text it is, in the table and in the plots' legends and axes
    assert sorted(r.find_element(By.CSS_SELECTOR, "td.name").text for r in rows) == expected
    legend = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#rating-history .legendtext")]
    assert sorted(legend) == expected
    ticks = {e.text for e in driver.find_elements(By.CSS_SELECTOR, "#head-to-head .ytick text")}
    assert ticks == set(expected)

    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []

    # a window as tall as the page, so the screenshot holds all of it (the window's frame takes some height)
    frame = driver.execute_script("return window.outerHeight - window.innerHeight")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, height + frame)
    shot = tmp_path / "leaderboard.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    keep = os.environ.get("LEADERBOARD_SCREENSHOT")
    if keep:
        Path(keep).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, keep)
