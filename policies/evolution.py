"""Seed 001's GA player: the 60-6-4 sigmoid network, its chromosome, the fitness games and the genetic algorithm.

The network (seed 001 §2)
    Inputs: the 60 flags of ``ludo_env.observations.encode("seed001_flags60")``
    (15 per own token, in the mover's frame). One hidden layer of `HIDDEN` (6)
    sigmoid units and 4 sigmoid outputs, one per token, every unit with a bias:
    60*6 + 6 + 6*4 + 4 = 394 weights, the paper's count. The legal token with
    the highest output moves. The output sigmoid is monotone, so the choice is
    made on the output units' inputs (their logits): the same token in exact
    arithmetic, but no ties where float64 sigmoids saturate to 1.0, which large
    evolved weights reach (ties go to the lowest token index).

Chromosome: a flat float64 vector of `n_weights` (394), laid out as
    ``[w1 (60 x 6, input-major: w1[i, j] at i*6 + j) | b1 (6) | w2 (6 x 4,
    hidden-major: w2[j, k] at 360 + 6 + j*4 + k) | b2 (4)]``, so hidden unit j
    is ``sigmoid(b1[j] + sum_i x[i] w1[i, j])`` and output k is
    ``sigmoid(b2[k] + sum_j h[j] w2[j, k])`` (`unpack`, `pack`). A torch
    ``nn.Linear`` stores ``weight`` as (out, in): w1 is ``linear1.weight.T``.
    The paper encodes each weight as 32 bits for its bit-wise crossover; cutting
    between whole weights is the same crossover without splitting a float.

Fitness (seed 001 §3.2, eq. 2)
    A chromosome plays `FitnessSpec.games` (250) games against ``players - 1``
    copies of a built-in bot (``semi_smart``), and scores
    ``(Wins + (DistanceFromHome - EnemyDistanceFromHome) / 1000) / games * 100``.
    The paper calls them "mean measures of how far the tokens got on the map",
    high own and low enemy values being good, so here, at each game's end, a
    token's distance is the squares it has covered (0 in base, progress + 1 on
    its path, home + 1 when home: the engine's placing measure), and:
    DistanceFromHome = the sum over the games of the mean distance of the
    chromosome's own tokens; EnemyDistanceFromHome = the sum over the games of
    the mean distance of all the opponents' tokens. Their difference over 1000
    is then at most 57/1000 of a win per game (classic, pyludo). A game still
    running after `max_plies` rolls counts as no win, with its distances then.

Fitness games
    Game g of a chromosome seats it at seat ``(-g) mod players`` (seat 0 rolls
    first), so every block of ``players`` games puts it in every seat once,
    rolls dice stream g of `game_seed` (seed, generation, chromosome index;
    with ``common_dice`` every chromosome of a generation rolls the same
    streams: common random numbers) and lets the bots draw from streams of
    ``game_seed ^ policies.tournament.BOT_SEED_SALT``. These are exactly the
    games of ``play_tournament([ckpt:<chromosome>, bot, bot, bot], games, rules,
    seed=game_seed)``, seating included (a test holds them to it), and a game
    depends on nothing else: not on the batch, the chunking or the Ray task that
    plays it. One numba kernel plays all the games of a chunk of chromosomes,
    calling ``policies.bots.kernels.choose`` for the bot seats.
    `evaluate_population` splits the population into chunks and plays each as
    a Ray task (``ray.remote``), so a Ray cluster spreads a generation over its
    CPUs unchanged; the caller starts Ray.

The genetic algorithm (seed 001 §3), one generation (`next_generation`)
    Evaluate every chromosome (also the survivors: fitness is a noisy sample,
    so it is measured afresh each generation, as in the paper), then build the
    next population: the best ``floor(elitism * population)`` chromosomes
    survive unchanged (75% of 30: the best 22), at the front in fitness order,
    and the rest (8) are offspring. Offspring come in pairs: two distinct
    parents drawn by ranked roulette (chance proportional to rank, 1 for the
    worst, population for the best, over the whole evaluated population; the
    second drawn with the first left out), a two-point crossover with chance
    `crossover_rate` (cuts lo < hi drawn from 1..393: child 1 is parent 1 with
    genes lo..hi-1 from parent 2, child 2 the reverse; otherwise the children
    are copies of the parents), then Gaussian mutation: each gene, with chance
    `mutation_rate`, gets N(0, mutation_sigma) added. With an odd number of
    offspring the last pair's second child is dropped. Initial population
    (`init_population`): uniform in [-0.77, 0.77] (Thimm and Fiesler, as the
    paper), or "prior knowledge": a given chromosome (an imitation-trained
    network) plus N(0, init_sigma) noise on every gene of every member.
    All GA randomness comes from one ``numpy.random.Generator``; `GAState`
    saves it with the population, so a resumed run continues identically.

Saved players: `write_ann_policy` writes a ``ga_ann`` policy folder
(`policies.checkpoints.write_policy`, tensor ``chromosome``); `load_player`
(its kind registered in ``policies.saved.REGISTRY``) plays it wherever ``ckpt:<path>`` is named.
"""
from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ludo_env.engine import rng as rngmod
from ludo_env.engine.batch import reset_batch, step_batch
from ludo_env.engine.frame import view_from
from ludo_env.engine.jit import kernel
from ludo_env.engine.kernels import _seat_pips
from ludo_env.engine.layout import CURRENT, OVER, PLACES, PLY, R_PLAYERS, R_TOKENS, STATE_DTYPE, STATE_LEN
from ludo_env.observations import encode, encoder
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS, Rules
from policies.bots.kernels import choose

