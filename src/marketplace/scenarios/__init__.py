"""Scenarios: developer publishing, per-version review, public distribution (CONTRACT 8)."""
