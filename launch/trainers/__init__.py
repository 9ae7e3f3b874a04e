"""Training loops that are not RLlib's: ``launch/train.py`` runs ``launch.trainers.<algo.name>.train(cfg)``.

Each module's ``train(cfg: launch.schema.TrainConfig)`` owns its run folder
(``cfg.run_dir``, resumed when ``cfg.resume`` is set) and writes its agent as a
policy folder (`policies.checkpoints.write_policy`) that ``ckpt:<path>`` plays.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def final_evaluation(cfg, rules, policy: Path) -> dict[str, Any]:
    """The saved policy, loaded as ``ckpt:`` loads it, against ``cfg.eval.panel``: what the printed commands
    replay exactly."""
    from policies.league.evaluation import evaluate_panel
    from policies.players import make_player

    start = time.perf_counter()
    results = evaluate_panel(make_player(f"ckpt:{policy}"), cfg.eval.panel, rules, cfg.eval.final_games,
                             cfg.eval.seed)
    return {"final": True, "seconds": round(time.perf_counter() - start, 2),
            "results": [r.to_dict() for r in results]}


def final_lines(cfg, policy: Path, final: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """Summary lines of a final evaluation (win rate, Wilson 95% interval) and the commands that replay it."""
    from launch.runs import variant_overrides
    from policies.league.evaluation import evaluate_command

    players = int(cfg.variant.players)
    lines, commands = [], []
    for r in (final or {}).get("results", []):
        command = evaluate_command(str(policy), r["opponent"], cfg.variant.name, players, r["games"],
                                   cfg.eval.seed) + variant_overrides(cfg)
        commands.append(command)
        lo, hi = r["ci95"]
        lines.append(f"vs {players - 1} x {r['opponent']}: win rate {100 * r['win_rate']:.1f}% "
                     f"[{100 * lo:.1f}, {100 * hi:.1f}] over {r['games']} games; reproduce with:")
        lines.append(f"  {command}")
    return lines, commands