KIND = "ga_ann"
OBS = "seed001_flags60"
_OBS_KERNEL = encoder(OBS).kernel  # called per decision inside the numba game loop
INPUTS = encoder(OBS).size
HIDDEN = 6
OUTPUTS = MAX_TOKENS
INIT_RANGE = 0.77
LAYOUT = "w1 (60 x hidden, input-major) | b1 (hidden) | w2 (hidden x 4, hidden-major) | b2 (4)"
GA_STATE_FORMAT = "ludo-league-ga/1"


def n_weights(hidden: int = HIDDEN) -> int:
    """Genes of a chromosome: 394 for 6 hidden units."""
    return INPUTS * hidden + hidden + hidden * OUTPUTS + OUTPUTS


def unpack(chromosome: np.ndarray, hidden: int = HIDDEN) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Views ``(w1 (60, h), b1 (h,), w2 (h, 4), b2 (4,))`` of a chromosome (module docstring)."""
    c = np.asarray(chromosome)
    if c.shape != (n_weights(hidden),):
        raise ValueError(f"a chromosome of {hidden} hidden units has {n_weights(hidden)} genes, not {c.shape}")
    at = np.cumsum([0, INPUTS * hidden, hidden, hidden * OUTPUTS, OUTPUTS])
    return (c[at[0]:at[1]].reshape(INPUTS, hidden), c[at[1]:at[2]], c[at[2]:at[3]].reshape(hidden, OUTPUTS),
            c[at[3]:at[4]])


def pack(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """The chromosome of a network given as (60, h), (h,), (h, 4), (4,) arrays."""
    return np.concatenate([np.ravel(w1), np.ravel(b1), np.ravel(w2), np.ravel(b2)]).astype(np.float64)


# ------------------------------------------------------------------ the network
@kernel
def ann_logits(w, hidden, x, logits):
    """The output units' inputs for features `x` (sigmoid of these: the paper's outputs)."""
    n_in = x.shape[0]
    at_b1 = n_in * hidden
    at_w2 = at_b1 + hidden
    at_b2 = at_w2 + hidden * OUTPUTS
    for k in range(OUTPUTS):
        logits[k] = w[at_b2 + k]
    for j in range(hidden):
        a = w[at_b1 + j]
        for i in range(n_in):
            if x[i] != 0.0:  # the flags are mostly 0
                a += x[i] * w[i * hidden + j]
        h = 1.0 / (1.0 + np.exp(-a))
        for k in range(OUTPUTS):
            logits[k] += h * w[at_w2 + j * OUTPUTS + k]


@kernel
def ann_choice(w, hidden, x, mask, logits):
    """The legal token with the highest output (lowest index on ties); -1 if none is legal."""
    ann_logits(w, hidden, x, logits)
    best = -1
    for t in range(OUTPUTS):
        if mask[t] and (best < 0 or logits[t] > logits[best]):
            best = t
    return best


@kernel
def _choose_rows(w, hidden, features, masks, logits, out):
    for b in range(features.shape[0]):
        out[b] = ann_choice(w, hidden, features[b], masks[b], logits)


@kernel
def _output_rows(w, hidden, features, logits, out):
    for b in range(features.shape[0]):
        ann_logits(w, hidden, features[b], logits)
        for k in range(OUTPUTS):
            out[b, k] = 1.0 / (1.0 + np.exp(-logits[k]))


def ann_outputs(chromosome: np.ndarray, features: np.ndarray, hidden: int = HIDDEN) -> np.ndarray:
    """The network's 4 sigmoid outputs for each row of `features` (B, 60): float64 (B, 4)."""
    features = np.ascontiguousarray(features, dtype=np.float32).reshape(-1, INPUTS)
    out = np.empty((features.shape[0], OUTPUTS), dtype=np.float64)
    _output_rows(_weights(chromosome, hidden), hidden, features, np.empty(OUTPUTS), out)
    return out


