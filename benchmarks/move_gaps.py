"""How much the best other legal token wins over a policy's own, by paired rollouts: what search at play time
has to find.

    python benchmarks/move_gaps.py ckpt:benchmarks/policies/default_pyludo_8M
    python benchmarks/move_gaps.py champion:classic --games 32 --plies 40,120 --rollouts 512
    python benchmarks/move_gaps.py hybrid --variant pyludo --rollouts 128

The policy is any player a ``rollout:`` player takes (a bot name, ``ckpt:<path>``, ``champion:<variant>``). Its
rules are those it was trained for; a bot plays ``--variant`` (default classic) with 4 players.

Positions: ``--games`` games of the policy's self-play (every seat the policy, a learned one played greedily; dice
from ``--seed``), taken at each ply of ``--plies`` where the game is still on and the mover has two or more legal
tokens. At each such decision every legal token is played out ``--rollouts`` times by the policy at every seat,
the tokens on the same dice (`policies.rollout`: the ``rollout:`` player's own rollouts). An alternative token's
gain is its rollouts' wins minus those of the policy's own token, paired rollout by rollout, with the standard
error of that mean.

Printed, for each ply and for all: the decisions and alternatives; the policy's own win share; the mean gain of
the alternatives; how many are more than 2 standard errors above 0 and below it (with no better alternative at
all, about 2.3% would be above by chance); the median standard error; and the rollouts a token would need for a
gain of 1 point to stand 2 standard errors clear (from the spread of the paired differences). Then the rollouts
played per second. ``--out`` saves it all, and every alternative's gain and standard error, as JSON.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from launch.cli import OneLineParser, UserError, benchmark_rules, fail, input_errors, positive, write_text
from ludo_env.engine.batch import legal_masks, new_batch, step_batch
from ludo_env.engine.layout import OVER, compile_rules
from ludo_env.rules import MAX_TOKENS, Rules
from policies.players import make_player
from policies.rollout import MAX_ROLLOUTS, RolloutPlayer

Z = 2.0
RESOLVED_GAIN = 0.01
"""The gain, on the win-share scale (1 point), that the rollouts needed are sized for."""


def plies_list(text: str) -> list[int]:
    try:
        plies = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        plies = []
    if not plies or plies[0] < 0:
        raise UserError(f"--plies {text!r} is not allowed: give plies >= 0, e.g. 30,90,150")
    return plies


def positions(policy, tab: np.ndarray, games: int, plies: list[int], seed: int) -> list[tuple[int, np.ndarray,
                                                                                              np.ndarray]]:
    """``(ply, states, masks)`` for each ply: the policy's self-play decisions there that have a choice."""
    states, dice = new_batch(tab, games, seed)
    masks = np.zeros((games, MAX_TOKENS), dtype=np.int8)
    legal_masks(states, tab, masks)
    taken, ply = [], 0
    for target in plies:
        while ply < target:
            on = states[:, OVER] == 0
            choices = np.zeros(games, dtype=np.int64)
            if on.any():
                choices[on] = policy.act(states[on], tab, masks[on])
            step_batch(states, tab, dice, choices, np.empty(games, dtype=np.int32), masks)
            ply += 1
        keep = (states[:, OVER] == 0) & (masks.sum(axis=1) > 1)
        taken.append((target, states[keep].copy(), masks[keep].copy()))
    return taken


def gaps(player: RolloutPlayer, states: np.ndarray, masks: np.ndarray, tab: np.ndarray) -> dict:
    """The alternatives' paired gains over the policy's own token at these decisions."""
    own_token = player.policy.act(states, tab, masks)
    decision, token, wins, gain = player.paired_gains(states, tab, masks, own_token)
    other = token != own_token[decision]
    mean = gain.mean(axis=1)[other]
    spread = gain.std(axis=1, ddof=1)[other]
    error = spread / np.sqrt(player.n)
    return {"decisions": int(states.shape[0]), "alternatives": int(other.sum()),
            "own_win_share": float(wins[~other].mean()), "gain": mean.tolist(), "standard_error": error.tolist(),
            "paired_spread": spread.tolist(), "rollouts": int(wins.size)}


