"""core/settings/sandbox.py's files: the demo's registration and backing file, never through a planted link."""

from __future__ import annotations

import os

import pytest
from link_support import plant

from iosched.core.base.errors import BadInput
from iosched.core.settings.sandbox import SANDBOX_PREFIX, create

from conftest import need_real


def test_a_registration_never_goes_through_a_link_another_user_planted(tmp_path, others_dir, monkeypatch):
    need_real()
    run = others_dir / "run"  # a run folder others may write, as a careless setup might leave it
    run.mkdir()
    run.chmod(0o777)
    monkeypatch.setenv("IOSCHED_RUN_DIR", str(run))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plant(run / "demo", elsewhere)
    with pytest.raises(BadInput, match="reached through the link demo"):
        create(1 << 20, tmp_path)
    # Refused before the backing file or a loop device: the sandbox's folder is gone again.
    assert list(elsewhere.iterdir()) == [] and not list(tmp_path.glob(f"{SANDBOX_PREFIX}*"))
    assert os.path.islink(run / "demo")
