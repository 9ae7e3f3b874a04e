"""No command loads a user-supplied path through a pickle.

Every loader that takes a path is handed a folder of crafted pickles (`tests.untrusted`: unpickled, they run
``touch <marker>``) as a user would give it on the command line. Each must refuse it in one line, and the
marker must never appear. A module is built only from ``policy.json`` and ``weights.pt`` (``weights_only``); a
resume reads only pickles this user's own runs signed (`launch.training.runs`).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.untrusted import crafted_algorithm_folder, crafted_module_folder, crafted_run_folder

ROOT = Path(__file__).resolve().parents[2]

# (name, folder kind, argv with {F} for the crafted folder and {T} for a scratch folder, what the one-line refusal
#  says).
REFUSED = "is an RLlib checkpoint, which loads only by unpickling (a pickle can run any code): refused"
LOADERS = [
    ("ckpt: module checkpoint", "module",
     ["launch/evaluate.py", "players=[ckpt:{F},random]", "games=4", "progress=false", "hydra.run.dir={T}/run"],
     REFUSED),
    ("ckpt: algorithm checkpoint", "algorithm",
     ["launch/evaluate.py", "players=[ckpt:{F},random]", "games=4", "progress=false", "hydra.run.dir={T}/run"],
     REFUSED),
    ("ckpt: run folder", "run",
     ["launch/evaluate.py", "players=[ckpt:{F},random]", "games=4", "progress=false", "hydra.run.dir={T}/run"],
     "has no complete checkpoint"),
    ("resume=", "run",
     ["launch/train.py", "resume={F}", "hydra.run.dir={F}", "wandb.mode=disabled"],
     "was not written by this user's runs (no signature.json); resume refuses pickles from elsewhere"),
    ("league.py add", "module", ["launch/league.py", "add", "{F}", "league={T}/league.db"], REFUSED),
    ("league.external", "module",
     ["launch/train.py", "+exp=smoke", "league.external=[{F}]", "hydra.run.dir={T}/run", "wandb.mode=disabled"],
     "league.external: '{F}' " + REFUSED),
    ("serve.py agents=", "module", ["launch/serve.py", "agents=[ckpt:{F}]", "port=0"],
     REFUSED),
    ("play.py opponents=", "module", ["launch/play.py", "opponents=[ckpt:{F}]"],
     REFUSED),
    ("export.py", "algorithm", ["launch/export.py", "ckpt={F}", "out={T}/agent.pt"], REFUSED),
    ("benchmarks/action_gaps.py", "module", ["benchmarks/action_gaps.py", "{F}"],
     REFUSED),
    ("benchmarks/paired.py", "module", ["benchmarks/paired.py", "classic", "ckpt:{F}", "random", "--games", "4"],
     REFUSED),
    ("benchmarks/strength.py", "module", ["benchmarks/strength.py", "classic", "ckpt:{F}", "--games", "4"],
     REFUSED),
    ("benchmarks/snapshot_average.py", "run", ["benchmarks/snapshot_average.py", "{F}"], "{F}"),
    ("benchmarks/evaluate.py --policy", "module", ["benchmarks/evaluate.py", "--policy", "crafted={F}"],
     REFUSED),
    ("benchmarks/search_speed.py", "module", ["benchmarks/search_speed.py", "--value", "{F}", "--policy", "{F}"],
     REFUSED),
    ("benchmarks/levers.py --reference", "module",
     ["benchmarks/levers.py", "--reference", "{F}", "--lever", "mcts16", "--games", "4", "--cross-games", "4",
      "--out", "{T}/levers"], REFUSED),
    ("benchmarks/levers.py --candidate", "module",
     ["benchmarks/levers.py", "--reference", "champion:classic", "--variant", "classic", "--candidate", "{F}",
      "--label", "crafted", "--games", "4", "--cross-games", "4", "--out", "{T}/levers"], REFUSED),
]

MAKERS = {"module": crafted_module_folder, "algorithm": crafted_algorithm_folder, "run": crafted_run_folder}


@pytest.mark.parametrize("name,kind,argv,says", LOADERS, ids=[loader[0] for loader in LOADERS])
def test_a_crafted_pickle_is_refused_and_never_runs(tmp_path, name, kind, argv, says):
    marker = tmp_path / "pwned"
    folder = MAKERS[kind](tmp_path / "crafted", marker)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = [a.replace("{F}", str(folder)).replace("{T}", str(scratch)) for a in argv]
    env = dict(os.environ, LUDO_LEAGUE_CHECKPOINT_KEY=str(tmp_path / "key"))
    env.pop("WANDB_MODE", None)
    try:
        done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL, env=env, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: still running after 240 s: it loaded the crafted folder instead of refusing it")
    assert not marker.exists(), f"{name} ran the crafted pickle"
    assert done.returncode != 0, f"{name} accepted the crafted folder: {done.stdout[-2000:]}"
    says = says.replace("{F}", str(folder))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    assert says in lines[0], lines[0]


@pytest.mark.parametrize("kind", ["module", "algorithm"])
def test_load_checkpoint_player_refuses_an_rllib_checkpoint_and_names_the_policy_to_give(tmp_path, kind):
    from policies.checkpoints import PolicyFileError
    from policies.modules import load_checkpoint_player

    marker = tmp_path / "pwned"
    # Inside a training checkpoint, the refusal names that checkpoint's policy folder.
    checkpoint = tmp_path / "run" / "checkpoints" / "iter_000001"
    (checkpoint / "policy").mkdir(parents=True)
    (checkpoint / "policy" / "policy.json").write_text("{}")
    folder = MAKERS[kind](checkpoint / "algorithm" / "learner_group" / "learner" / "rl_module" / "main"
                          if kind == "module" else checkpoint / "algorithm", marker)
    with pytest.raises(PolicyFileError) as err:
        load_checkpoint_player(folder)
    message = str(err.value)
    assert "\n" not in message and not marker.exists()
    assert message.startswith(f"'{folder}' is an RLlib checkpoint, which loads only by unpickling")
    assert f"give its training checkpoint's policy folder, '{(checkpoint / 'policy').resolve()}'" in message


# ------------------------------------------------------------------ weights.pt: tensors only, and a complete line
@pytest.fixture(scope="module")
def policy(tmp_path_factory) -> Path:
    """A real (untrained) PPO policy folder of the smoke run's main."""
    from launch.training.build import main_model_config
    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.checkpoints import write_policy
    from policies.modules import module_spec
    from tests.launch.configs import train_config

    cfg = train_config("+exp=smoke")
    model_config = main_model_config(cfg)
    module = module_spec("ppo", observation_space(cfg.obs.name), ACTION_SPACE, model_config).build()
    return write_policy(tmp_path_factory.mktemp("policy") / "policy", "ppo", model_config, module.state_dict())


