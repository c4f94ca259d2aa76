"""The command line: a Textual-free front end (`main.build_parser`, one module per command family).

``iosched.core`` holds everything true without a screen, ``iosched.tui`` the Textual app (imported
only when the TUI starts), ``iosched.themes`` its CSS.
"""
