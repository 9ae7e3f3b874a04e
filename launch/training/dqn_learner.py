"""`AdvantageLearningDQNLearner`: RLlib's DQN loss under the advantage-learning operator (``algo.advantage_learning``).

Bellemare, Ostrovski, Guez, Thomas and Munos (2016), "Increasing the action gap: new operators for reinforcement
learning". The target of ``Q(s, a)`` is RLlib's n-step target minus ``alpha * (max_b Q'(s, b) - Q'(s, a))``, with
``Q'`` the target network and the max over legal tokens. For ``0 <= alpha < 1`` the greedy policy it converges to is
the optimal one, while each other action's gap to the best grows by ``1 / (1 - alpha)`` (10x at 0.9), so errors
in the learned values swap the greedy move less often.

Why it is here: the greedy token of a trained classic DQN is decided by small gaps. The gap between its two best
legal tokens is small next to its TD errors (`benchmarks/action_gaps.py` measures them), so the win rate of its
greedy policy moves by several points from iterate to iterate. Under this operator those gaps are several times
larger, and runs with it won more often than runs without it (the DQN studies in docs/pages/results/).

The correction is taken off the reward column before RLlib's own loss runs, so everything else stays RLlib's:
double-Q, n-step discounting, Huber or MSE, the distributional projection, importance weights and the TD errors
that become priorities. One more forward pass of the target network, on the batch's observations, pays for it.
"""
from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core.columns import Columns

ADVANTAGE_LEARNING = "advantage_learning"
"""Key of alpha in the algorithm config's ``learner_config_dict``."""
GAP_METRIC = "advantage_learning_gap_mean"
"""Mean of ``max_b Q'(s, b) - Q'(s, a)`` over the batch, logged per update."""


class AdvantageLearningDQNLearner(DQNTorchLearner):
    def compute_loss_for_module(self, *, module_id, config, batch: dict[str, Any], fwd_out):
        alpha = config.learner_config_dict[ADVANTAGE_LEARNING]
        with torch.no_grad():
            # Illegal tokens are -inf (the masked module), so the max is over legal ones; the taken token is legal.
            target_q = self.module[module_id].forward_target({Columns.OBS: batch[Columns.OBS]})[QF_PREDS]
            taken = target_q.gather(-1, batch[Columns.ACTIONS].long().unsqueeze(-1)).squeeze(-1)
            gap = target_q.max(dim=-1).values - taken
        self.metrics.log_value((module_id, GAP_METRIC), gap.mean(), window=1)
        batch = {**batch, Columns.REWARDS: batch[Columns.REWARDS] - alpha * gap}
        return super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
