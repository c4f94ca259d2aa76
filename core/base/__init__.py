"""Below every layer: our error types, bounded reads of user-named files, units, terminal cell widths and text
charts."""
