"""One identity for a saved experiment: the host it ran on, the device, and when it started (wall clock, as saved).

A copy of a file, renamed or not, holds the same three; two experiments, even on one host and device, never start at
the same instant. What pools experiments (`report A B …`: core/statistics/fleet_verdict.py over hosts) counts each
identity once, so forty copies of one file are one host, not forty.
"""

from __future__ import annotations

import time

from iosched.core.documents.document import ExperimentDoc

Identity = tuple[str, str, float]  # host, device name ("" when not known), started


def experiment_identity(doc: ExperimentDoc) -> Identity:
    """The experiment ``doc`` is, whatever the file holding it is called."""
    device = doc.device.name if doc.device is not None else ""
    return doc.host, device, doc.started


def identity_words(identity: Identity) -> str:
    """"host vm, loop0, started 2026-11-29 06:40:12 UTC": an identity as a sentence names it."""
    host, device, started = identity
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)) if 0 <= started < 1e11 else f"{started:g}"
    return f"host {host or '(none)'}, {device or 'device not known'}, started {when}"
