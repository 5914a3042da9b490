"""harness.cli."""
