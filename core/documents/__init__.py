"""What an experiment writes and reads back: the declared document types, the metric table, the parsers a flag
and a saved file share, and the readers of saved files."""
