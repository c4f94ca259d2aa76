"""How to keep what `advise` recommends: the commands that set it now, and the udev rule that sets it at every boot,
for this device (its most stable identity: serial, WWN, model, else its name) and for its whole class (rotational or
not). The rules come from the persist path's own choice (core/settings/persist_target.py ``rule_for``): reads only;
`advise --persist` writes one through `iosched persist`'s path.
"""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.documents.document import KeepDoc
from iosched.core.documents.params import Variant
from iosched.core.settings.persist_target import rule_for


def commands(device: str, v: Variant) -> list[str]:
    """What sets ``v`` on ``device`` now (until the next boot)."""
    out = [f"iosched set {device} {v.scheduler}"]
    if v.settings:
        out.append(f"iosched tune {device} " + " ".join(f"{k}={x}" for k, x in v.settings))
    return out


def keep_doc(device: str, v: Variant, rotational: bool, root: str | Path = "/") -> KeepDoc:
    """The commands and both rules for ``v`` on ``device``; a rule that cannot be made is null, with why."""
    warnings: list[str] = []
    rule = scope = class_rule = class_scope = None
    try:
        mine = rule_for(v.scheduler, v.settings, device=device, root=root)
        rule, scope = mine.rule.line(), mine.scope
        if mine.warning:
            warnings.append(mine.warning)
    except BadInput as e:
        warnings.append(f"no rule for {device}: {e}")
    klass = "rotational" if rotational else "non-rotational"
    try:
        whole = rule_for(v.scheduler, v.settings, device=device, klass=klass, root=root)
        class_rule, class_scope = whole.rule.line(), whole.scope
        if whole.warning:
            warnings.append(whole.warning)
    except BadInput as e:
        warnings.append(f"no rule for every {klass} disk: {e}")
    return KeepDoc(variant=v.label, scheduler=v.scheduler, settings=dict(v.settings), commands=commands(device, v),
                   rule=rule, scope=scope, class_rule=class_rule, class_scope=class_scope, warnings=warnings)
