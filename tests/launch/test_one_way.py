"""One way to pass options: every command of ``launch/`` takes Hydra ``key=value`` overrides of its ``conf/`` file,
typed by a dataclass, and refuses an unknown key or a value of the wrong type in one line (exit 2) before it does
anything, leaving no folder behind; every benchmark parses its flags with the one shared parser,
`launch.cli.OneLineParser`.

Which config and schema each command composes is declared once, in ``docs/hooks/reference.py``'s ``COMMANDS`` (the
table the reference pages are generated from); these tests walk ``launch/*.py`` and ``benchmarks/*.py`` and hold
every script to it.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from launch.cli import UserError, compose
from tests.launch.configs import docs_reference_hook

ROOT = Path(__file__).resolve().parents[2]


def scripts(folder: str) -> list[str]:
    """The scripts of `folder` (``launch/train.py``): its files that run as a program."""
    return [str(p.relative_to(ROOT)) for p in sorted((ROOT / folder).glob("*.py"))
            if not p.name.startswith("_") and '__name__ == "__main__"' in p.read_text()]


COMMANDS = scripts("launch")
BENCHMARKS = scripts("benchmarks")
FIRST_WORDS = {"launch/league.py": ["show"]}
"""Arguments that come before a command's overrides: league.py's sub-command."""


def run(script: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}, check=False)


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def reference():
    return docs_reference_hook()


def configs_of(reference, script: str) -> list[tuple[str, type]]:
    """``(config, schema)`` for every config `script` composes, as its ``COMMANDS`` entry declares them."""
    entry = next((c for c in reference.COMMANDS if c.script == script), None)
    assert entry is not None, f"{script} has no entry in docs/hooks/reference.py COMMANDS"
    if isinstance(entry, reference.Hydra):
        return [(entry.config, reference.load_object(entry.schema))]
    if isinstance(entry, reference.HydraSubcommands):
        return [(config, reference.load_object(schema)) for _, config, schema in entry.subcommands]
    # submit: its own cluster.* keys, and every other argument a training override, composed as train composes it
    assert script == "launch/submit.py", f"{script}: declared as {type(entry).__name__}, not as a Hydra command"
    return [("config", reference.load_object("launch.training.schema:TrainConfig"))]


# ------------------------------------------------------------------ every command: Hydra key=value
@pytest.mark.parametrize("script", COMMANDS)
def test_every_command_composes_its_conf_file_onto_a_typed_schema(reference, script):
    for config, schema in configs_of(reference, script):
        assert (ROOT / "conf" / f"{config}.yaml").is_file(), f"{script}: no conf/{config}.yaml"
        assert dataclasses.is_dataclass(schema)
        assert OmegaConf.get_type(compose(config, [])) is schema, f"conf/{config}.yaml is not typed by {schema}"


@pytest.mark.parametrize("script", COMMANDS)
def test_every_command_refuses_an_unknown_key_in_one_line_and_leaves_no_folder(script, tmp_path):
    line = one_line(run(script, *FIRST_WORDS.get(script, []), "nosuchkey=1", cwd=tmp_path))
    assert "nosuchkey" in line
    assert not any(tmp_path.iterdir()), f"{script} left {sorted(p.name for p in tmp_path.iterdir())}"


# ------------------------------------------------------------------ the commands that parsed key=value by hand
MOVED = {  # script: (sub-command, the name errors give it, a value of the wrong type, what that error says)
    "launch/serve.py": ([], "serve", "port=eighty", "port='eighty' is not allowed: give an integer"),
    "launch/leaderboard.py": ([], "leaderboard", "serve=maybe", "serve='maybe' is not allowed: give true or false"),
    "launch/simulate.py": ([], "simulate", "max_plies=1.5", "max_plies='1.5' is not allowed: give an integer"),
    "launch/league.py": (["play"], "play", "players=four", "players='four' is not allowed: give an integer"),
    "launch/wait_for_nodes.py": ([], "wait_for_nodes", "timeout=soon",
                                 "timeout='soon' is not allowed: give a number"),
}


@pytest.mark.parametrize("script", sorted(MOVED))
def test_an_unknown_key_is_refused_by_the_schema_naming_every_key_it_has(reference, script, tmp_path):
    words, name, _, _ = MOVED[script]
    [(_, schema)] = [c for c in configs_of(reference, script) if not words or c[0].endswith(words[0])]
    allowed = ", ".join(f.name for f in dataclasses.fields(schema))
    also = ", and any rule field as variant.<field>=value" if script == "launch/simulate.py" else ""
    line = one_line(run(script, *words, "nosuchkey=1", cwd=tmp_path))
    assert line == (f"error: argument 'nosuchkey=1' is not allowed: unknown option 'nosuchkey' for {name}; "
                    f"allowed {allowed}{also}")
    added = one_line(run(script, *words, "+nosuchkey=1", cwd=tmp_path))  # Hydra adds a +key without a check
    assert "unknown option 'nosuchkey'" in added
    assert "unknown option 'hydra'" in one_line(run(script, *words, "hydra.run.dir=elsewhere", cwd=tmp_path))
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("script", sorted(MOVED))
def test_a_value_of_the_wrong_type_is_refused_by_the_schema(script, tmp_path):
    words, _, bad, says = MOVED[script]
    assert one_line(run(script, *words, bad, cwd=tmp_path)) == f"error: {says}"
    assert not any(tmp_path.iterdir())


def test_a_key_of_another_sub_command_is_refused():
    from launch.league import parse

    with pytest.raises(UserError, match=r"^argument 'games=3' is not allowed: unknown option 'games' for show; "
                                        r"allowed league$"):
        parse(["show", "games=3"])
    with pytest.raises(UserError, match="unknown option 'bots' for add"):
        parse(["add", "outputs/train/run", "bots=[random]"])


@pytest.mark.parametrize("config, schema", [("serve", "launch.serve:ServeConfig"),
                                            ("leaderboard", "launch.leaderboard:LeaderboardConfig"),
                                            ("simulate", "launch.simulate:SimulateConfig"),
                                            ("league_add", "launch.league:LeagueAddConfig"),
                                            ("league_play", "launch.league:LeaguePlayConfig"),
                                            ("league_show", "launch.league:LeagueShowConfig"),
                                            ("league_remove", "launch.league:LeagueRemoveConfig"),
                                            ("wait_for_nodes", "launch.wait_for_nodes:WaitConfig")])
def test_each_conf_file_holds_its_schemas_defaults(config, schema):
    """The conf/ file a user reads and the schema the command types it with give the same defaults."""
    module, _, name = schema.partition(":")
    cls = getattr(importlib.import_module(module), name)
    values = OmegaConf.to_container(compose(config, []), resolve=False)
    for f in dataclasses.fields(cls):
        if f.name == "variant" and isinstance(values[f.name], dict):
            continue  # a group: its choice's fields
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        assert values[f.name] == default, f"conf/{config}.yaml: {f.name}={values[f.name]!r}, schema: {default!r}"


def test_serves_limits_are_the_sites():
    from launch.serve import parse
    from launch.web.site import Limits

    settings = parse([])
    assert {key: settings[key] for key in Limits.names()} == dataclasses.asdict(Limits())


def test_the_spellings_these_commands_took_before_hydra_still_work(tmp_path):
    from launch.leaderboard import parse as leaderboard
    from launch.league import parse as league
    from launch.serve import parse as serve
    from launch.simulate import parse as simulate

    assert serve(["agents=ckpt:a,search:b?depth=2&opponent=maxn"])["agents"] == [
        "ckpt:a", "search:b?depth=2&opponent=maxn"]  # a bare list, a spec Hydra's grammar takes only quoted
    assert serve(["agents="])["agents"] == [] and serve(["replays=x.jsonl"])["replays"] == ["x.jsonl"]
    assert serve(["move_seconds=none"])["move_seconds"] is None
    assert serve(['agents=["ckpt:a,b",ckpt:c]'])["agents"] == ["ckpt:a,b", "ckpt:c"]  # Hydra's own list: as is
    assert league(["play", "bots=random,hybrid"])[2].bots == ["random", "hybrid"]
    assert league(["play", "bots=random"])[2].bots == ["random"]
    assert leaderboard(["league=x", "--serve"]).serve is True
    cfg, rules = simulate(["players=2", "blockades=true"])  # rule fields given bare: variant.<field>
    assert (rules.players, rules.blockades) == (2, True)
    own = tmp_path / "mine.yaml"
    own.write_text("name: mine\nplayers: 2\ntokens: 2\n")
    cfg, rules = simulate([f"variant={own}", "variant.blockades=true"])
    assert (rules.name, rules.players, rules.tokens, rules.blockades) == ("mine", 2, 2, True)


def test_league_and_variant_are_settings_here_though_conf_has_groups_of_those_names(tmp_path):
    """conf/league/ and conf/variant/ are groups of train's config; Hydra reads ``league=`` as a group choice
    wherever such a folder exists, and for these commands they are plain settings."""
    from launch.leaderboard import parse as leaderboard
    from launch.league import parse as league

    assert leaderboard([f"league={tmp_path}"]).league == str(tmp_path)
    _, _, cfg = league(["play", f"league={tmp_path / 'l.db'}", "variant=quick", "players=2"])
    assert (cfg.league, cfg.variant, cfg.players) == (str(tmp_path / "l.db"), "quick", 2)
    with pytest.raises(UserError, match=r"^league='\[1\]' is not allowed: give text$"):
        league(["show", "league=[1]"])


def test_a_successful_run_leaves_no_hydra_folder(tmp_path):
    proc = run("launch/simulate.py", "games=20", "max_plies=50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("classic, 4 players, 20 random-move games, seed 0")
    assert not any(tmp_path.iterdir())  # no outputs/<date>/, no .hydra, no log


@pytest.mark.parametrize("script", sorted(MOVED))
def test_help_lists_every_option_with_its_default(reference, script):
    words, _, _, _ = MOVED[script]
    proc = run(script, *words, "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    [(config, schema)] = [c for c in configs_of(reference, script) if not words or c[0].endswith(words[0])]
    assert f"Options: Hydra key=value overrides of conf/{config}.yaml, typed by {schema.__qualname__}" in proc.stdout
    for f in dataclasses.fields(schema):
        assert f"\n  {f.name}=" in proc.stdout, f"{script} --help does not list {f.name}"


# ------------------------------------------------------------------ every benchmark: the shared flag parser
@pytest.mark.parametrize("script", BENCHMARKS)
def test_every_benchmark_parses_its_flags_with_the_shared_parser(reference, script, capsys):
    from launch.cli import OneLineParser

    parser = reference.captured_parser(script)
    assert type(parser) is OneLineParser, f"{script} parses with {type(parser).__name__}"
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--no-such-flag"])
    assert stop.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and line.endswith("(--help lists the options)")