def summary(found: dict) -> dict:
    gain, error, spread = (np.asarray(found[k]) for k in ("gain", "standard_error", "paired_spread"))
    if gain.size == 0:
        return {"decisions": found["decisions"], "alternatives": 0}
    return {"decisions": found["decisions"], "alternatives": int(gain.size),
            "own_win_share": found["own_win_share"], "mean_gain": float(gain.mean()),
            "above": int((gain > Z * error).sum()), "below": int((gain < -Z * error).sum()),
            "median_standard_error": float(np.median(error)),
            "rollouts_for_1_point": int(np.ceil((Z * float(np.median(spread)) / RESOLVED_GAIN) ** 2))}


def row(label: str, s: dict) -> str:
    if not s["alternatives"]:
        return f"| {label} | {s['decisions']} | 0 | | | | | |"
    return (f"| {label} | {s['decisions']} | {s['alternatives']} | {s['own_win_share']:.1%} | "
            f"{100 * s['mean_gain']:+.2f} | {s['above']} / {s['below']} | {100 * s['median_standard_error']:.2f} | "
            f"{s['rollouts_for_1_point']:,} |")


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", help="a bot name, ckpt:<path> or champion:<variant>")
    parser.add_argument("--games", type=positive(int), default=64, help="self-play games the positions come from")
    parser.add_argument("--plies", default="30,90,150", help="the plies at which positions are taken")
    parser.add_argument("--rollouts", type=int, default=256, help=f"rollouts per legal token (2..{MAX_ROLLOUTS})")
    parser.add_argument("--seed", type=int, default=5, help="dice of the self-play games (the rollouts: seed + 1)")
    parser.add_argument("--variant", help="rules for a bot (default classic); a learned policy plays its own")
    parser.add_argument("--out", type=Path, help="write the figures and every gap here (JSON)")
    args = parser.parse_intermixed_args(argv)
    if args.seed < 0:
        parser.error(f"--seed {args.seed} is not allowed: give a number >= 0")
    plies = plies_list(args.plies)
    if not 2 <= args.rollouts <= MAX_ROLLOUTS:
        parser.error(f"--rollouts {args.rollouts} is not allowed: give a number in 2..{MAX_ROLLOUTS}")
    player = make_player(f"rollout:{args.policy}?n={args.rollouts}", seed=args.seed + 1)
    variant, players = player.trained_for or (None, None)
    if variant is not None and args.variant is not None and args.variant != variant:
        raise UserError(f"{args.policy} was trained for {variant}: drop --variant {args.variant} or give "
                        f"--variant {variant}")
    if variant is not None:  # named by the policy's policy.json: data, never a path
        rules = Rules.named(variant, players=players or 4)
    else:
        rules, _ = benchmark_rules(args.variant or "classic", [], players or 4)
    tab = compile_rules(rules)
    print(f"{args.policy} on {rules.name}: {args.games} self-play games, positions at plies {plies}, "
          f"{args.rollouts} rollouts per legal token", file=sys.stderr)
    found, started = {}, time.perf_counter()
    for ply, states, masks in positions(player.policy, tab, args.games, plies, args.seed):
        found[ply] = gaps(player, states, masks, tab)
    seconds = time.perf_counter() - started
    pooled = {"decisions": sum(f["decisions"] for f in found.values()),
              "own_win_share": float(np.average([f["own_win_share"] for f in found.values()],
                                                weights=[max(f["decisions"], 1) for f in found.values()])),
              **{k: sum((f[k] for f in found.values()), []) for k in ("gain", "standard_error", "paired_spread")}}
    rollouts = sum(f["rollouts"] for f in found.values())
    print("| ply | decisions | alternatives | own token's win share | mean gain of the others, points | "
          f"above / below {Z:g} SE | median SE, points | rollouts for a 1-point gain |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for ply, f in found.items():
        print(row(str(ply), summary(f)))
    print(row("all", summary(pooled)))
    print(f"{rollouts:,} rollouts in {seconds:.0f} s: {rollouts / seconds:,.0f} per second")
    if args.out:
        report = {"policy": args.policy, "variant": rules.name, "games": args.games, "plies": plies,
                  "rollouts_per_token": args.rollouts, "seed": args.seed, "seconds": seconds,
                  "rollouts_per_second": rollouts / seconds, "by_ply": {str(p): {**summary(f), **f}
                                                                       for p, f in found.items()},
                  "all": summary(pooled)}
        write_text(args.out, json.dumps(report, indent=1))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
