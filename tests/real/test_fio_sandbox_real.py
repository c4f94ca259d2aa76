"""fio's client fenced in (core/load/fio_sandbox.py): a lockstep fleet's client sends its server any file the
server names, so what it can open is the system's programs, read-only, and its run's folder, nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iosched.core.base.errors import IoschedError
from iosched.core.load.fio import fio_binary
from iosched.core.load.fio_sandbox import INSIDE, check_fence, fenced

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def fenced_sh(script: str, work: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(fenced(["/bin/sh", "-c", script], work), capture_output=True, text=True, timeout=30)


def test_the_client_sees_its_folder_and_the_programs_and_nothing_else(tmp_path):
    need_real("unshare", "fio")
    work = tmp_path / "run"
    work.mkdir(mode=0o700)
    (work / "0.fio").write_text("[j]\n")
    secret = tmp_path / "id_ed25519"
    secret.write_text("a key\n")
    check_fence(fio_binary(), work)
    out = fenced_sh(f"ls {INSIDE}; cat {secret} /etc/hostname /root/.bashrc /proc/1/environ; ls /home /etc /run; "
                    "touch /usr/x; echo end", work)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0.fio", "root", "end"]  # its folder, nothing read, nothing written
    for gone in (str(secret), "/etc/hostname", "/root/.bashrc", "/proc/1/environ", "/home", "/etc", "/run"):
        assert f"{gone}: No such file or directory" in out.stderr or f"'{gone}': No such file" in out.stderr, gone
    assert "Read-only file system" in out.stderr
    assert fenced_sh(f"echo w > {INSIDE}/out", work).returncode == 0 and (work / "out").read_text() == "w\n"
    # The namespace ended with it: nothing stays mounted here.
    assert str(work) not in Path("/proc/self/mountinfo").read_text()


def test_a_fio_outside_the_systems_folders_is_refused_in_one_sentence(tmp_path):
    need_real("unshare", "fio")
    work = tmp_path / "run"
    work.mkdir(mode=0o700)
    outside = tmp_path / "fio"
    outside.symlink_to(fio_binary())
    with pytest.raises(IoschedError, match=r"cannot be fenced in here .*--independent"):
        check_fence(str(outside), work)
