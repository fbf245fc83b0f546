"""The publisher portal: server-rendered pages under /portal for developer accounts."""
