"""Agents: seed bots, player specs, networks and RLModules, saved policies, the seed agents and the league."""
import os

# OpenMP threads (torch's intra-op pool) spin while they wait for work. Beside the engine, a Ray
# worker or any other job on a machine with few cores, that spinning makes forward passes many times
# slower than passive waiting does. libgomp reads this once, when torch loads, so it is set here,
# before any torch import of the project; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
