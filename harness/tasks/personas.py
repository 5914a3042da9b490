"""The simulated user's persona names: what a task's ``persona`` field and ``run.persona`` may say.

Their behaviour is ``harness.simuser.personas``; the names live here, with the task format,
so that the task loader and the config validate them without importing the simulated user.
"""
from __future__ import annotations

#: cooperative (the default, as published), vague, impatient, mistaken, tangential
PERSONAS = ("cooperative", "vague", "impatient", "mistaken", "tangential")
