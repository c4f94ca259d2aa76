"""Watching: the sampler, rate maths, the Monitor and its history, recordings and their replay."""
