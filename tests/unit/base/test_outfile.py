"""core/base/outfile.py: the one writer every file iosched writes goes through."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys

import pytest
from link_support import NOBODY, as_nobody, digest, make_victim, plant, temporaries

from iosched.core.base import outfile
from iosched.core.base.errors import BadInput
from iosched.core.base.outfile import (
    WriteRefused,
    check_target,
    create_new,
    discard,
    open_dir,
    remove_file,
    replacing,
    same_file,
    write_file,
)

ROOT = os.geteuid() == 0


def test_a_new_file_is_written_whole_with_its_mode_and_nothing_beside_it(tmp_path):
    p = tmp_path / "new.json"
    write_file(p, "{}\n")
    assert p.read_text() == "{}\n" and stat.S_IMODE(p.stat().st_mode) == 0o644
    write_file(tmp_path / "private", b"x", mode=0o600)
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o600
    assert temporaries(tmp_path) == []


def test_a_replaced_regular_file_keeps_its_mode_and_owner(tmp_path):
    p = tmp_path / "kept"
    p.write_text("old")
    os.chmod(p, 0o640)
    if ROOT:
        os.chown(p, NOBODY, NOBODY)
    with replacing(p) as f:
        f.write("new")
    st = p.stat()
    assert p.read_text() == "new" and stat.S_IMODE(st.st_mode) == 0o640
    assert not ROOT or (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
    write_file(p, "again", keep=False, mode=0o600)  # keep=False: the mode asked for
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", ["link", "dangling link", "directory", "fifo", "device"])
def test_anything_but_a_regular_file_at_the_target_is_refused_and_nothing_written(tmp_path, kind):
    victim = make_victim(tmp_path)
    before = digest(victim)
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "out.json"
    if kind == "link":
        target.symlink_to(victim)
    elif kind == "dangling link":
        target.symlink_to(tmp_path / "nothing-yet")
    elif kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        if not ROOT:
            pytest.skip("a device node needs root")
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    what = {"link": "a symlink", "dangling link": "a symlink", "directory": "a directory", "fifo": "a FIFO",
            "device": "a device"}[kind]
    for attempt in (lambda: write_file(target, "x"), lambda: check_target(target),
                    lambda: create_new(target, replace=True), lambda: remove_file(target)):
        with pytest.raises(WriteRefused, match=f"is {what}, not a regular file: nothing was written") as e:
            attempt()
        assert isinstance(e.value, BadInput) and "\n" not in str(e.value)
    assert digest(victim) == before and not (tmp_path / "nothing-yet").exists()
    assert temporaries(shared) == [] and [p.name for p in shared.iterdir()] == ["out.json"]


def test_a_link_planted_by_another_user_while_writing_is_refused_and_the_temporary_file_removed(others_dir, tmp_path):
    victim = make_victim(tmp_path)
    before = digest(victim)
    target = others_dir / "out.html"
    with pytest.raises(WriteRefused, match="is a symlink"), replacing(target) as f:
        f.write("<html>" * 3000)
        plant(target, victim)  # between the first look and the rename
    assert digest(victim) == before and os.readlink(target) == str(victim)
    assert temporaries(others_dir) == []
    if ROOT:
        assert os.lstat(target).st_uid == NOBODY  # the premise: another user planted it


def test_the_old_predictable_names_are_no_door(others_dir, tmp_path):
    """Temporary names are random and made with O_EXCL|O_NOFOLLOW: links at any name an older writer used stay
    links to an untouched victim."""
    victim = make_victim(tmp_path)
    before = digest(victim)
    for name in (".out.json.tmp", ".out.json.iosched-tmp", f".out.json.{os.getpid()}.tmp", "out.tmp"):
        plant(others_dir / name, victim)
    write_file(others_dir / "out.json", "{}")
    assert (others_dir / "out.json").read_text() == "{}" and digest(victim) == before


def test_a_failure_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "journal.json"
    p.write_text("old")
    with pytest.raises(RuntimeError), replacing(p) as f:
        f.write("half of a new")
        raise RuntimeError("disk gone")
    assert p.read_text() == "old" and temporaries(tmp_path) == []


def test_a_process_killed_mid_write_leaves_the_old_file(tmp_path):
    p = tmp_path / "result.json"
    p.write_text("old")
    child = ("import os, signal, sys\nfrom iosched.core.base.outfile import replacing\n"
             "with replacing(sys.argv[1], sync=True) as f:\n    f.write('half'); f.flush()\n"
             "    os.kill(os.getpid(), signal.SIGKILL)\n")
    r = subprocess.run([sys.executable, "-c", child, str(p)], timeout=30)
    assert r.returncode == -signal.SIGKILL
    assert p.read_text() == "old"


def test_a_new_file_only_where_nothing_is(tmp_path):
    p = tmp_path / "meta.json"
    write_file(p, "first", replace=False)
    with pytest.raises(WriteRefused, match="exists: nothing was written"):
        write_file(p, "second", replace=False)
    assert p.read_text() == "first" and temporaries(tmp_path) == []


def test_a_file_planted_while_writing_a_new_one_is_kept(tmp_path):
    p = tmp_path / "meta.json"
    with pytest.raises(WriteRefused, match="exists"), replacing(p, replace=False) as f:
        f.write("ours")
        p.write_text("theirs")
    assert p.read_text() == "theirs" and temporaries(tmp_path) == []


def test_without_hard_links_a_new_file_still_never_goes_through_a_link(tmp_path, monkeypatch):
    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(outfile.os, "link", no_links)
    p = tmp_path / "meta.json"
    write_file(p, "ours", replace=False)
    assert p.read_text() == "ours"
    victim = make_victim(tmp_path)
    (tmp_path / "l").symlink_to(victim)
    with pytest.raises(WriteRefused, match="symlink"):
        write_file(tmp_path / "l", "x", replace=False)
    assert victim.read_text() == "root's own secret\n" and temporaries(tmp_path) == []


def test_a_folder_replaced_by_another_users_link_is_not_followed(others_dir, tmp_path):
    secret = tmp_path / "etc"
    secret.mkdir()
    plant(others_dir / "rules.d", secret)
    for attempt in (lambda: write_file(others_dir / "rules.d/61-iosched.rules", "x"),
                    lambda: create_new(others_dir / "rules.d/cap.iolog"),
                    lambda: check_target(others_dir / "rules.d/x")):
        with pytest.raises(WriteRefused, match=r"reached through the link rules\.d, which someone other than"):
            attempt()
    assert list(secret.iterdir()) == []


def test_links_the_folders_owner_or_root_made_are_followed(tmp_path, others_dir):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "mine").symlink_to(real)  # in a folder only its owner writes
    (tmp_path / "rel").symlink_to("real/../real")
    write_file(tmp_path / "mine/a", "a")
    write_file(tmp_path / "rel/b", "b")
    (others_dir / "roots").symlink_to(real)  # in a shared folder, but root's (ours) own link
    write_file(others_dir / "roots/c", "c")
    assert sorted(p.name for p in real.iterdir()) == ["a", "b", "c"]
    sticky = others_dir / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    if ROOT:
        plant(sticky / "theirs", real)  # fs.protected_symlinks' rule: not the folder owner's link
        with pytest.raises(WriteRefused):
            write_file(sticky / "theirs/d", "d")
        os.chown(sticky, NOBODY, NOBODY)  # the folder's owner's own link: still not root's folder, refused
        with pytest.raises(WriteRefused, match="in a folder of user 65534's"):
            write_file(sticky / "theirs/d", "d")
        assert not (real / "d").exists()


@pytest.mark.skipif(not ROOT, reason="another user's folder: root makes it")
def test_a_link_in_another_users_own_folder_is_not_followed(others_dir, tmp_path):
    """The one trust rule for links: followed only where root, or we, own every folder on the way. A user's own
    0755 folder is writable by its owner alone, and that owner may swap a subfolder for a link to root's while a
    save runs: root's file behind it keeps its checksum, nothing is written, nothing left beside it."""
    secret = tmp_path / "secret"
    secret.mkdir()
    victim = make_victim(secret)
    before = digest(victim)
    home = others_dir / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    os.chmod(home, 0o755)
    as_nobody("mkdir", str(home / "out"))
    write_file(home / "out/victim", "the first save\n")  # no link yet: the folder is walked, the file written
    as_nobody("mv", str(home / "out"), str(home / "old"))  # 3 s in, the user swaps the folder for a link
    plant(home / "out", secret)
    for attempt in (lambda: write_file(home / "out/victim", "{}"),
                    lambda: create_new(home / "out/victim", replace=True),
                    lambda: check_target(home / "out/victim"),
                    lambda: write_file(others_dir / "home/out/../out/victim", "{}")):
        with pytest.raises(WriteRefused, match=r"through the link out in a folder of user 65534's"):
            attempt()
    assert digest(victim) == before and temporaries(secret) == []
    deeper = home / "old/deeper"  # a link below the user's folder, even one root made, is theirs to swap
    deeper.symlink_to(secret)
    with pytest.raises(WriteRefused):
        write_file(deeper / "victim", "{}")
    assert digest(victim) == before


