"""Decode benchmarks (``make bench``); never collected by pytest (no ``test_`` files)."""
