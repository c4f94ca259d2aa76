"""Safe targets on real loop devices: blkid and mount decide raw writes; scratch space, line breaks in paths
and job files larger than the free space are refused."""

import subprocess
from pathlib import Path

import pytest
from fio_support import no_fio_left

from iosched.core.base.errors import BadInput
from iosched.core.load.targets import Refused, choose_target

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_real_blank_loop_takes_raw_writes_but_not_once_it_has_a_filesystem(loopdev, tmp_path):
    need_real("blkid", "mkfs.ext4", "mount")
    assert choose_target(loopdev.name, writes=True).path == loopdev.path
    subprocess.run(["mkswap", loopdev.path], check=True, capture_output=True)
    with pytest.raises(Refused, match="swap signature"):
        choose_target(loopdev.name, writes=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev.path], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", loopdev.path, str(mnt)], check=True)
    try:
        # Mounted: raw writes are refused even with the typed confirmation; by default a scratch file is used.
        with pytest.raises(Refused, match="mounted"):
            choose_target(loopdev.name, writes=True, raw=True, destroy_data=loopdev.name)
        t = choose_target(loopdev.name, writes=True, size=64 << 20)
        assert t.kind == "file" and t.path.startswith(str(mnt)) and not t.note
        t.release()
        assert not any(mnt.glob("iosched-scratch-*"))
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_real_scratch_on_a_full_tiny_tmpfs_is_refused(loopdev, tmp_path):
    need_real("mount")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], check=True)
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={mnt}/fill", "bs=1M", "count=8"], capture_output=True)
        with pytest.raises(BadInput, match="not enough space"):
            choose_target(loopdev.name, writes=True, directory=mnt, size=1 << 20)
        assert not any(mnt.glob("iosched-scratch-*"))
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_blank_means_probe_says_nothing(tmp_path, make_loop):
    need_real("blkid")
    loop = make_loop("16M")
    assert choose_target(loop.name, writes=True).kind == "device"


def test_a_line_break_in_a_dir_or_a_mountpoint_is_refused(loopdev, tmp_path, private_journal):
    need_real("fio", "mkfs.ext4", "mount")
    pwned = Path.cwd() / "iosched-pwned"  # fio would run the command in the cwd it inherits
    evil = tmp_path / "x\nexec_prerun=touch iosched-pwned\n"
    evil.mkdir()
    r = run_cli("run", loopdev.name, "--job", "4k-write", "--runtime", "1", "--size", "1M", "--dir", str(evil))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "line break" in r.stderr, r.stderr
    assert list(evil.iterdir()) == [] and not pwned.exists()
    # The same name as a mountpoint (mountinfo spells it \012; the device list decodes it).
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev.path], check=True, capture_output=True)
    subprocess.run(["mount", loopdev.path, str(evil)], check=True)
    try:
        r = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "4k-write", "--runtime", "1",
                    "--size", "1M")
        assert r.returncode == 2 and "line break" in r.stderr, r.stderr
        assert not any(evil.glob("iosched-scratch-*")) and not pwned.exists()
    finally:
        subprocess.run(["umount", str(evil)], check=False)
    assert loopdev.current() == loopdev.initial_scheduler and not (private_journal / "journal.json").exists()


def test_a_job_file_larger_than_the_free_space_is_refused(loopdev, tmp_path, private_journal):
    """2 GiB of tmpfs passes a 1 GiB check; the job file's own 4 GiB does not."""
    need_real("fio", "mount")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", str(mnt)], check=True)
    try:
        job = tmp_path / "big.fio"
        job.write_text("[w]\nrw=write\nbs=1M\noffset=1g\nsize=3g\n")
        for args in (("run", loopdev.name, "--job", str(job)),
                     ("compare", loopdev.name, "--schedulers", "none,bfq", "--job", str(job)),
                     ("compare", loopdev.name, "--schedulers", "none,bfq", "--jobs", f"4k-read,{job}")):
            r = run_cli(*args, "--runtime", "1", "--dir", str(mnt))
            assert r.returncode == 2 and "not enough space" in r.stderr and "4096 MiB" in r.stderr, r.stderr
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    no_fio_left(str(mnt))
    assert loopdev.current() == loopdev.initial_scheduler
