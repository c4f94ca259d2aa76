"""A whole-disk block device: what core/kernel/devices.py reads from the running system and what saved files,
recordings and ``list --json`` hold of it (``dataclasses.asdict`` writes it, core/base/decode.py reads it back).
Its JSON Schema is made from this declaration (core/base/schema.py).

The fields without a default are the ones a recording's reader requires; the others may be left out by an
older writer. Apart from the readers in devices.py, so the documents that hold a device import no sysfs code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from iosched.core.base.schema import Keywords


@dataclass(frozen=True, kw_only=True)
class DeviceDoc:
    """A whole-disk block device: identity, queue settings, how it is stacked and where it is mounted."""

    name: str = field(metadata={"doc": 'the kernel name, e.g. "sda", "loop3"'})
    maj_min: str
    size_bytes: Annotated[int, Keywords(minimum=0)]
    rotational: bool
    removable: bool
    read_only: bool
    scheduler: str | None = field(metadata={"doc": "the active scheduler; null where the queue has none"})
    schedulers: list[str]
    nr_requests: int | None
    read_ahead_kb: int | None
    model: str | None = None
    vendor: str | None = None
    serial: str | None = None
    transport: str | None = None
    diskseq: int | None = None
    partitions: list[str] = field(default_factory=list)
    mountpoints: list[str] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)
    sits_on: list[str] = field(default_factory=list)
    backing_file: str | None = None
    fs_type: str | None = None
    part_table: str | None = None
    multi_queue: bool = False
    iostats: bool = True
    multipath_paths: list[str] = field(default_factory=list)
    # %util means "saturated" only where one request is served at a time (rotational, single-queue): a multi-queue
    # SSD at 100% util may still have plenty of headroom. read_device sets it from those two fields.
    util_is_saturation: bool = field(default=False, metadata={"doc": "whether %util near 100 means saturated"})

    @property
    def has_scheduler(self) -> bool:
        return bool(self.schedulers)

    @property
    def in_use(self) -> bool:
        """Mounted, holding partitions, stacked under dm/md, or carrying a signature: not a scratch device."""
        return bool(self.mountpoints or self.partitions or self.holders or self.fs_type or self.part_table)


@dataclass(frozen=True, kw_only=True)
class DeviceNameDoc:
    """A device known by name alone: it was gone when the experiment read its identity."""

    name: str
