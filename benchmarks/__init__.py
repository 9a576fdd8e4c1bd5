"""The benchmark suite (python benchmarks/run.py): see run.py and README.md."""
