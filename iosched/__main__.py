"""`python -m iosched`: the same entry point as the `iosched` command."""

import sys

from iosched.cli.main import main

sys.exit(main())
