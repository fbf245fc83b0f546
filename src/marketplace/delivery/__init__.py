"""Delivery (CONTRACT 16): channels, staged rollouts, update checks, signals, statistics."""
