"""harness.selfscore."""
