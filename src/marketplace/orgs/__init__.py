"""Organizations (CONTRACT 17): members, and the plugins they operate together."""
