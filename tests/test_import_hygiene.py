"""core must stay free of UI: importing any core module loads neither Textual nor Rich."""

import pkgutil
import subprocess
import sys

import iosched.core as core


def test_core_modules_load_no_ui_library():
    names = [f"iosched.core.{m.name}" for m in pkgutil.iter_modules(core.__path__)]
    assert "iosched.core.sampler" in names
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names) +
            "ui = ('textual', 'rich', 'textual_plotext')\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ui)\n"
            "print(','.join(bad))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""
