"""What several test modules share, defined once: the documentation pages, the reference comparison
with transformers, tiny configs, the fake Hub and the hostile-input corpus."""
