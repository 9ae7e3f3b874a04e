"""benchmarks/encoders.py times every registered encoder on the same positions and names the baseline."""
from __future__ import annotations

import pytest

from benchmarks import encoders
from launch.cli import UserError
from ludo_env.observations import ENCODERS, obs_dim


def test_every_encoder_gets_a_line_with_its_size_and_ratio(capsys):
    encoders.main(["positions=64", "batch=16", "repeats=1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("classic: 64 positions in batches of 16")
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(ENCODERS)
    for name, line in rows.items():
        assert f"{obs_dim(name)} floats" in line and line.endswith("x egocentric")
    assert " 1.00x egocentric" in rows["egocentric"]


@pytest.mark.parametrize("argv", [["bogus=1"], ["repeats=0"], ["positions=many"]])
def test_bad_options_are_one_line(argv, capsys):
    with pytest.raises(UserError) as error:  # the script prints it as "error: <line>" (launch.cli.fail)
        encoders.main(argv)
    message = str(error.value)
    assert message and "\n" not in message and any(word in message for word in ("bogus", "repeats", "positions"))
