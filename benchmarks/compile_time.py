"""First-compile time of the engine's kernels: numba's own inlining against `ludo_env.engine.inline_copy`.

    python benchmarks/compile_time.py               # table
    python benchmarks/compile_time.py --json

What is measured
  Each measurement is a fresh Python process with its own empty numba cache
  folder (``LUDO_NUMBA_CACHE``), so nothing is loaded from disk. It times the
  first call, which compiles, of three kernels in turn on `--variant`:
  ``play_random`` (the generic kernel), ``play_random(..., specialised=True)``
  (the kernel compiled for the one rules table), and ``step_batch`` after
  ``legal_masks`` (the envs' and the training sampler's path). The kernels they
  share are compiled once, by whichever comes first, as in any process.
  ``numba`` is numba's own copy of an inlined callee (``inline_copy.ENABLED =
  False``); ``inline_copy`` is the fix the engine installs. The two alternate,
  `--repeats` times each, and the table gives medians and their ratio.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from launch.cli import OneLineParser, positive

ROOT = Path(__file__).resolve().parents[1]

MEASURE = """
import json, time
import numpy as np
from ludo_env.engine import inline_copy
inline_copy.ENABLED = {enabled}
from ludo_env.engine import compile_rules, legal_masks, new_batch, play_random, step_batch
from ludo_env.rules import Rules

tab = compile_rules(Rules.load({variant!r}))


def first_call(play):
    states, rng = new_batch(tab, 64, seed=0)
    start = time.perf_counter()
    play(states, rng)
    return time.perf_counter() - start


def one_step(states, rng):
    masks, events = np.zeros((len(states), 4), dtype=np.int8), np.zeros(len(states), dtype=np.int32)
    legal_masks(states, tab, masks)
    step_batch(states, tab, rng, np.argmax(masks, axis=1), events, masks)


print(json.dumps({{
    "play_random": first_call(lambda states, rng: play_random(states, tab, rng, 60)),
    "specialised": first_call(lambda states, rng: play_random(states, tab, rng, 60, specialised=True)),
    "step_batch": first_call(one_step),
}}))
"""
KERNELS = ("play_random", "specialised", "step_batch")
MODES = {"numba": False, "inline_copy": True}


def measure(variant: str, enabled: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="ludo-numba-") as cache:
        proc = subprocess.run([sys.executable, "-c", MEASURE.format(enabled=enabled, variant=variant)], cwd=ROOT,
                              env={**os.environ, "LUDO_NUMBA_CACHE": cache},
                              capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the measuring process failed: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="pyludo", help="rules the kernels are compiled for")
    parser.add_argument("--repeats", type=positive(int), default=3,
                        help="fresh processes per mode; medians are reported")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for _ in range(args.repeats):
        for mode, enabled in MODES.items():
            runs[mode].append(measure(args.variant, enabled))
    medians = {mode: {k: statistics.median(run[k] for run in runs[mode]) for k in KERNELS} for mode in MODES}
    totals = {mode: sum(medians[mode].values()) for mode in MODES}
    result = {"variant": args.variant, "repeats": args.repeats, "seconds": medians, "total_seconds": totals,
              "ratio_total": totals["numba"] / totals["inline_copy"]}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.variant}, first call with an empty cache, seconds, medians of {args.repeats} fresh processes")
    print(f"{'kernel':<16}{'numba':>10}{'inline_copy':>14}{'ratio':>9}")
    for kernel in (*KERNELS, "total"):
        before = totals["numba"] if kernel == "total" else medians["numba"][kernel]
        after = totals["inline_copy"] if kernel == "total" else medians["inline_copy"][kernel]
        print(f"{kernel:<16}{before:>10.1f}{after:>14.1f}{before / after:>8.2f}x")


if __name__ == "__main__":
    main()
