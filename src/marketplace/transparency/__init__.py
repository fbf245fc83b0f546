"""The transparency log of marketplace decisions (CONTRACT 15)."""
