"""iosched: see, switch and compare Linux block IO schedulers.

The root package is the command line, a Textual-free front end; ``iosched.core`` holds everything true
without a screen, ``iosched.tui`` the Textual app (imported only when the TUI starts), ``iosched.themes`` its CSS.
"""

__version__ = "0.1.0"