def ann_choices(chromosome: np.ndarray, features: np.ndarray, masks: np.ndarray, hidden: int = HIDDEN) -> np.ndarray:
    """The token the network moves in each game: int64 (B,), -1 where nothing is legal."""
    features = np.ascontiguousarray(features, dtype=np.float32).reshape(-1, INPUTS)
    out = np.empty(features.shape[0], dtype=np.int64)
    _choose_rows(_weights(chromosome, hidden), hidden, features,
                 np.ascontiguousarray(masks, dtype=np.int8).reshape(-1, OUTPUTS), np.empty(OUTPUTS), out)
    return out


def _weights(chromosome: np.ndarray, hidden: int) -> np.ndarray:
    w = np.ascontiguousarray(chromosome, dtype=np.float64)
    if w.shape != (n_weights(hidden),):
        raise ValueError(f"a chromosome of {hidden} hidden units has {n_weights(hidden)} genes, not {w.shape}")
    return w


class AnnPlayer:
    """A chromosome as a `policies.players.Player`: encodes the positions (seed001_flags60) and moves greedily."""

    thread_safe = True  # numpy over fixed weights

    def __init__(self, name: str, chromosome: np.ndarray, hidden: int = HIDDEN):
        self.name = name
        self.hidden = int(hidden)
        self.chromosome = _weights(chromosome, self.hidden)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return ann_choices(self.chromosome, encode(OBS, states, tab), masks, self.hidden)

    def __repr__(self) -> str:
        return f"AnnPlayer({self.name!r})"


# ------------------------------------------------------------------ saved players
def write_ann_policy(dest: str | Path, chromosome: np.ndarray, rules: Rules, info: dict[str, Any] | None = None,
                     hidden: int = HIDDEN) -> Path:
    """A ``ga_ann`` policy folder at `dest` (atomic); `info` (fitness, generation, source) goes into its json."""
    import torch

    model_config = {"obs": OBS, "variant": rules.to_dict(), "players": rules.players, "hidden": int(hidden),
                    "layout": LAYOUT, **(info or {})}
    from policies.checkpoints import write_policy

    return write_policy(dest, KIND, model_config, {"chromosome": torch.from_numpy(_weights(chromosome, hidden).copy())})


def read_chromosome(path: str | Path) -> tuple[np.ndarray, int]:
    """(chromosome, hidden units) of the ``ga_ann`` policy that `path` names (`find_policy`); `PolicyFileError`."""
    from policies.checkpoints import PolicyFileError, find_policy, load_weights, read_meta

    folder = find_policy(path)
    meta = read_meta(folder)
    config = meta.get("model_config") or {}
    if meta.get("kind") != KIND:
        raise PolicyFileError(f"'{folder}' holds a {meta.get('kind')!r} policy, not a {KIND} network")
    if config.get("obs") != OBS:
        raise PolicyFileError(f"'{folder}': a {KIND} network reads {OBS}, this one {config.get('obs')!r}")
    hidden = config.get("hidden")
    weights = load_weights(folder).get("chromosome")
    if not isinstance(hidden, int) or hidden < 1 or weights is None or tuple(weights.shape) != (n_weights(hidden),):
        raise PolicyFileError(f"'{folder}': its chromosome does not fit {hidden!r} hidden units")
    return weights.double().numpy(), hidden


