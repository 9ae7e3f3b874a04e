"""`launch.training.dqn_learner.AdvantageLearningDQNLearner`: RLlib's DQN loss on the advantage-learning target.

A real learner built from the smoke_dqn config, on real engine positions: its loss equals RLlib's own loss with each
reward lowered by alpha times the target network's gap between the best legal token and the one taken, computed
here by hand from the target network's Q-values and the masks."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core.columns import Columns

from launch.training import build
from launch.training.dqn_learner import GAP_METRIC, AdvantageLearningDQNLearner
from ludo_env.core import ACTION_SPACE, observation_space
from ludo_env.observations import encode
from policies.league.pool import MAIN
from policies.modules import ACTION_MASK, OBSERVATIONS
from tests.launch.configs import train_config
from tests.positions import mid_game_positions

ALPHA = 0.75


def algorithm_config(*overrides: str):
    cfg = train_config("+exp=smoke_dqn", *overrides)
    return cfg, build.build_algorithm_config(cfg)


def transitions(obs: str, seed: int = 0) -> dict:
    """Real positions as a learner batch: legal actions taken, some games over, rewards of either sign."""
    states, tab, masks = mid_game_positions(4, games=96, plies=50, seed=5)
    choice = masks.sum(axis=1) > 1  # decisions where the taken token can trail the best one
    states, masks = states[choice], masks[choice]
    n = len(states) // 2
    features = torch.as_tensor(encode(obs, states, tab))
    masks_t = torch.as_tensor(masks, dtype=torch.float32)
    rng = np.random.default_rng(seed)
    actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks[:n]])
    return {
        Columns.OBS: {OBSERVATIONS: features[:n], ACTION_MASK: masks_t[:n]},
        Columns.NEXT_OBS: {OBSERVATIONS: features[n:2 * n], ACTION_MASK: masks_t[n:2 * n]},
        Columns.ACTIONS: torch.as_tensor(actions),
        Columns.REWARDS: torch.as_tensor(rng.normal(0, 0.3, n), dtype=torch.float32),
        Columns.TERMINATEDS: torch.as_tensor(rng.random(n) < 0.2),
        "n_step": torch.full((n,), 3.0),
        "weights": torch.ones(n),
    }


def test_advantage_learning_is_on_by_default_and_alpha_0_is_rllibs_own_learner():
    _, config = algorithm_config()
    assert config.learner_class is AdvantageLearningDQNLearner
    assert config.learner_config_dict["advantage_learning"] == 0.97
    _, config = algorithm_config("algo.advantage_learning=0")
    assert config.learner_class is DQNTorchLearner


@pytest.mark.parametrize("atoms", [1, 11])
def test_the_loss_is_rllibs_on_rewards_lowered_by_alpha_times_the_target_networks_gap(atoms):
    cfg, config = algorithm_config(f"algo.advantage_learning={ALPHA}", f"algo.num_atoms={atoms}")
    space = observation_space(cfg.obs.name)
    learner = config.build_learner(spaces={module: (space, ACTION_SPACE) for module in config.policies})
    module = learner.module[MAIN]
    with torch.no_grad():  # a target network that differs from the online one, as after some updates
        for weight in module._target_encoder.parameters():
            weight.add_(0.05 * torch.randn_like(weight))
    batch = transitions(cfg.obs.name)

    with torch.no_grad():
        target_q = module.forward_target({Columns.OBS: batch[Columns.OBS]})[QF_PREDS].numpy()
    legal = batch[Columns.OBS][ACTION_MASK].numpy() > 0
    best = np.where(legal, target_q, -np.inf).max(axis=1)
    gap = best - target_q[np.arange(len(target_q)), batch[Columns.ACTIONS].numpy()]
    # Tokens on the same square (at home, say) have equal Q-values, so only some taken tokens trail the best.
    assert (gap >= 0).all() and (gap > 0).mean() > 0.3

    fwd_out = module.forward_train(batch)
    loss = learner.compute_loss_for_module(module_id=MAIN, config=config, batch=batch, fwd_out=fwd_out)
    lowered = {**batch, Columns.REWARDS: batch[Columns.REWARDS] - ALPHA * torch.as_tensor(gap, dtype=torch.float32)}
    expected = DQNTorchLearner.compute_loss_for_module(learner, module_id=MAIN, config=config, batch=lowered,
                                                       fwd_out=fwd_out)
    unchanged = DQNTorchLearner.compute_loss_for_module(learner, module_id=MAIN, config=config, batch=batch,
                                                        fwd_out=fwd_out)
    torch.testing.assert_close(loss, expected)
    assert not torch.isclose(loss, unchanged)
    assert learner.metrics.peek((MAIN, GAP_METRIC)) == pytest.approx(gap.mean(), rel=1e-5)
