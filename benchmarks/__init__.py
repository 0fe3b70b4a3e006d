"""Benchmarks (committed scripts, not timed tests): ``python -m benchmarks.run [--quick]``."""
