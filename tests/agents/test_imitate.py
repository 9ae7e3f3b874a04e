"""``+exp=imitate``: seed 001's network learns a bot's recorded moves, plays as ckpt:, and seeds the GA.

There is no person here, so the records are `hybrid`'s decisions against three
random players, recorded by the evaluator (the paper: a person's five games).
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from launch.cli import UserError
from launch.training.trainers import imitate
from ludo_env.engine import compile_rules
from ludo_env.observations import encode
from ludo_env.rules import Rules
from policies import evolution as ev
from policies.checkpoints import read_meta
from policies.records import load_decisions
from policies.tournament import play_tournament
from tests.agents.ga_runs import ROOT, train
from tests.launch.configs import metrics, script_env, train_config, wait_until

PYLUDO = Rules.load("pyludo")


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    file = tmp_path_factory.mktemp("records") / "hybrid.jsonl"
    play_tournament(["hybrid", "random", "random", "random"], 24, PYLUDO, seed=0, record=file, rate=False)
    return file


def test_imitation_learns_the_bots_moves_and_the_network_plays_as_ckpt(tmp_path, records):
    run_dir = tmp_path / "run"
    proc = train(run_dir, "+exp=imitate", f"algo.records=[{records}]", "algo.epochs=2000", "eval.final_games=40",
                 "wandb.mode=disabled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    training = summary["training"]
    # Picking a legal token at random would be right in about half of the real choices (two or more legal).
    assert training["train_choice_accuracy"] > 0.7 and training["val_choice_accuracy"] > 0.65, training
    assert training["val_mse"] < 0.08 and training["iteration"] == 2000
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 500, 1000, 1500, 2000]
    assert rows[-1]["train_mse"] < rows[0]["train_mse"]

    # ckpt:<run> plays the saved network, and it moves as the trained model predicts on the records.
    decisions = load_decisions([records])
    chromosome, _ = ev.read_chromosome(run_dir)
    player = ev.AnnPlayer("ann", chromosome)
    tab = compile_rules(PYLUDO)
    right = player.act(decisions.states, tab, decisions.legal) == decisions.chosen
    low, high = sorted([training["train_accuracy"], training["val_accuracy"]])
    assert low - 1e-9 <= right.mean() <= high + 1e-9  # their weighted mean: the same moves as in training
    result = play_tournament([f"ckpt:{run_dir}", "random", "random", "random"], 40, PYLUDO, seed=1, rate=False)
    assert result.finished.all()

    # The GA can start from it: its chromosome plus noise.
    population = ev.init_population(4, np.random.default_rng(0), chromosome, init_sigma=1.0)
    assert abs((population - chromosome).std() - 1.0) < 0.1


@pytest.fixture
def imitating(tmp_path, records):
    """An imitation run under way (two metrics rows written), started in the test's setup, beside the other
    worker's tests; only the stop is timed alone (tests/conftest.py)."""
    run_dir = tmp_path / "run"
    # Its output goes to files, not pipes: nobody reads while the test waits its turn, and a full pipe would hold
    # the run up on a write.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "launch/train.py", "+exp=imitate", f"algo.records=[{records}]",
                                 "algo.epochs=10000000", "algo.target_mse=0", "algo.log_every=50",
                                 "wandb.mode=disabled", f"hydra.run.dir={run_dir}"], cwd=ROOT, stdout=stdout,
                                stderr=stderr, env=script_env())
    try:
        wait_until(lambda: (run_dir / "metrics.jsonl").is_file() and len(metrics(run_dir)) >= 2, proc, 120,
                   "second metrics row", lambda: err.read_text()[-3000:])
        yield run_dir, proc, out, err
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_sigterm_writes_the_network_trained_so_far_as_the_policy(imitating):
    """A scheduler's stop (SIGTERM) mid-training saves, as Ctrl-C does, through the shared run loop."""
    run_dir, proc, stdout, stderr = imitating
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    out, err = stdout.read_text(), stderr.read_text()
    assert proc.returncode == 143, err[-3000:]  # 128 + SIGTERM, once the policy is saved
    stopped = re.search(r"stopped at epoch (\d+): saving the network as the policy", out)
    assert stopped, out[-2000:]
    assert f"saved: {run_dir / 'policy'}" in out
    assert not (run_dir / "summary.json").exists()  # stopped: no final evaluation
    assert read_meta(run_dir / "policy")["model_config"]["epochs"] == int(stopped.group(1)) >= 50
    chromosome, _ = ev.read_chromosome(run_dir)
    result = play_tournament([f"ckpt:{run_dir}", "random", "random", "random"], 4, PYLUDO, seed=1, rate=False)
    assert result.finished.all() and np.isfinite(chromosome).all()


def test_the_saved_chromosome_is_the_torch_network(records):
    import torch

    torch.manual_seed(0)
    model = imitate.network()
    decisions = load_decisions([records])
    x = encode(ev.OBS, decisions.states[:50], compile_rules(PYLUDO))
    with torch.no_grad():
        expected = torch.sigmoid(model(torch.from_numpy(x.astype(np.float64)))).numpy()
    np.testing.assert_allclose(ev.ann_outputs(imitate.chromosome_of(model), x), expected, rtol=1e-12)


def test_validation_holds_out_whole_games():
    games = np.repeat(np.array([f"f:{g}" for g in range(10)]), 7)
    train_rows, val_rows = imitate.split_games(games, 0.2, seed=3)
    assert len(set(games[val_rows])) == 2 and not set(games[val_rows]) & set(games[train_rows])
    assert len(train_rows) + len(val_rows) == len(games)
    assert len(imitate.split_games(games[:7], 0.2, seed=3)[1]) == 0  # one game: nothing to hold out


def test_bad_imitation_input_is_one_line(records, tmp_path):
    with pytest.raises(ValueError, match=r"^algo.records is empty"):
        train_config("+exp=imitate")
    with pytest.raises(ValueError, match=r"^algo.records: no such file '/no/file.jsonl'$"):
        train_config("+exp=imitate", "algo.records=[/no/file.jsonl]")
    with pytest.raises(ValueError, match=r"^algo.lr=0.0 is not allowed"):
        train_config("+exp=imitate", f"algo.records=[{records}]", "algo.lr=0")
    cfg = train_config("+exp=imitate", f"algo.records=[{records}]", "variant=classic", run_dir=str(tmp_path))
    with pytest.raises(UserError, match="^the records are pyludo with 4 players; the run's rules differ: give "
                                        "variant=pyludo"):
        imitate.train(cfg)
