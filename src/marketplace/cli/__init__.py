"""Command-line tools: publishing, installing and (added by the server modules) operating."""
