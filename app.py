"""Starts the Gradio app. The live app (chat as the user or as the agent, human ratings,
results pages) is its own issue; until it lands this entry point says so plainly."""
import sys


def main() -> int:
    print("The live Gradio app is not built yet (see the project's issues). "
          "Run a batch instead: `make demo` or `.venv/bin/deskbench --help`.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
