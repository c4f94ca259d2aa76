"""How to keep what `advise` recommends: the commands that set it now, and the udev rule that sets it at every boot,
for this device (its most stable identity: serial, WWN, model, else its name) and for its whole class (rotational or
not). The rules come from the persist path's own choice (core/settings/persist_target.py ``rule_for``): reads only;
`advise --persist` writes one through `iosched persist`'s path. An advice on many hosts keeps its answer for every disk
of the model it measured (``model_keep``), a rule made from the model the hosts recorded, with no disk at hand.
"""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.documents.document import KeepDoc, ModelKeepDoc
from iosched.core.documents.params import Variant
from iosched.core.settings.persist import Rule, safe_model, safe_revision
from iosched.core.settings.persist_target import match_label, rule_for


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


def model_keep(model: str | None, firmware: str | None, v: Variant, hosts: list[tuple[str, str]]) -> ModelKeepDoc:
    """The commands for each host (``hosts``: name, device) and one udev rule for every disk of ``model`` on
    ``firmware``: matched as udev names them (``ENV{ID_MODEL}`` and ``ENV{ID_REVISION}``, what the hosts recorded;
    `iosched persist --by model`'s rule with the firmware beside, so `persist --list` and `--remove` know it), the
    same rule on every host of the fleet. With no firmware recorded the rule matches the model on any firmware, said.
    The model and firmware come from the hosts' own words: a model that cannot stand in a rule as it is makes none,
    a firmware that cannot leaves the rule on the model alone; each said."""
    cmds = [f"{host}: {c}" for host, device in hosts for c in commands(device, v)]
    warnings: list[str] = []
    rule = scope = None
    if model is None:
        warnings.append("no rule for the model: the devices name none (set it on each host, or "
                        "`iosched persist` there)")
    elif not safe_model(model):
        warnings.append("no rule for the model: its name cannot be matched safely in a udev rule")
    else:
        revision = firmware if firmware is not None and safe_revision(firmware) else ""
        made = Rule("model", model, v.scheduler, v.settings, revision=revision)
        rule, scope = made.line(), match_label("", "model", model)
        if revision:
            scope += f" on firmware {revision} (udev's ID_REVISION: a disk whose udev names no firmware is not matched)"
        elif firmware is not None:
            scope += " on any firmware"
            warnings.append("the rule matches the model on any firmware: the firmware the hosts recorded cannot be "
                            "matched safely in a udev rule")
        else:
            scope += " on any firmware (the hosts recorded none)"
    return ModelKeepDoc(variant=v.label, scheduler=v.scheduler, settings=dict(v.settings), commands=cmds, rule=rule,
                        scope=scope, warnings=warnings)
