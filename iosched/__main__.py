"""`python -m iosched`: the same entry point as the `iosched` command."""

import sys

try:
    from iosched.cli.main import main
except ModuleNotFoundError as e:
    # In a clone, before iosched is installed for this Python, only the root is found (iosched/): say so.
    if not (e.name or "").startswith("iosched."):
        raise
    sys.exit(f"iosched: {e.name} is not installed for {sys.executable}; install iosched first (README.md, Install)")

sys.exit(main())