def _truncated(weights: bytes, marker: Path) -> bytes:
    return weights[: len(weights) // 2]


def _pickled_code(weights: bytes, marker: Path) -> bytes:
    import io

    import torch

    from tests.untrusted import _RunsCode

    buffer = io.BytesIO()
    torch.save({"w": _RunsCode(marker)}, buffer)  # a real torch file whose one entry is a crafted object
    return buffer.getvalue()


def _not_a_state_dict(weights: bytes, marker: Path) -> bytes:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save([torch.zeros(2)], buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("damage,says", [
    (lambda weights, marker: b"", ("weights.pt' is damaged: it is empty (0 bytes); the policy was not saved or "
                                   "copied completely")),
    (_truncated, "weights.pt' is damaged: not a torch weights file ("),
    (lambda weights, marker: b"not torch at all", ("weights.pt' is damaged: not a torch weights file (16 bytes, not "
                                                   "the zip archive torch.save writes: truncated or another format)")),
    (_pickled_code, ("weights.pt' holds more than tensors, refused (weights are read with weights_only, which runs "
                     "no code: Trying to load unsupported GLOBAL posix.system whose module posix is blocked)")),
    (_not_a_state_dict, "weights.pt' is damaged: not a state dict (names to tensors) but a list"),
], ids=["empty", "truncated", "not torch", "pickled code", "a list"])
def test_a_damaged_or_crafted_weights_file_is_one_complete_line(policy, tmp_path, damage, says):
    import shutil

    marker = tmp_path / "pwned"
    folder = Path(shutil.copytree(policy, tmp_path / "policy"))
    weights = folder / "weights.pt"
    weights.write_bytes(damage(weights.read_bytes(), marker))
    done = subprocess.run([sys.executable, "launch/evaluate.py", f"players=[ckpt:{folder},random]", "games=4",
                           "progress=false", f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, stdin=subprocess.DEVNULL, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    assert says in lines[0], lines[0]
    assert lines[0].endswith((")", "completely", "a list")), f"cut short: {lines[0]}"
    assert not marker.exists()


def test_a_run_folders_ray_session_record_is_data_not_a_folder_whose_users_to_stop(tmp_path):
    """``ray_session.json`` of a run folder from elsewhere names any folder: a resume stops only processes of what
    has the shape of a Ray session folder, never those of a folder the file names (here, the user's own files)."""
    import json
    import signal

    from launch.training.runs import RAY_SESSION, RunDir, stop_leftovers

    hold = "import sys, time; f = open(sys.argv[1], 'a'); print('ready', flush=True); time.sleep(120)"
    bystander = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path / "mine.log")], stdout=subprocess.PIPE,
                                 text=True)
    try:
        assert bystander.stdout.readline().strip() == "ready"
        run = RunDir(tmp_path / "run")
        run.path.mkdir()
        # (never "/" here: a regression would stop every process of the user's)
        (run.path / RAY_SESSION).write_text(json.dumps({"session_dir": str(tmp_path), "driver_pid": 999_999_999,
                                                        "driver_start": 0}))
        assert stop_leftovers(run) == [] and bystander.poll() is None
    finally:
        bystander.send_signal(signal.SIGKILL)
        bystander.wait()
