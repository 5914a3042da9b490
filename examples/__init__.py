"""Examples of agents a team might put under test with deskbench (see examples/README.md).

Not part of the installed package: run them from the repository root."""