def load_player(folder: Path, meta: dict[str, Any], spec: str) -> AnnPlayer:
    """The `Player` of a ``ga_ann`` policy folder (its loader in ``policies.saved.REGISTRY``)."""
    chromosome, hidden = read_chromosome(folder)
    return AnnPlayer(spec, chromosome, hidden)


# ------------------------------------------------------------------ fitness games
@dataclass(frozen=True)
class FitnessSpec:
    """What every fitness game of a run shares (plain data: it travels to Ray tasks)."""

    rules: dict[str, Any]
    """The rules as `Rules` fields."""
    opponent: str = "semi_smart"
    """Built-in bot in every other seat."""
    games: int = 250
    """Games per chromosome."""
    seed: int = 0
    """With the generation and chromosome index, decides every game."""
    common_dice: bool = False
    """Every chromosome of a generation rolls the same dice streams."""
    max_plies: int = 10_000
    """Die rolls after which a game stops (counted as no win)."""
    hidden: int = HIDDEN


def game_seed(seed: int, generation: int, index: int, common_dice: bool = False) -> int:
    """The dice seed of chromosome `index`'s games in `generation` (below 2**63)."""
    words = [seed, generation] if common_dice else [seed, generation, index]
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> np.uint64(1))


@kernel
def _covered(state, tab, seat):
    """Mean squares covered by the tokens of `seat`: 0 in base, progress + 1 on the path (the engine's measure)."""
    return _seat_pips(state, tab, seat) / tab[R_TOKENS]


@kernel
def _play_ann_games(states, tab, dice, bot_rng, masks, weights, hidden, chrom_of_game, ann_seat, bot, max_plies,
                    wins, own, enemy, view, features, scratch_mask, logits, choice, events):
    """Play every game to its end: seat ``ann_seat[b]`` is chromosome ``chrom_of_game[b]``, the others `bot`."""
    players = tab[R_PLAYERS]
    for b in range(states.shape[0]):
        s = states[b]
        w = weights[chrom_of_game[b]]
        while s[OVER] == 0 and s[PLY] < max_plies:
            if s[CURRENT] == ann_seat[b]:
                for i in range(features.shape[0]):
                    features[i] = 0.0
                view_from(s, tab, s[CURRENT], view)  # as ludo_env.observations.encode does
                _OBS_KERNEL(s, tab, view, scratch_mask, features)
                t = ann_choice(w, hidden, features, masks[b], logits)
            else:
                t = choose(bot, s, tab, masks[b], bot_rng, b)
            choice[0] = t
            step_batch(states[b : b + 1], tab, dice[b : b + 1], choice, events, masks[b : b + 1])
        seat = ann_seat[b]
        wins[b] = 1 if s[OVER] == 1 and s[PLACES + seat] == 1 else 0
        own[b] = _covered(s, tab, seat)
        others = 0.0
        for o in range(players):
            if o != seat:
                others += _covered(s, tab, o)
        enemy[b] = others / (players - 1)


STAT_COLUMNS = ("games", "wins", "distance", "enemy_distance")


