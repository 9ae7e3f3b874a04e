"""The commands printed to replay an evaluation name the rules that were played, changed rules included, and a
benchmark reads changed rules as `launch/evaluate.py` does."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from launch.cli import UserError, benchmark_rules
from ludo_env.rules import Rules, RulesError
from policies.league.evaluation import player_command, variant_arguments, variant_label
from policies.tournament import play_tournament

ROOT = Path(__file__).resolve().parents[2]


def test_a_named_variant_is_its_name_and_each_changed_rule_is_one_override():
    assert variant_arguments(Rules.load("classic", players=4)) == ["variant=classic"]
    assert variant_arguments(Rules.load("classic", players=2)) == ["variant=classic"]  # the seats give the count
    changed = Rules.load("pyludo", players=4, star_capture="jump_end", enter_rolls=[5, 6])
    assert variant_arguments(changed) == ["variant=pyludo", "variant.enter_rolls=[5,6]",
                                          "variant.star_capture=jump_end"]
    assert variant_label(changed) == "pyludo enter_rolls=[5,6] star_capture=jump_end"
    from_file = Rules.load({**Rules.load("quick", players=2).to_dict(), "name": "mine", "blockades": True})
    assert variant_arguments(from_file)[:2] == ["variant=classic", "variant.name=mine"]
    changes = dict(arg.removeprefix("variant.").split("=", 1) for arg in variant_arguments(from_file)[1:])
    assert Rules.load("classic", players=2, **{k: yaml.safe_load(v) for k, v in changes.items()}) == from_file


def test_benchmark_rules_reads_changed_rules_as_yaml_and_leaves_the_rest():
    rules, rest = benchmark_rules("classic", ["ckpt:a", "variant.blockades=true", "search:b?depth=2",
                                              "variant.sixes_forfeit=3"], players=4)
    assert rules == Rules.load("classic", players=4, blockades=True, sixes_forfeit=3)
    assert rest == ["ckpt:a", "search:b?depth=2"]
    with pytest.raises(UserError, match="unknown rule field 'blokades'"):
        benchmark_rules("classic", ["variant.blokades=true"], players=4)
    with pytest.raises(UserError, match="variant.players is not set by hand"):
        benchmark_rules("classic", ["variant.players=2"], players=4)
    with pytest.raises(RulesError, match="blockades='yes please' is not allowed"):
        benchmark_rules("classic", ["variant.blockades=yes please"], players=4)


def test_the_printed_command_replays_the_same_games_under_changed_rules(tmp_path):
    rules = Rules.load("pyludo", players=4, star_capture="jump_end")
    command = shlex.split(player_command("heuristic000", "random", rules, 60, 11))
    assert command[:2] == ["python", "launch/evaluate.py"] and "variant.star_capture=jump_end" in command
    out = tmp_path / "replay.json"
    proc = subprocess.run([sys.executable, *command[1:], f"out={out}", f"hydra.run.dir={tmp_path}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["rules"] == rules.to_dict()
    ours = play_tournament(["heuristic000", "random", "random", "random"], 60, rules, 11, rate=False)
    def games_of(standings):
        return [(row["player"], row["wins"], row["mean_place"], row["mean_moves"]) for row in standings]

    assert games_of(report["standings"]) == games_of(json.loads(ours.to_json())["standings"])
