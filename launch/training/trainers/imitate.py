"""Seed 001 §2: its 60-6-4 sigmoid network learns to copy recorded decisions: ``python launch/train.py +exp=imitate``.

    python launch/evaluate.py players='[hybrid,random,random,random]' games=20 variant=pyludo record=records.jsonl
    python launch/train.py +exp=imitate 'algo.records=[records.jsonl]'
    python launch/train.py +exp=ga_ann algo.init=outputs/train/<this run>     # the GA starts from it

Data: record files (`policies.records`) of one rule set, the run's variant:
a person's games from ``launch/play.py``, or, where there is no person, a
bot's from ``launch/evaluate.py record=`` (seed 001 used five games of a
person against three random players, 363 decisions). A decision's input is
the ``seed001_flags60`` encoding of its position (the mover's 60 flags), its
target the one-hot chosen token. A share ``validation`` of the recorded
games, whole games drawn with the seed, is held out (seed 001 validated on
two further games); the rest trains. ``skip_forced`` leaves out decisions
with one legal token.

Training, as seed 001 did with FANN: weights uniform in [-0.77, 0.77];
full-batch backpropagation, one plain gradient step per epoch on the whole
training set with learning rate ``lr`` (0.7) on E = 1/2 sum_k (y_k - d_k)^2
averaged over the decisions (FANN's batch update); it stops once the
training MSE (mean over decisions and the 4 outputs, FANN's MSE) is below
``target_mse`` (0.01), after ``epochs`` epochs, or after ``budget.minutes``.
Reported every ``log_every`` epochs and at the end: training and validation
MSE, and accuracy, the share of decisions where the network's move (its
highest output among the legal tokens, as it plays) is the recorded one,
also over the *choices* alone (two or more legal tokens; a forced move is
always right).

Run folder: ``overrides.txt``; ``policy/``, the network as a ``ga_ann``
policy folder (`policies.evolution.write_ann_policy`), so ``ckpt:<run>``
plays it and ``algo.init=<run>`` seeds the GA; ``metrics.jsonl``;
``summary.json``; ``wandb/``. At the end the network plays
``eval.final_games`` games against ``players - 1`` copies of each
``eval.panel`` bot, reported as `launch.training.trainers.ga` does. A run takes
seconds and is not resumed: the same seed trains the same network again;
Ctrl-C or SIGTERM writes the network as trained so far as the policy.
`launch.training.loop` runs the epochs; this module supplies the imitation's parts.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from launch.cli import UserError, one_line
from launch.training import build
from launch.training.loop import Report, Trainer, run
from launch.training.runs import RunState
from launch.training.schema import TrainConfig
from ludo_env.engine.layout import compile_rules
from ludo_env.observations import encode
from ludo_env.rules import Rules
from policies.checkpoints import POLICY_DIR
from policies.evolution import HIDDEN, INIT_RANGE, INPUTS, OBS, OUTPUTS, pack, write_ann_policy
from policies.records import Decisions, RecordError, load_decisions, rule_changes


def train(cfg: TrainConfig, notes: Sequence[str] = ()) -> None:
    run(Imitation(cfg, check(cfg)), notes)


def check(cfg: TrainConfig) -> Decisions:
    """The decisions to learn from, or `UserError` of one line: run by `launch.train.checked_config` before
    Hydra makes the run folder, so a damaged record file or records of other rules leave none."""
    imitate = cfg.algo
    if cfg.resume:
        raise UserError(f"resume={cfg.resume}: imitation runs are not resumed: start a new one (the same seed "
                        "trains the same network)")
    if cfg.obs.name != OBS:
        raise UserError(f"obs={cfg.obs.name}: seed 001's network reads {OBS}: give obs={OBS}")
    rules = Rules.load(build.rules_mapping(cfg))
    try:
        decisions = load_decisions(list(imitate.records))
    except RecordError as err:
        raise UserError(f"algo.records: {one_line(err)}") from None
    if decisions.rules != rules:
        recorded = decisions.rules
        changed = f" and changes {sorted(rule_changes(recorded))}" if rule_changes(recorded) else ""
        raise UserError(f"the records are {recorded.name} with {recorded.players} players{changed}; the run's rules "
                        f"differ: give variant={recorded.name} (and the same rule changes)")
    if imitate.skip_forced:
        decisions = decisions.subset(np.flatnonzero(decisions.legal.sum(axis=1) >= 2))
    if not len(decisions):
        raise UserError("algo.records: no decisions left to learn from")
    return decisions


class Imitation(Trainer):
    """The loop's iteration is the epoch; a save writes the network as the policy (there is no resume)."""

    unit = "epoch"
    saves = "the network as the policy"
    resumable = False
    save_every = 0

    def __init__(self, cfg: TrainConfig, decisions):
        super().__init__(cfg)
        self.decisions = decisions
        self.seed = cfg.seed if cfg.algo.seed is None else cfg.algo.seed
        self.policy = self.run.path / POLICY_DIR
        self.done, self.row, self.loss = False, None, None

    def open(self, resume: bool) -> tuple[RunState, Path | None]:
        return RunState(), None

    def start(self, state: RunState) -> str:
        decisions = self.decisions
        self.train_rows, self.val_rows = split_games(decisions.games, self.cfg.algo.validation, self.seed)
        # Inputs, targets, masks: float64, so the saved chromosome plays exactly as the trained model predicts.
        self.x = torch.from_numpy(encode(OBS, decisions.states, compile_rules(self.rules)).astype(np.float64))
        self.y = torch.nn.functional.one_hot(torch.from_numpy(decisions.chosen), 4).double()
        self.legal = torch.from_numpy(decisions.legal.astype(bool))
        self.choice = self.legal.sum(dim=1) >= 2
        torch.manual_seed(self.seed)
        torch.set_num_threads(1)  # a 60-6-4 network: more threads only add synchronisation
        self.model = network()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.cfg.algo.lr)
        self.t, self.v = torch.from_numpy(self.train_rows), torch.from_numpy(self.val_rows)
        return (f"{len(decisions):,} decisions from {len(set(decisions.games)):,} games, {len(self.train_rows):,} "
                f"for training, {len(self.val_rows):,} held out; {self.rules.name}")

    def budget_spent(self, state: RunState) -> bool:
        return self.done

    def advance(self, state: RunState) -> None:
        """One full-batch gradient step on the last epoch's loss (none before the first), then this epoch's
        forward pass."""
        if self.loss is not None:
            self.optimizer.zero_grad()
            self.loss.backward()
            self.optimizer.step()
            state.iteration += 1
        out = torch.sigmoid(self.model(self.x[self.t]))
        y_train = self.y[self.t]
        self.mse = float(((out - y_train) ** 2).mean())
        self.loss = 0.5 * ((out - y_train) ** 2).sum(dim=1).mean()

    def report(self, state: RunState) -> Report | None:
        imitate, epoch = self.cfg.algo, state.iteration
        minutes = self.cfg.budget.minutes
        self.done = bool(self.mse < imitate.target_mse or epoch >= imitate.epochs
                         or (minutes and state.elapsed_s >= minutes * 60))
        if not (self.done or epoch % imitate.log_every == 0):
            return None
        self.row = report(self.model, self.x, self.y, self.legal, self.choice, self.t, self.v, epoch, self.mse,
                          state.elapsed_s)
        return Report(self.row, progress_line(self.row))

    def save(self, state: RunState) -> Path:
        row = self.row or {}
        write_ann_policy(self.policy, chromosome_of(self.model), self.rules, {
            "source": "imitate", "records": [str(r) for r in self.cfg.algo.records], "epochs": state.iteration,
            "train_mse": row.get("train_mse"), "val_mse": row.get("val_mse"),
            "val_accuracy": row.get("val_accuracy")})
        return self.policy

    def finish(self, state: RunState, saved: Path | None) -> Path | None:
        return self.policy

    def summary(self, state: RunState, saved: Path | None, policy: Path | None) -> tuple[list[str], dict[str, Any]]:
        row, decisions = self.row, len(self.decisions)
        lines = [(f"done: {self.cfg.name}, {row['iteration']} epochs on {decisions:,} decisions, "
                  f"{60 * row['minutes']:.0f} s"),
                 progress_line(row),
                 (f"policy:     {policy}   (play it as ckpt:{self.run.path}; seed the GA with "
                  f"algo.init={self.run.path})")]
        return lines, {"name": self.cfg.name, "decisions": decisions, "records": list(self.cfg.algo.records),
                       "policy": str(policy), "training": row}


