"""Benchmarks on public datasets read in place (never copied here) from the folder
``GROUPMIND_SHARED_DATA`` names (``../shared/data`` beside the checkout by default)."""
