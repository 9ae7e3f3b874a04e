"""How far apart a DQN policy's Q-values for its two best legal tokens are (why DQN uses advantage learning).

    python benchmarks/action_gaps.py <policy> [<policy> ...] [--positions 2000] [--seed 5]

Each policy is a saved DQN policy (a run folder, a checkpoint or a policy folder, as ``ckpt:`` takes it).
The positions are decisions met in random-move games of the policy's own rules, spread over whole games
(`launch.export.random_positions`, what the export check plays); those with two or more legal tokens are
kept, and the script prints the 10/25/50/75% quantiles of the gap between the best and the second-best
legal Q-value. Two tokens on the same square score the same, so some gaps are exactly 0.
"""
from __future__ import annotations

import sys

import numpy as np
import torch

from launch.cli import OneLineParser, UserError, check_integers, fail, input_errors, positive
from launch.export import random_positions
from ludo_env.observations import encode
from ludo_env.rules import Rules
from policies.algorithms import module_algorithm
from policies.modules import MaskedDQNTorchRLModule, inference_batch, load_checkpoint_player

QUANTILES = (0.10, 0.25, 0.50, 0.75)


def top_two_gaps(policy: str, positions: int, seed: int) -> np.ndarray:
    player = load_checkpoint_player(policy)
    if not isinstance(player.module, MaskedDQNTorchRLModule):
        raise UserError(f"{policy} is no DQN policy: action gaps are gaps between Q-values")
    rules = Rules.recorded(player.variant, players=player.players)
    states, tab, masks = random_positions(rules, positions, seed)
    choice = masks.sum(axis=1) >= 2
    states, masks = states[choice], masks[choice]
    batch = inference_batch(encode(player.obs, states, tab), masks.astype(np.float32))
    with torch.no_grad():
        q = module_algorithm("dqn").scores(player.module, batch).numpy()
    ranked = np.sort(np.where(masks > 0, q, -np.inf), axis=1)
    return ranked[:, -1] - ranked[:, -2]


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("policies", nargs="+", metavar="policy",
                        help="a saved DQN policy: a run folder, a checkpoint or a policy folder (ckpt: optional)")
    parser.add_argument("--positions", type=positive(int), default=2000,
                        help="decisions to draw from random-move games (those with a choice are kept)")
    parser.add_argument("--seed", type=int, default=5, help="dice of the random-move games")
    args = parser.parse_intermixed_args(argv)
    check_integers(vars(args), prefix="--")
    policies = [spec.removeprefix("ckpt:") for spec in args.policies]
    positions, seed = args.positions, args.seed
    print("| policy | decisions with a choice | gap quantiles 10% / 25% / 50% / 75% |")
    print("| --- | --- | --- |")
    for policy in policies:
        gaps = top_two_gaps(policy, positions, seed)
        quantiles = " / ".join(f"{q:.4f}" for q in np.quantile(gaps, QUANTILES))
        print(f"| {policy} | {len(gaps)} | {quantiles} |", flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
