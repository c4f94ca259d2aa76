"""The distribution installs one import package, `iosched`, and nothing else at the top of site-packages."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_holds_only_the_iosched_package(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("iosched-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"iosched"}
    for module in ("iosched/__main__.py", "iosched/main.py", "iosched/core/sampler.py", "iosched/tui/app.py",
                   "iosched/themes/base.tcss"):
        assert module in names


def test_python_dash_m_iosched_prints_help() -> None:
    r = subprocess.run([sys.executable, "-m", "iosched", "--help"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0
    assert "usage: iosched" in r.stdout
