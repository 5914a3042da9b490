"""harness.live.sessions."""
