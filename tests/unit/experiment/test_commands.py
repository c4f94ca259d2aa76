"""A command that fails: the reason its run is invalid, in words."""

from iosched.core.experiment.commands import _failed


def test_a_failed_command_says_how_it_ended():
    assert _failed(0, "x") is None
    assert _failed(2, "cc: error\nmake: *** [all] Error 2\n\n") == (
        "the command exited with status 2 (its last line: 'make: *** [all] Error 2')")
    assert _failed(139, "") == "the command exited with status 139, as one killed by SIGSEGV does"
    assert _failed(-9, "") == "the command was killed by SIGKILL"
    assert _failed(200, "") == "the command exited with status 200"
