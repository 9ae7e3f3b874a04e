"""Loading and validating rule sets: every bad value is refused with one line."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ludo_env.rules import Rules, RulesError, available_variants, field_docs


def test_shipped_variants_load():
    assert {"classic", "pyludo", "quick", "ucsd"} <= set(available_variants())  # the seeds' variants ship
    for name in available_variants():
        rules = Rules.load(name)
        assert rules.name == name
        with pytest.raises(dataclasses.FrozenInstanceError):
            rules.players = 3  # type: ignore[misc]


def test_every_rule_field_is_documented():
    docs = field_docs()
    assert set(docs) == {f.name for f in dataclasses.fields(Rules)}
    assert all(docs.values())


def test_every_variant_file_sets_every_field():
    # A variant file is the whole rule set: nothing silently falls back to a default.
    import yaml

    names = {f.name for f in dataclasses.fields(Rules)}
    for name in available_variants():
        data = yaml.safe_load((Path("conf/variant") / f"{name}.yaml").read_text())
        assert set(data) == names, name


@pytest.mark.parametrize(
    "variant, overrides, message",
    [
        ("nope", {}, f"unknown variant 'nope': choose one of {', '.join(available_variants())}"),
        ("classic", {"players": 5}, "players=5 is not allowed for variant 'classic': choose one of 2, 3, 4"),
        ("classic", {"tokens": 0}, "tokens=0 is not allowed for variant 'classic': choose 1..4"),
        ("classic", {"safe_squares": [1, 60]}, "safe_squares: square 60 is off the board: squares are 0..51"),
        ("classic", {"colour": 1}, "unknown rule field 'colour': allowed fields are"),
        ("classic", {"players": "four"}, "players='four' is not allowed: give an integer"),
        ("classic", {"blockades": 1}, "blockades=1 is not allowed: give true or false"),
        ("classic", {"overshoot": "wrap"}, "overshoot='wrap' is not allowed for variant 'classic': choose one of"),
        ("classic", {"enter_rolls": [7]}, "enter_rolls=[7] is not allowed"),
        ("classic", {"star_squares": [9]}, "a square cannot be both a star and a safe square"),
        ("quick", {"home_column": 2, "overshoot": "bounce"}, "'bounce' needs home_column >= 5"),
    ],
)
def test_bad_values_are_refused_with_one_line(variant, overrides, message):
    with pytest.raises(RulesError) as info:
        Rules.load(variant, **overrides)
    text = str(info.value)
    assert "\n" not in text
    assert message in text


def test_a_new_variant_is_a_yaml_file(tmp_path):
    path = tmp_path / "house.yaml"
    path.write_text("name: house\nplayers: 2\nblockades: true\nbonus_roll_on_home: true\n")
    rules = Rules.load(path)
    assert (rules.name, rules.players, rules.blockades, rules.bonus_roll_on_home) == ("house", 2, True, True)
    assert rules.replace(players=3).players == 3


def test_overrides_coerce_lists_and_keep_rules_immutable():
    rules = Rules.load("classic", enter_rolls=[1, 6])
    assert rules.enter_rolls == (1, 6)
    assert Rules.load("classic").home == 56 and Rules.load("ucsd").home == 52


def test_rules_a_file_records_are_its_fields_or_a_variant_name_never_a_path():
    classic = Rules.load("classic")
    assert Rules.recorded(classic.to_dict(), players=2) == Rules.load("classic", players=2)
    assert Rules.recorded("pyludo", players=4) == Rules.load("pyludo", players=4)
    path = str(Path(__file__).resolve().parents[2] / "conf" / "variant" / "classic.yaml")
    assert Rules.load(path) == classic  # the command line may name a YAML file
    with pytest.raises(RulesError, match="unknown variant '/"):
        Rules.recorded(path)  # a file's own contents may not
