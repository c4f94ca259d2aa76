"""Pure maths and the judges: estimates, tests, sequential looks, pooling and Holm; no IO."""
