"""What iosched changes and how it is put back: the one door for privileged writes, the journal, schedulers,
tunables, udev persistence, the demo sandbox, and the locks that keep processes apart."""
