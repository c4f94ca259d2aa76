"""`iosched advise` refusals that come before anything is read from the device."""

from __future__ import annotations

from conftest import one_sentence_exit_2


def test_hosts_without_yes_is_refused_in_one_sentence_before_any_host():
    err = one_sentence_exit_2("advise", "loop0", "--hosts", "a,b")
    assert "add --yes" in err and "nothing was changed" in err


def test_hosts_refuses_what_cannot_reach_the_hosts():
    for flag in (["--observe", "10s"], ["--replay", "x.iolog"], ["--on", "sdz"], ["--dry-run"], ["--fill", "50%"]):
        err = one_sentence_exit_2("advise", "loop0", "--hosts", "a,b", "--yes", *flag)
        assert f"{flag[0]} does not apply" in err, err
