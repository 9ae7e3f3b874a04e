"""First-compile time of the engine's kernels: numba's own inlining against `ludo_env.engine.inline_copy`, or
without the cache's compile lock against with it.

    python benchmarks/compile_time.py                                     # table: numba against inline_copy
    python benchmarks/compile_time.py --json
    python benchmarks/compile_time.py --compare compile_lock              # no lock against the lock, one process
    python benchmarks/compile_time.py --compare compile_lock --processes 2   # two processes start at once

What is measured
  Each measurement is a fresh Python process with its own empty numba cache
  folder (``LUDO_NUMBA_CACHE``), so nothing is loaded from disk. It times the
  first call, which compiles, of three kernels in turn on `--variant`:
  ``play_random`` (the generic kernel), ``play_random(..., specialised=True)``
  (the kernel compiled for the one rules table), and ``step_batch`` after
  ``legal_masks`` (the envs' and the training sampler's path). The kernels they
  share are compiled once, by whichever comes first, as in any process.

  ``--compare inline_copy`` (the default): ``numba`` is numba's own copy of an
  inlined callee (``inline_copy.ENABLED = False``); ``inline_copy`` is the fix
  the engine installs.
  ``--compare compile_lock``: ``no_lock`` compiles without the cache folder's
  file lock (``jit.ONE_WRITER = False``, as before the lock), ``lock`` with it,
  as the engine does. With ``--processes N``, N processes start at once on the
  same empty cache (test workers, EnvRunners) and each kernel's time is the
  slowest process's: until every process can run it. A process that dies
  (numba's cold-cache races) fails the benchmark with its exit status.

  The two modes alternate, `--repeats` times each, and the table gives medians
  and their ratio (first mode over second: above 1, the second is faster).
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
from ludo_env.engine import inline_copy, jit
inline_copy.ENABLED = {inline_copy}
jit.ONE_WRITER = {one_writer}
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
# Each comparison's two modes, as the settings of the measuring process: (inline_copy.ENABLED, jit.ONE_WRITER).
COMPARISONS = {
    "inline_copy": {"numba": (False, True), "inline_copy": (True, True)},
    "compile_lock": {"no_lock": (True, False), "lock": (True, True)},
}


def measure(variant: str, settings: tuple[bool, bool], processes: int) -> dict[str, float]:
    """Each kernel's first-call seconds, the slowest of `processes` processes started at once on one empty cache."""
    inline, one_writer = settings
    code = MEASURE.format(inline_copy=inline, one_writer=one_writer, variant=variant)
    with tempfile.TemporaryDirectory(prefix="ludo-numba-") as cache:
        env = {**os.environ, "LUDO_NUMBA_CACHE": cache}
        procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(processes)]
        outputs = [(proc, *proc.communicate()) for proc in procs]
    times = []
    for proc, out, err in outputs:
        if proc.returncode != 0:
            last = err.strip().splitlines()[-1] if err.strip() else "no output"
            sys.exit(f"a measuring process failed with exit status {proc.returncode}: {last}")
        times.append(json.loads(out.strip().splitlines()[-1]))
    return {kernel: max(t[kernel] for t in times) for kernel in KERNELS}


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="pyludo", help="rules the kernels are compiled for")
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="inline_copy",
                        help="inline_copy: numba's inlining against the engine's; "
                             "compile_lock: without the cache's file lock against with it")
    parser.add_argument("--processes", type=positive(int), default=1,
                        help="processes started at once on one empty cache per measurement")
    parser.add_argument("--repeats", type=positive(int), default=3,
                        help="measurements per mode, each on a new empty cache; medians are reported")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    modes = COMPARISONS[args.compare]
    first, second = modes
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(args.repeats):
        for mode, settings in modes.items():
            runs[mode].append(measure(args.variant, settings, args.processes))
    medians = {mode: {k: statistics.median(run[k] for run in runs[mode]) for k in KERNELS} for mode in modes}
    totals = {mode: sum(medians[mode].values()) for mode in modes}
    result = {"variant": args.variant, "compare": args.compare, "processes": args.processes,
              "repeats": args.repeats, "seconds": medians, "total_seconds": totals,
              "ratio_total": totals[first] / totals[second]}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.variant}, first call with an empty cache, seconds, medians of {args.repeats} measurements, "
          f"{args.processes} process(es) at once (the slowest)")
    print(f"{'kernel':<16}{first:>12}{second:>14}{'ratio':>9}")
    for kernel in (*KERNELS, "total"):
        before = totals[first] if kernel == "total" else medians[first][kernel]
        after = totals[second] if kernel == "total" else medians[second][kernel]
        print(f"{kernel:<16}{before:>12.1f}{after:>14.1f}{before / after:>8.2f}x")


if __name__ == "__main__":
    main()
