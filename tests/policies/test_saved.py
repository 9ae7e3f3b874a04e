"""One loader of policy folders: each saved kind's loaders come from `policies.saved.REGISTRY`."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from policies.checkpoints import PolicyFileError, write_policy
from policies.players import PlayerSpecError, make_player
from policies.saved import REGISTRY, load_module, load_player, load_value_source
from policies.search import ModuleValue
from tests.disks import can_mount_a_small_disk, run_on_a_small_disk
from tests.league.tiny_policy import write_tiny_policy

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", REGISTRY)
def test_every_registered_loader_names_a_function(kind):
    """A half-registered kind (a loader that does not exist) fails here, not on a user's folder."""
    for target in (REGISTRY[kind].player, REGISTRY[kind].value, REGISTRY[kind].module):
        if target is not None:
            module_name, _, function = target.partition(":")
            assert callable(getattr(importlib.import_module(module_name), function))


def test_an_unknown_kind_is_one_line_naming_the_kinds(tmp_path):
    folder = write_policy(tmp_path / "p", "sarsa", {"obs": "egocentric"}, {"w": torch.zeros(2)})
    for load in (lambda: load_player(folder, "x"), lambda: load_value_source(folder), lambda: load_module(folder)):
        with pytest.raises(PolicyFileError) as err:
            load()
        assert "\n" not in str(err.value) and "unknown policy kind 'sarsa'" in str(err.value)
        assert all(kind in str(err.value) for kind in REGISTRY)
    with pytest.raises(PlayerSpecError, match="known kinds are ppo, dqn"):
        make_player(f"ckpt:{folder}")


def test_a_saved_module_policy_loads_as_player_value_and_module(tmp_path):
    folder = write_tiny_policy(tmp_path / "policy")
    assert load_player(folder, "tiny").name == "tiny"
    assert isinstance(load_value_source(folder), ModuleValue)
    assert load_module(folder).training is False


def test_a_kind_without_a_use_says_which_kinds_have_it(tmp_path):
    folder = write_policy(tmp_path / "ga", "ga_ann", {"obs": "seed001_flags60", "hidden": 4},
                          {"chromosome": torch.zeros(10)})
    with pytest.raises(PolicyFileError, match="ga_ann policy, which has no value to search with: give a policy "
                                              "of kind ppo, dqn, td_value"):
        load_value_source(folder)
    with pytest.raises(PolicyFileError, match="ga_ann policy, not an RLModule: give a policy of kind ppo, dqn$"):
        load_module(folder)


FULL_DISK_WRITE = r"""
import errno, os, torch
from pathlib import Path
from policies.checkpoints import write_policy

disk = Path(os.environ["DISK"])
write_policy(disk / "p", "sarsa", {"obs": "egocentric"}, {"w": torch.zeros(2)})
try:
    write_policy(disk / "p", "sarsa", {"obs": "egocentric"}, {"w": torch.zeros(1_000_000)})  # 4 MB on 1 MB
except OSError as err:
    assert err.errno == errno.ENOSPC, err
else:
    raise AssertionError("a policy larger than the disk was written")
assert sorted(p.name for p in disk.iterdir()) == ["p"], list(disk.iterdir())  # no half-written sibling
assert torch.load(disk / "p" / "weights.pt")["w"].shape == (2,)  # the policy before it, whole
print("ok")
"""


@pytest.mark.skipif(not can_mount_a_small_disk(), reason="needs user and mount namespaces (unshare) for a small disk")
def test_a_policy_the_disk_has_no_room_for_is_an_os_error_and_leaves_the_one_before(tmp_path):
    """Callers treat an OSError as a save that could not be written; torch.save alone would raise RuntimeError."""
    done = run_on_a_small_disk(tmp_path / "disk", 1, FULL_DISK_WRITE, cwd=ROOT, env={})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
