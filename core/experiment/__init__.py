"""Comparing: experiments and matrices, verdicts and their statistics, saved results."""
