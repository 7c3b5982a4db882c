"""Benchmarks on public data read in place from ../shared/data (never copied here)."""
