"""What the kernel says: procfs and sysfs readers, the block-device inventory, per-process IO."""
