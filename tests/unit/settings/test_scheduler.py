"""Scheduler switching on fixture trees."""




from conftest import run_cli


def test_device_without_scheduler_says_so(tree):
    tree.add_disk("zram0", "252:0", scheduler=None, mq=False)
    r = run_cli("--root", str(tree.root), "set", "zram0", "bfq")
    assert r.returncode == 2 and "zram0 has no IO scheduler" in r.stderr
