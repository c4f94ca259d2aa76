"""iosched: see, switch and compare Linux block IO schedulers, from the terminal.

The import package's root. Its sub-packages are the repository's top-level folders, each linked from here
(``iosched/core`` is a link to ``core/``, ``iosched/cli`` to ``cli/``, ``iosched/tui`` to ``tui/``,
``iosched/themes`` to ``themes/``), so this folder is the whole package in a clone as in an install.
Importing it loads nothing else: ``iosched list`` stays light.
"""

# The one place the version is written: pyproject.toml reads it from here (`dynamic`), `iosched --version` prints it.
__version__ = "0.1.0"
