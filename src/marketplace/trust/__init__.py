"""Release signing: the service's Ed25519 keys and the canonical records they sign (CONTRACT 11)."""
