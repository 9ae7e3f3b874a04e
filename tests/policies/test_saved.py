"""One loader of policy folders: each saved kind's loaders come from `policies.saved.REGISTRY`."""
from __future__ import annotations

import importlib

import pytest
import torch

from policies.checkpoints import PolicyFileError, write_policy
from policies.players import PlayerSpecError, make_player
from policies.saved import REGISTRY, load_module, load_player, load_value_source
from policies.search import ModuleValue
from tests.league.tiny_policy import write_tiny_policy


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
