"""`iosched advise` refusals that come before anything is read from the device."""

from __future__ import annotations

from conftest import one_sentence_exit_2


def test_hosts_is_refused_in_one_sentence_until_fleets_are_advised():
    err = one_sentence_exit_2("advise", "loop0", "--hosts", "a,b", "--yes")
    assert "advise does not test fleets yet" in err and "compare --hosts" in err and "nothing was changed" in err
