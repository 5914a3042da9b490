"""harness.live."""
