"""Experiments over several hosts: SSH, the host end, fio client and server in lockstep or independently."""
