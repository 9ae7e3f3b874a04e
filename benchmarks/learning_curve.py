"""Plot win rate against training minutes for training runs, with 95% intervals: the README's learning curve.

    python benchmarks/learning_curve.py /work/runs/ppo_selfplay /work/runs/dqn_selfplay \
        --out benchmarks/results/learning_curve.png

Reads each run folder's ``metrics.jsonl`` (one line per iteration) and
``summary.json`` (every evaluation of greedy main against the panel, and the
final one). Needs the ``bench`` extra (matplotlib).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def curves(run: Path) -> dict[str, list[tuple[float, float, float, float]]]:
    """Per panel opponent: (minutes, win rate, ci low, ci high) at every evaluation."""
    minutes_at = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        minutes_at[row["iteration"]] = row["minutes"]  # a resumed run may log an iteration twice: keep the last
    summary = json.loads((run / "summary.json").read_text())
    evaluations = list(summary["evaluations"])
    if summary.get("final_evaluation"):
        evaluations.append(summary["final_evaluation"])
    out: dict[str, list] = {}
    for evaluation in evaluations:
        # Final evaluations written before 2026-11-25 by trainers other than RLlib's carry no iteration.
        minute = minutes_at.get(evaluation.get("iteration"), summary["minutes"])
        for result in evaluation["results"]:
            lo, hi = result["ci95"]
            out.setdefault(result["opponent"], []).append((minute, result["win_rate"], lo, hi))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="training run folders")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/learning_curve.png"))
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    opponents = sorted({o for run in args.runs for o in curves(run)})
    fig, axes = plt.subplots(1, len(opponents), figsize=(5 * len(opponents), 3.8), squeeze=False)
    for ax, opponent in zip(axes[0], opponents):
        for run in args.runs:
            points = sorted(curves(run).get(opponent, []))
            if not points:
                continue
            minutes, rate, lo, hi = zip(*points)
            ax.plot(minutes, [100 * r for r in rate], marker="o", markersize=3, label=run.name)
            ax.fill_between(minutes, [100 * v for v in lo], [100 * v for v in hi], alpha=0.2)
        ax.axhline(25, color="grey", linestyle=":", linewidth=1)
        ax.set_title(f"greedy main vs 3 x {opponent}")
        ax.set_xlabel("training minutes")
        ax.set_ylabel("win rate, % (95% interval)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
