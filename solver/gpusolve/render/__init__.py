"""The render stage: one typed Plan, written as text, json, yaml or markdown."""
