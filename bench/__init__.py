"""attnlab's benchmarks: speed and memory goals, measured outside the tests."""
