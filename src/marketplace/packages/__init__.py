"""Package archive safety and manifest validation, shared by plugins and scenarios."""
