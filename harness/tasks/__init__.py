"""harness.tasks."""
