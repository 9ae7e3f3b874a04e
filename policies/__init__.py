"""Agents: seed bots, RLModules and the league (from the environments issue on)."""
import os

# OpenMP threads (torch's intra-op pool) spin while they wait for work. Beside the engine, a Ray
# worker or any other job on a 2-core machine, that spinning made a token_set forward pass ~100x
# slower: 387 rows/s with 2 threads against 44,846 rows/s with passive waiting, same load
# (`benchmarks/evaluate.py --policy-rows`). libgomp reads this once, when torch loads, so it is
# set here, before any torch import of the project; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
