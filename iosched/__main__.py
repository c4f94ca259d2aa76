"""`python -m iosched`: the same entry point as the `iosched` command."""

import sys

from iosched.cli.main import main

try:
    status = main()
except ModuleNotFoundError as e:
    # A Python where iosched's dependencies are not installed (a clone's, before the install step): say so. A missing
    # iosched module is a fault of iosched's own, with its traceback.
    if not e.name or e.name.split(".")[0] == "iosched":
        raise
    sys.exit(f"iosched: {e.name} is not installed for {sys.executable}; install iosched first (README.md, Install)")
sys.exit(status)
