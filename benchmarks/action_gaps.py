"""How far apart a DQN policy's Q-values for its two best legal tokens are (docs/training.md, advantage learning).

    python benchmarks/action_gaps.py <policy> [<policy> ...] [games=400] [plies=20,60,120] [seed=5]

Each policy is a saved DQN policy (a run folder, a checkpoint or a policy folder, as ``ckpt:`` takes it).
For each ply count, `games` games of the policy's own rules are played from the start with random moves
for that many plies. The positions that wait on a decision with two or more legal tokens are kept, and the
script prints the 10/25/50/75% quantiles of the gap between the best and the second-best legal Q-value.
Two tokens on the same square score the same, so some gaps are exactly 0.
"""
from __future__ import annotations

import sys

import numpy as np
import torch

from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch
from ludo_env.observations import encode
from ludo_env.rules import Rules
from policies.algorithms import module_algorithm
from policies.bots import Bot
from policies.modules import MaskedDQNTorchRLModule, inference_batch, load_checkpoint_player

OPTIONS = {"games": "400", "plies": "20,60,120", "seed": "5"}
QUANTILES = (0.10, 0.25, 0.50, 0.75)


def positions(rules: Rules, games: int, plies: int, seed: int):
    """`(states, tab, masks)` after `plies` random moves per game, only the decisions between two or more tokens."""
    tab = compile_rules(rules)
    states, rng = new_batch(tab, games, seed=seed, first_seats=np.arange(games) % rules.players)
    masks = np.zeros((games, 4), dtype=np.int8)
    legal_masks(states, tab, masks)
    events = np.zeros(games, dtype=np.int32)
    walker = Bot("random", seed=seed + 1)
    for _ in range(plies):
        step_batch(states, tab, rng, walker.act(states, tab, masks), events, masks)
    legal_masks(states, tab, masks)
    choice = masks.sum(axis=1) >= 2
    return states[choice], tab, masks[choice]


def top_two_gaps(policy: str, games: int, plies: int, seed: int) -> np.ndarray:
    player = load_checkpoint_player(policy)
    if not isinstance(player.module, MaskedDQNTorchRLModule):
        sys.exit(f"error: {policy} is no DQN policy: action gaps are gaps between Q-values")
    rules = Rules.load(player.variant, players=player.players)
    states, tab, masks = positions(rules, games, plies, seed)
    batch = inference_batch(encode(player.obs, states, tab), masks.astype(np.float32))
    with torch.no_grad():
        q = module_algorithm("dqn").scores(player.module, batch).numpy()
    ranked = np.sort(np.where(masks > 0, q, -np.inf), axis=1)
    return ranked[:, -1] - ranked[:, -2]


def main(argv: list[str]) -> None:
    options, policies = dict(OPTIONS), []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key in OPTIONS:
            options[key] = value
        else:
            policies.append(arg.removeprefix("ckpt:"))
    if not policies:
        sys.exit("usage: python benchmarks/action_gaps.py <dqn policy> [...] [games=400] [plies=20,60,120] [seed=5]")
    games, seed = int(options["games"]), int(options["seed"])
    print("| policy | plies | positions | gap quantiles 10% / 25% / 50% / 75% |")
    print("| --- | --- | --- | --- |")
    for policy in policies:
        for plies in (int(p) for p in options["plies"].split(",")):
            gaps = top_two_gaps(policy, games, plies, seed)
            quantiles = " / ".join(f"{q:.4f}" for q in np.quantile(gaps, QUANTILES))
            print(f"| {policy} | {plies} | {len(gaps)} | {quantiles} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