def test_a_hard_link_to_roots_link_made_by_another_user_is_not_trusted(others_dir, tmp_path):
    if not ROOT:
        pytest.skip("needs root")
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "roots-link"
    link.symlink_to(real)
    os.link(link, others_dir / "hard", follow_symlinks=False)  # as fs.protected_hardlinks=0 would let anyone
    with pytest.raises(WriteRefused):
        write_file(others_dir / "hard/x", "x")
    assert list(real.iterdir()) == []


def test_a_loop_of_links_is_an_error_not_a_hang(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(OSError) as e:
        write_file(tmp_path / "a/x", "x")
    assert e.value.errno == errno.ELOOP and str(tmp_path / "a") in str(e.value)


def test_missing_folders_and_names_without_a_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_file(tmp_path / "no/such/x", "x")
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError):
        write_file(tmp_path / "f/x", "x")
    with pytest.raises(BadInput, match="names no file"):
        write_file(str(tmp_path) + "/..", "x")
    fd = open_dir(tmp_path)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(tmp_path))
    finally:
        os.close(fd)


def test_a_streamed_file_is_made_new_and_removed_only_while_it_is_ours(tmp_path, others_dir):
    p = others_dir / "rec.jsonl"
    fd = create_new(p, append=True)
    st = os.fstat(fd)
    os.write(fd, b"line\n")
    os.close(fd)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644 and same_file(p, st)
    with pytest.raises(WriteRefused, match="exists"):
        create_new(p)
    # Someone moves ours away and puts their own there: discard leaves theirs.
    as_nobody("mv", str(p), str(others_dir / "moved"))
    as_nobody("sh", "-c", f"echo theirs > {p}")
    assert not same_file(p, st)
    discard(p, st)
    assert p.read_text() == "theirs\n"
    discard(others_dir / "moved", st)
    assert not (others_dir / "moved").exists()
    fd = create_new(p, replace=True)  # a regular file there is removed first, a new one made
    os.close(fd)
    assert p.read_text() == ""
