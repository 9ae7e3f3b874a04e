"""A small disk of a test's own: a tmpfs mounted in user and mount namespaces, where the machine allows them."""
from __future__ import annotations

import subprocess


def can_mount_a_small_disk() -> bool:
    """Whether ``unshare --user --map-root-user --mount`` may mount a tmpfs here (not in every container)."""
    try:
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                               "mount -t tmpfs -o size=1m tmpfs /mnt"], capture_output=True,
                              timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_on_a_small_disk(disk, megabytes: int, code: str, cwd, env: dict[str, str],
                        timeout: int = 300) -> subprocess.CompletedProcess:
    """Python `code` run with a tmpfs of `megabytes` mounted on the folder `disk` (made here), in user and mount
    namespaces; `env` adds to this process's environment (``DISK`` names the folder)."""
    import os
    import sys

    disk.mkdir(exist_ok=True)
    script = f'mount -t tmpfs -o size={megabytes}m tmpfs "$DISK" && exec "$PYTHON" -c "$CODE"'
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], cwd=cwd,
                          env={**os.environ, **env, "DISK": str(disk), "PYTHON": sys.executable, "CODE": code},
                          capture_output=True, text=True, timeout=timeout, check=False)
