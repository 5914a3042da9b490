"""Gradio pages (see ui/README.md)."""