def play_fitness(chromosomes: np.ndarray, indices: np.ndarray, generation: int, spec: FitnessSpec) -> np.ndarray:
    """Play the fitness games of `chromosomes` (population rows `indices`): float64 (K, 4), `STAT_COLUMNS`."""
    from ludo_env.engine.layout import compile_rules
    from policies.bots import bot_id
    from policies.tournament import BOT_SEED_SALT

    rules = Rules.load(spec.rules)
    tab = compile_rules(rules)
    weights = np.ascontiguousarray(chromosomes, dtype=np.float64).reshape(len(indices), n_weights(spec.hidden))
    k, g, n = len(indices), spec.games, rules.players
    seeds = [game_seed(spec.seed, generation, int(i), spec.common_dice) for i in indices]
    dice = np.concatenate([rngmod.streams(s, g) for s in seeds]) if k else np.zeros(0, np.uint64)
    bot_rng = np.concatenate([rngmod.streams(s ^ BOT_SEED_SALT, g) for s in seeds]) if k else np.zeros(0, np.uint64)
    states = np.empty((k * g, STATE_LEN), dtype=STATE_DTYPE)
    masks = np.zeros((k * g, MAX_TOKENS), dtype=np.int8)
    reset_batch(states, tab, dice, np.zeros(k * g, dtype=np.int64), masks)  # seat 0 rolls first
    ann_seat = np.tile((n - np.arange(g) % n) % n, k).astype(np.int64)
    chrom_of_game = np.repeat(np.arange(k, dtype=np.int64), g)
    wins = np.zeros(k * g, dtype=np.int64)
    own, enemy = np.zeros(k * g), np.zeros(k * g)
    _play_ann_games(states, tab, dice, bot_rng, masks, weights, spec.hidden, chrom_of_game, ann_seat,
                    bot_id(spec.opponent), spec.max_plies, wins, own, enemy,
                    np.empty((MAX_PLAYERS, MAX_TOKENS), dtype=STATE_DTYPE), np.zeros(INPUTS, dtype=np.float32),
                    np.zeros(MAX_TOKENS, dtype=np.int8), np.empty(OUTPUTS), np.zeros(1, np.int64),
                    np.zeros(1, np.int32))
    def per_chromosome(x: np.ndarray) -> np.ndarray:
        return x.reshape(k, g).sum(axis=1).astype(np.float64)

    return np.stack([np.full(k, float(g)), per_chromosome(wins), per_chromosome(own), per_chromosome(enemy)], axis=1)


def fitness(stats: np.ndarray) -> np.ndarray:
    """Seed 001's eq. 2 from `play_fitness` rows: (Wins + (Distance - EnemyDistance) / 1000) / games * 100."""
    games, wins, own, enemy = stats.T
    return (wins + (own - enemy) / 1000.0) / games * 100.0


@functools.cache
def _remote_play_fitness():
    import ray

    return ray.remote(num_cpus=1)(play_fitness)


def evaluate_population(population: np.ndarray, generation: int, spec: FitnessSpec, tasks: int) -> np.ndarray:
    """`play_fitness` of the whole population, in `tasks` Ray tasks of consecutive chromosomes (Ray is running)."""
    import ray

    chunks = [c for c in np.array_split(np.arange(len(population)), max(1, min(tasks, len(population)))) if c.size]
    remote = _remote_play_fitness()
    refs = [remote.remote(population[c], c, generation, spec) for c in chunks]
    return np.concatenate(ray.get(refs))


# ------------------------------------------------------------------ the genetic algorithm
@dataclass(frozen=True)
class GAParams:
    """The GA's own knobs (launch.training.algorithms.ga.GASettings carries them from the config)."""

    population: int = 30
    crossover_rate: float = 0.85
    mutation_rate: float = 0.45
    mutation_sigma: float = 2.0
    elitism: float = 0.75


def init_population(size: int, rng: np.random.Generator, prior: np.ndarray | None = None,
                    init_sigma: float = 1.0, hidden: int = HIDDEN) -> np.ndarray:
    """(size, genes): uniform in [-0.77, 0.77], or `prior` plus N(0, init_sigma) on every gene of every member."""
    if prior is None:
        return rng.uniform(-INIT_RANGE, INIT_RANGE, size=(size, n_weights(hidden)))
    prior = _weights(prior, hidden)
    return prior[None, :] + rng.normal(0.0, init_sigma, size=(size, prior.size))


def elite_count(size: int, elitism: float) -> int:
    """Survivors of a generation: floor(elitism * size) (22 of 30 at 75%)."""
    return math.floor(elitism * size + 1e-9)


def rank_probabilities(fitness_values: np.ndarray) -> np.ndarray:
    """Ranked roulette: chance proportional to rank (1 the worst .. n the best; equal fitness by position)."""
    order = np.argsort(fitness_values, kind="stable")
    ranks = np.empty(len(order), dtype=np.float64)
    ranks[order] = np.arange(1, len(order) + 1)
    return ranks / ranks.sum()


