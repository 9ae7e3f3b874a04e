"""benchmarks/encoders.py times every registered encoder on the same positions and names the baseline."""
from __future__ import annotations

import pytest

from benchmarks import encoders
from launch.cli import UserError
from ludo_env.observations import ENCODERS, obs_dim


def test_every_encoder_gets_a_line_with_its_size_and_ratio(capsys):
    encoders.main(["--positions", "64", "--batch", "16", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("classic: 64 positions in batches of 16")
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(ENCODERS)
    for name, line in rows.items():
        assert f"{obs_dim(name)} floats" in line and line.endswith("x egocentric")
    assert " 1.00x egocentric" in rows["egocentric"]


@pytest.mark.parametrize("argv, word", [(["--bogus", "1"], "--bogus"), (["--repeats", "0"], "--repeats"),
                                        (["--positions", "many"], "--positions"), (["--variant", "nosuch"], "nosuch")])
def test_bad_options_are_one_line(argv, word, capsys):
    """The shared parser (launch.cli.OneLineParser) prints one line and exits 2; a bad variant is a `UserError`
    the script prints as one line (launch.cli.fail)."""
    try:
        encoders.main(argv)
    except SystemExit as stop:
        assert stop.code == 2
        message = capsys.readouterr().err.strip()
        assert message.startswith("error: ") and message.endswith("(--help lists the options)")
    except UserError as error:
        message = str(error)
    else:
        raise AssertionError("accepted")
    assert "\n" not in message and word in message
