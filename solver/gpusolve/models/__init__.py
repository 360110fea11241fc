"""Typed values exchanged between pipeline stages (pydantic v2 at the boundaries)."""
