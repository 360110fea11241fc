"""colo."""
