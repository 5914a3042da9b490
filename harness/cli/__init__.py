"""harness.cli.main."""
