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
``eval.panel`` bot, reported as `launch.trainers.ga` does. A run takes
seconds and is not resumed: the same seed trains the same network again.
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from launch.cli import UserError, one_line
from launch.runs import SUMMARY, RunDir, RunState, write_json
from launch.schema import TrainConfig


def train(cfg: TrainConfig) -> None:
    import torch

    from launch import build
    from launch.runs import WandbLogger
    from launch.trainers import final_evaluation
    from ludo_env.engine.layout import compile_rules
    from ludo_env.observations import encode
    from ludo_env.rules import Rules
    from policies.checkpoints import POLICY_DIR
    from policies.evolution import OBS, write_ann_policy
    from policies.records import RecordError, load_decisions, rule_changes

    imitate = cfg.algo
    if cfg.resume:
        raise UserError(f"resume={cfg.resume}: imitation runs are not resumed: start a new one (the same seed "
                        "trains the same network)")
    if cfg.obs.name != OBS:
        raise UserError(f"obs={cfg.obs.name}: seed 001's network reads {OBS}: give obs={OBS}")
    seed = cfg.seed if imitate.seed is None else imitate.seed
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
    train_rows, val_rows = split_games(decisions.games, imitate.validation, seed)

    run = RunDir(cfg.run_dir)
    from hydra.core.hydra_config import HydraConfig

    run.save_overrides([o for o in HydraConfig.get().overrides.task if not o.startswith("resume=")])
    logger = WandbLogger(cfg, run, RunState())

    # Inputs, targets, masks: float64, so the saved chromosome plays exactly as the trained model predicts.
    x = torch.from_numpy(encode(OBS, decisions.states, compile_rules(rules)).astype(np.float64))
    y = torch.nn.functional.one_hot(torch.from_numpy(decisions.chosen), 4).double()
    legal = torch.from_numpy(decisions.legal.astype(bool))
    choice = legal.sum(dim=1) >= 2
    torch.manual_seed(seed)
    torch.set_num_threads(1)  # a 60-6-4 network: more threads only add synchronisation (measured 6x slower with 2)
    model = network()
    optimizer = torch.optim.SGD(model.parameters(), lr=imitate.lr)
    print(f"run folder: {run.path}  ({len(decisions):,} decisions from {len(set(decisions.games)):,} games, "
          f"{len(train_rows):,} for training, {len(val_rows):,} held out; {rules.name}; wandb {logger.mode})",
          flush=True)

    started = time.perf_counter()
    t, v = torch.from_numpy(train_rows), torch.from_numpy(val_rows)
    x_train, y_train = x[t], y[t]
    epoch, row = 0, None
    while True:
        out = torch.sigmoid(model(x_train))
        mse = float(((out - y_train) ** 2).mean())
        stop = (mse < imitate.target_mse or epoch >= imitate.epochs
                or (cfg.budget.minutes and time.perf_counter() - started >= cfg.budget.minutes * 60))
        if stop or epoch % imitate.log_every == 0:
            row = report(model, x, y, legal, choice, t, v, epoch, mse, time.perf_counter() - started)
            run.append_metrics(row)
            logger.log({}, row)
            if cfg.progress:
                print(progress_line(row), flush=True)
        if stop:
            break
        loss = 0.5 * ((out - y_train) ** 2).sum(dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch += 1

    policy = run.path / POLICY_DIR
    write_ann_policy(policy, chromosome_of(model), rules, {
        "source": "imitate", "records": [str(r) for r in imitate.records], "epochs": epoch,
        "train_mse": row["train_mse"], "val_mse": row["val_mse"], "val_accuracy": row["val_accuracy"]})
    final = final_evaluation(cfg, rules, policy) if cfg.eval.final_games else None
    summary = write_summary(cfg, run, row, policy, final, len(decisions))
    logger.finish(final, policy)
    print(summary, flush=True)


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
    import torch

    from policies.evolution import HIDDEN, INIT_RANGE, INPUTS, OUTPUTS

    model = torch.nn.Sequential(torch.nn.Linear(INPUTS, HIDDEN), torch.nn.Sigmoid(), torch.nn.Linear(HIDDEN, OUTPUTS))
    model = model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-INIT_RANGE, INIT_RANGE)
    return model


def chromosome_of(model) -> np.ndarray:
    """The model's weights in the chromosome layout of `policies.evolution` (nn.Linear stores (out, in))."""
    from policies.evolution import pack

    first, last = model[0], model[2]
    return pack(first.weight.detach().numpy().T, first.bias.detach().numpy(), last.weight.detach().numpy().T,
                last.bias.detach().numpy())


def report(model, x, y, legal, choice, t, v, epoch: int, train_mse: float, seconds: float) -> dict[str, Any]:
    import torch

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


def write_summary(cfg: TrainConfig, run: RunDir, row: dict[str, Any], policy, final, decisions: int) -> str:
    from launch.trainers import final_lines

    lines = [f"done: {cfg.name}, {row['iteration']} epochs on {decisions:,} decisions, {60 * row['minutes']:.0f} s",
             progress_line(row),
             f"policy:     {policy}   (play it as ckpt:{run.path}; seed the GA with algo.init={run.path})"]
    results, commands = final_lines(cfg, policy, final)
    lines += results
    write_json(run.path / SUMMARY, {"name": cfg.name, "decisions": decisions, "records": list(cfg.algo.records),
                                    "policy": str(policy), "training": row, "final_evaluation": final,
                                    "evaluate_commands": commands})
    return "\n".join(lines)
