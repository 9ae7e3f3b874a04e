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
