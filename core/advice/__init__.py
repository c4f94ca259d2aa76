"""`iosched advise`: what to set on a disk. Observe the device and what set it, plan the candidates and the tests
each goal needs within a budget; the decision rule itself is pure maths in core/statistics/advice_rule.py."""
