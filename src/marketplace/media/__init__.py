"""Media checks shared by the domains that accept images."""
