"""harness.defence."""
