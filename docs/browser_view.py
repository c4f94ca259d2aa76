"""Take docs/browser-view.png, the picture of `iosched serve` in docs/browser-prometheus.md: a real headless
Chromium screenshot.

A loop device over a sparse file gets a short fio random-read load, `iosched serve` (read-only) shows it,
Chromium opens the page, the cursor is walked to the loop device and the page is captured once the graphs
have some history. Everything is removed afterwards. Needs root, fio, chromium, chromium-driver and the
test extra (selenium). Run from the repository: sudo .venv/bin/python docs/browser_view.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from browser_support import Page, serving, start_chromium  # noqa: E402

OUT = REPO / "docs/browser-view.png"
SIZE = (1100, 760)  # a projector-ish 16:9 window; small enough for a docs page


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="iosched-shot-") as tmp:
        image = Path(tmp, "disk.img")
        subprocess.run(["truncate", "-s", "1G", str(image)], check=True)
        dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        fio = None
        try:
            fio = subprocess.Popen(["fio", "--name=shot", f"--filename={dev}", "--rw=randread", "--bs=4k",
                                    "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based",
                                    "--runtime=120", "--readonly"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            driver = start_chromium(size=SIZE)
            try:
                with serving(run_dir=Path(tmp, "run"), before=("-i", "0.25")) as url:
                    page = Page(driver, url)
                    page.select(os.path.basename(dev))
                    time.sleep(20)  # some history on the graphs (80 samples)
                    page.keys(" ")  # paused: the picture shows the pause mark, and no frame is half drawn
                    page.wait_for(lambda t: "paused" in t, "the pause")
                    page.keys("z")  # any typing clears xterm's selection (left by reading the text); z is unbound
                    time.sleep(0.5)
                    driver.save_screenshot(str(OUT))
            finally:
                driver.quit()
        finally:
            if fio is not None and fio.poll() is None:
                os.killpg(fio.pid, signal.SIGTERM)
                fio.wait()
            subprocess.run(["losetup", "-d", dev], check=False)
    print(f"{OUT.relative_to(REPO)}: {OUT.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