def select_parents(fitness_values: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Two distinct members by ranked roulette: the second drawn with the first left out."""
    p = rank_probabilities(fitness_values)
    first = int(rng.choice(len(p), p=p))
    p[first] = 0.0
    second = int(rng.choice(len(p), p=p / p.sum()))
    return first, second


def crossover_points(rng: np.random.Generator, length: int) -> tuple[int, int]:
    """Two cuts 1 <= lo < hi <= length - 1, uniform over such pairs."""
    lo, hi = sorted(rng.choice(np.arange(1, length), size=2, replace=False))
    return int(lo), int(hi)


def two_point_crossover(a: np.ndarray, b: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Children of `a` and `b` swapping genes lo..hi-1: (a with b's middle, b with a's middle)."""
    c1, c2 = a.copy(), b.copy()
    c1[lo:hi], c2[lo:hi] = b[lo:hi], a[lo:hi]
    return c1, c2


def gaussian_mutation(chromosome: np.ndarray, rate: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """A copy with N(0, sigma) added to each gene with chance `rate`."""
    hit = rng.random(chromosome.size) < rate
    noise = rng.normal(0.0, sigma, size=chromosome.size)
    return chromosome + np.where(hit, noise, 0.0)


def next_generation(population: np.ndarray, fitness_values: np.ndarray, params: GAParams,
                    rng: np.random.Generator) -> np.ndarray:
    """The next population: the elite unchanged (best first), then offspring (module docstring)."""
    size, genes = population.shape
    order = np.argsort(-fitness_values, kind="stable")
    elite = population[order[: elite_count(size, params.elitism)]]
    children: list[np.ndarray] = []
    while len(elite) + len(children) < size:
        i, j = select_parents(fitness_values, rng)
        if rng.random() < params.crossover_rate:
            c1, c2 = two_point_crossover(population[i], population[j], *crossover_points(rng, genes))
        else:
            c1, c2 = population[i].copy(), population[j].copy()
        children += [gaussian_mutation(c, params.mutation_rate, params.mutation_sigma, rng) for c in (c1, c2)]
    return np.concatenate([elite, np.array(children[: size - len(elite)]).reshape(-1, genes)])


# ------------------------------------------------------------------ saved GA state
@dataclass
class GAState:
    """A GA between generations: the population of `generation` (not yet evaluated) and what resumes it."""

    generation: int
    population: np.ndarray
    rng_state: dict[str, Any]
    """``Generator.bit_generator.state`` after breeding `population`."""
    history: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    """(generations evaluated, 2): mean and max fitness of each."""
    best: np.ndarray | None = None
    """The fittest chromosome measured so far, over the whole run."""
    best_fitness: float = -math.inf
    best_generation: int = -1
    elapsed_s: float = 0.0
    wandb_id: str | None = None

    def rng(self) -> np.random.Generator:
        """A generator that continues exactly where the saved one stood."""
        generator = np.random.Generator(getattr(np.random, self.rng_state["bit_generator"])())
        generator.bit_generator.state = self.rng_state
        return generator

    def save(self, path: Path) -> None:
        """One ``.npz`` written to a temporary file, synced, then renamed over `path`: never seen half-written."""
        meta = {"format": GA_STATE_FORMAT, "generation": self.generation, "rng_state": self.rng_state,
                "best_fitness": self.best_fitness if math.isfinite(self.best_fitness) else None,
                "best_generation": self.best_generation, "elapsed_s": self.elapsed_s, "wandb_id": self.wandb_id}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        with open(tmp, "wb") as f:
            np.savez(f, population=self.population, history=self.history,
                     best=self.best if self.best is not None else np.zeros(0), meta=np.array(json.dumps(meta)))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> GAState:
        """The state saved at `path`; ValueError with one line if it is missing or damaged."""
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                population, history, best = data["population"], data["history"], data["best"]
        except Exception as err:  # noqa: BLE001  (a missing file, a truncated zip, a missing key: all say "damaged")
            raise ValueError(f"'{path}' is missing or damaged: {' '.join(str(err).split())[:200]}") from None
        if meta.get("format") != GA_STATE_FORMAT:
            raise ValueError(f"'{path}' is not a {GA_STATE_FORMAT} file")
        return cls(generation=int(meta["generation"]), population=population, rng_state=meta["rng_state"],
                   history=history.reshape(-1, 2), best=best if best.size else None,
                   best_fitness=-math.inf if meta["best_fitness"] is None else float(meta["best_fitness"]),
                   best_generation=int(meta["best_generation"]), elapsed_s=float(meta["elapsed_s"]),
                   wandb_id=meta.get("wandb_id"))
