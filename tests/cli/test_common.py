"""The CLI names the option an error is about from the error's fields, never from its words (issue 31)."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.cli._common import addressed, readdressed, user_message
from dpcloak.errors import InvalidFileError, InvalidParameterError


@pytest.mark.parametrize(("message", "expected"), [
    ("k must be >= 1, got 0", "--k must be >= 1, got 0"),  # the parameter leads: the option takes its place
    ("at least one neighbour is needed (k = 0)", "--k: at least one neighbour is needed (k = 0)"),  # reworded
    ("kappa must be finite", "--k: kappa must be finite"),  # a longer word is not the parameter
])
def test_the_option_comes_from_the_parameter_field_however_the_message_is_worded(message, expected):
    err = InvalidParameterError(message, parameter="k", got=0)
    assert user_message(err, {"k": 0}) == expected


def test_a_parameter_the_command_does_not_have_leaves_the_message_alone():
    err = InvalidParameterError("delta must lie in (0, 1), got 2", parameter="delta")
    assert user_message(err, {"epsilon": 1.0}) == str(err)
    assert user_message(InvalidParameterError("epsilon must be > 0"), {"epsilon": 1.0}) == "epsilon must be > 0"


def test_library_names_map_to_the_network_options():
    err = InvalidParameterError("budget epsilon must lie in (0, inf), got -1", parameter="budget epsilon", got=-1.0)
    new = readdressed(err, {"budget epsilon": "--budget-epsilon"})
    assert str(new) == "--budget-epsilon must lie in (0, inf), got -1" and new.parameter == "--budget-epsilon"
    assert new.got == -1.0 and type(new) is InvalidParameterError
    assert addressed("x", "--tau", "--tau") == "x"


def test_a_file_error_is_named_by_the_option_that_gave_the_file(tmp_path):
    path = tmp_path / "s.csv"
    err = InvalidFileError(f"{path}:3: lon must be a number, got 'x'", path=path, field="lon", line=3)
    assert user_message(err, {"sensors": str(path), "k": 4}) == f"--sensors {path}:3: lon must be a number, got 'x'"
    other = InvalidFileError("lon must be a number", path=path, field="lon", line=3)
    assert user_message(other, {"sensors": str(path)}) == f"--sensors {path}: lon must be a number"


def test_a_duplicated_sensor_name_is_one_line_naming_the_option_file_and_line(tmp_path):
    sensors = tmp_path / "s.csv"
    sensors.write_text("name,x,y\nA,0,0\nB,100,0\nA,200,0\n")
    result = CliRunner().invoke(app, ["sensitivity", "--sensors", str(sensors), "--diffusion", "2000", "--alpha",
                                      "100"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip() == (f"error: --sensors {sensors}:4: sensor name 'A' is already used on line 2; names "
                                     "must be unique")


def test_no_cli_module_reads_a_library_message():
    """The old mapping parsed the message's first word (user_vocabulary) and renamed its head (renamed)."""
    cli = Path(__file__).resolve().parents[2] / "src" / "dpcloak" / "cli"
    text = "\n".join(p.read_text() for p in cli.glob("*.py"))
    for word in ("user_vocabulary", "def renamed", ".partition(\" \")", "str(exc).startswith", "str(exc).split"):
        assert word not in text, word


def test_the_cli_and_the_sensors_package_do_not_share_model_names():
    """Issue 31: cli._common and dpcloak.sensors both had ModelSpec, build_model and MODEL_KINDS."""
    import dpcloak.cli._common as common
    import dpcloak.sensors as sensors

    assert not {"ModelSpec", "build_model", "MODEL_KINDS"} & set(vars(common))
    assert {"ModelSpec", "build_model"} <= set(vars(sensors))
    assert common.SyntheticModel().build()[0].shape == (50, 100)
