"""iosched front ends: the Textual app and the command line. They render what core produces."""
