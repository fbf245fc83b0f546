"""Inspection (CONTRACT 13): every stdio MCP version is started in a sandbox, asked what it
offers the model, and watched for what it tries to do; the result is kept with the version."""