def split_games(games: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, validation rows): a share of the distinct games, drawn with `seed`, held out whole."""
    names = np.unique(games)
    held = round(share * len(names))
    if share > 0 and len(names) >= 2:
        held = min(max(held, 1), len(names) - 1)  # both sides get a game
    else:
        held = 0
    out = np.random.default_rng(seed).permutation(names)[:held]
    validation = np.isin(games, out)
    return np.flatnonzero(~validation), np.flatnonzero(validation)


def network():
    """Seed 001's 60-6-4 network, sigmoid hidden units, float64, weights and biases uniform in [-0.77, 0.77]; it
    returns the output units' inputs (the sigmoid of them is the network's output)."""
    model = torch.nn.Sequential(torch.nn.Linear(INPUTS, HIDDEN), torch.nn.Sigmoid(), torch.nn.Linear(HIDDEN, OUTPUTS))
    model = model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-INIT_RANGE, INIT_RANGE)
    return model


def chromosome_of(model) -> np.ndarray:
    """The model's weights in the chromosome layout of `policies.evolution` (nn.Linear stores (out, in))."""
    first, last = model[0], model[2]
    return pack(first.weight.detach().numpy().T, first.bias.detach().numpy(), last.weight.detach().numpy().T,
                last.bias.detach().numpy())


def report(model, x, y, legal, choice, t, v, epoch: int, train_mse: float, seconds: float) -> dict[str, Any]:
    with torch.no_grad():
        logits = model(x)
        out = torch.sigmoid(logits)
        # As the player moves: the highest output among the legal tokens (lowest index on ties).
        right = logits.masked_fill(~legal, -math.inf).argmax(dim=1) == y.argmax(dim=1)

    def mse(rows) -> float | None:
        return float(((out[rows] - y[rows]) ** 2).mean()) if len(rows) else None

    def accuracy(rows, only_choices: bool = False) -> float | None:
        if only_choices:
            rows = rows[choice[rows]]
        return float(right[rows].double().mean()) if len(rows) else None

    return {"iteration": epoch, "train_mse": train_mse, "val_mse": mse(v),
            "train_accuracy": accuracy(t), "val_accuracy": accuracy(v),
            "train_choice_accuracy": accuracy(t, True), "val_choice_accuracy": accuracy(v, True),
            "minutes": round(seconds / 60, 3)}


def progress_line(row: dict[str, Any]) -> str:
    def pct(value) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    val = "-" if row["val_mse"] is None else f"{row['val_mse']:.4f}"
    return (f"epoch {row['iteration']:6d} | train mse {row['train_mse']:.4f} acc {pct(row['train_accuracy'])} | "
            f"val mse {val} acc {pct(row['val_accuracy'])} (choices {pct(row['val_choice_accuracy'])})")
