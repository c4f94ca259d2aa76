"""iosched: see, switch and compare Linux block IO schedulers, from the terminal.

The import package's root. The repository's top-level folders are its sub-packages (``iosched.core`` is
``core/``, ``iosched.cli`` is ``cli/``, ``iosched.tui`` is ``tui/``, ``iosched.themes`` is ``themes/``), mapped
by the install step (pyproject.toml, setup.py). Importing it loads nothing else: ``iosched list`` stays light.
"""

from pkgutil import extend_path

# The one place the version is written: pyproject.toml reads it from here (`dynamic`), `iosched --version` prints it.
__version__ = "0.1.0"

# In a clone of the repository this folder stands first on the path whenever Python starts there (`python -m
# iosched`, `python -c`): it holds only the root, so the sub-packages are looked for in every `iosched` folder
# on the path too, which finds the installed ones.
__path__ = extend_path(__path__, __name__)
