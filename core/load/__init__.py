"""Making IO: fio and its job files, the job catalog, targets, scratch directories, children."""
