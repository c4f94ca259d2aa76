"""Running experiments on this machine: runs, alternations, matrices, studies, commands, and the one service."""
