"""harness.study."""
