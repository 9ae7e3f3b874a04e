"""Headless Chromium for the browser tests: Debian's chromium and chromium-driver (installed with apt when
missing, as root), driven by selenium. Tests that need it use `browser_or_skip` and `new_chrome`."""
from __future__ import annotations

import fcntl
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"


def _install(command: list[str], timeout: int) -> str | None:
    """None when the command succeeded, else why not (one line)."""
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                             env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{command[0]}: {err}"
    return None if run.returncode == 0 else f"{' '.join(command[:3])} exited {run.returncode}"


def ensure_chromium() -> str | None:
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


def ensure_selenium() -> str | None:
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




def browser_or_skip() -> None:
    """Skip the calling test when Chromium or selenium cannot be had here. One install at a time: two xdist
    workers running apt-get or pip at once would fail on each other's lock and skip."""
    with open(Path(tempfile.gettempdir()) / "ludo-league-browser-install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reasons = (ensure_chromium(), ensure_selenium())
    for why in reasons:
        if why is not None:
            pytest.skip(why)


def new_chrome(window_size: str = "1400,1000", phone: tuple[int, int] | None = None):
    """A headless Chromium driven by selenium, its console log kept. `phone` (width, height): Chromium's mobile
    emulation of a phone's screen of that many CSS pixels (pixel ratio 3, touch), as a phone lays pages out."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    if phone is not None:
        options.add_experimental_option("mobileEmulation", {
            "deviceMetrics": {"width": phone[0], "height": phone[1], "pixelRatio": 3.0, "touch": True},
            "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
                         "Chrome/120.0 Mobile Safari/537.36"})
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={window_size}", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    chrome.set_page_load_timeout(60)
    return chrome
