"""harness.scale."""
