"""harness.models."""
