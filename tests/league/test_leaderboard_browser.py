"""The written leaderboard.html in headless Chromium: every member's row, every plot drawn, no console errors.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package;
the `browser` fixture installs them when it can (root with apt-get, pip) and
skips otherwise. Selenium is given the driver's path, so its selenium-manager
never downloads a browser. Set ``LEADERBOARD_SCREENSHOT=<png path>`` to keep
the screenshot (the README's ``docs/leaderboard.png`` is made this way).
"""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policies.league.store import LeagueStore

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
PLOT_IDS = ("rating-history", "head-to-head", "training-curves")


def _install(command: list[str], timeout: int) -> str | None:
    """None when the command succeeded, else why not (one line)."""
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                             env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{command[0]}: {err}"
    return None if run.returncode == 0 else f"{' '.join(command[:3])} exited {run.returncode}"


def _ensure_chromium() -> str | None:
    if Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists():
        return None
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        return "Chromium is not installed and cannot be installed here (needs root and apt-get)"
    packages = [apt, "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"]
    if _install(packages, 900) is not None:  # the package lists may be missing or stale
        why = _install([apt, "update"], 300) or _install(packages, 900)
        if why is not None:
            return f"installing Chromium failed: {why}"
    return None if Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists() else "Chromium is still missing"


def _ensure_selenium() -> str | None:
    try:
        importlib.import_module("selenium")
        return None
    except ImportError:
        pass
    why = _install([sys.executable, "-m", "pip", "install", "-q", "selenium"], 300)
    importlib.invalidate_caches()
    try:
        importlib.import_module("selenium")
        return None
    except ImportError:
        return f"selenium is missing and pip could not install it ({why})"


@pytest.fixture(scope="module")
def driver():
    for why in (_ensure_chromium(), _ensure_selenium()):
        if why is not None:
            pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    chrome.set_page_load_timeout(60)
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
