"""Plot win rate against training minutes (or env steps) for training runs, with 95% intervals: the learning curves.

    python benchmarks/learning_curve.py outputs/train/<ppo run> outputs/train/<dqn run> \
        --out benchmarks/results/learning_curve.png
    python benchmarks/learning_curve.py <run A> <run B> --x env_steps --labels PPO DQN   # runs under other loads

Reads each run folder's ``metrics.jsonl`` (one line per iteration) and
``summary.json`` (every evaluation of greedy main against the panel, and the
final one). Needs the ``bench`` extra (matplotlib). A run folder without
them, or a ``summary.json`` that is not UTF-8 JSON, is refused in one line; a
``metrics.jsonl`` line that is not UTF-8 JSON is left out with a warning
naming the file and the line.
"""
from __future__ import annotations

import json
from pathlib import Path

from launch.cli import OneLineParser, UserError, fail, read_jsonl

X_AXES = {"minutes": "training minutes", "env_steps": "env steps (millions)"}


def curves(run: Path, x: str = "minutes") -> dict[str, list[tuple[float, float, float, float]]]:
    """Per panel opponent: (`x` of its metrics rows, win rate, ci low, ci high) at every evaluation."""
    if not run.is_dir():
        raise UserError(f"{run}: no such run folder")
    x_at = {}
    try:
        rows = read_jsonl(run / "metrics.jsonl", "metrics row")
    except OSError as err:
        raise UserError(f"{run / 'metrics.jsonl'}: cannot read it ({err.strerror or err}): give a training run "
                        "folder") from None
    for row in rows:
        if "iteration" in row and x in row:
            x_at[row["iteration"]] = row[x]  # a resumed run may log an iteration twice: keep the last
    summary = read_summary(run / "summary.json")
    evaluations = list(summary["evaluations"])
    if summary.get("final_evaluation"):
        evaluations.append(summary["final_evaluation"])
    out: dict[str, list] = {}
    for evaluation in evaluations:
        # Final evaluations of older run folders written by trainers other than RLlib's carry no iteration.
        at = x_at.get(evaluation.get("iteration"), summary[x])
        for result in evaluation["results"]:
            lo, hi = result["ci95"]
            out.setdefault(result["opponent"], []).append((at, result["win_rate"], lo, hi))
    return out


def read_summary(path: Path) -> dict:
    """A run's ``summary.json``; anything else is a `UserError` of one line naming the file."""
    try:
        summary = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as err:
        raise UserError(f"{path}: cannot read it ({err.strerror or err}): give a finished training run") from None
    except UnicodeDecodeError as err:
        raise UserError(f"{path}: byte {err.object[err.start]:#04x} at offset {err.start} is not UTF-8") from None
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("evaluations"), list):
        raise UserError(f"{path}: not a run summary (no list of evaluations)")
    return summary


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="training run folders")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/learning_curve.png"))
    parser.add_argument("--x", choices=X_AXES, default="minutes", help="the horizontal axis")
    parser.add_argument("--labels", nargs="+", help="legend names, one per run (default: the folder names)")
    args = parser.parse_args()
    labels = args.labels or [run.name for run in args.runs]
    if len(labels) != len(args.runs):
        parser.error(f"--labels gives {len(labels)} names for {len(args.runs)} runs")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        runs = {label: curves(run, args.x) for label, run in zip(labels, args.runs)}
    except UserError as err:
        fail(err)
    scale = 1e-6 if args.x == "env_steps" else 1.0
    opponents = sorted({o for points in runs.values() for o in points})
    fig, axes = plt.subplots(1, len(opponents), figsize=(5 * len(opponents), 3.8), squeeze=False)
    for ax, opponent in zip(axes[0], opponents):
        for label, by_opponent in runs.items():
            points = sorted(by_opponent.get(opponent, []))
            if not points:
                continue
            at, rate, lo, hi = zip(*points)
            at = [scale * v for v in at]
            ax.plot(at, [100 * r for r in rate], marker="o", markersize=3, label=label)
            ax.fill_between(at, [100 * v for v in lo], [100 * v for v in hi], alpha=0.2)
        ax.axhline(25, color="grey", linestyle=":", linewidth=1)
        ax.set_title(f"greedy main vs 3 x {opponent}")
        ax.set_xlabel(X_AXES[args.x])
        ax.set_ylabel("win rate, % (95% interval)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
