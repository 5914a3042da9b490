"""``python -m examples.voice_bot --port 8765 --script replies.json`` (see README.md)."""
import sys

from examples.voice_bot.server import main

sys.exit(main())
