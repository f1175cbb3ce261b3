"""Gateway overhead benchmarks: `python -m benchmarks.run` (see benchmarks/README.md)."""
