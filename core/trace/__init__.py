"""Where the time goes: the block-layer tracer, its parser, log2 histograms, probes and run windows."""
