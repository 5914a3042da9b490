import json
from pathlib import Path

import pytest


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "wifi", "question": "My laptop wifi drops every few minutes on Ubuntu 22.04.",
         "followups": ["It is an Intel AX200 card.", "Still drops.", "Now it works, thanks!"]},
        {"id": "disk", "question": "My disk is full but du shows only half used.",
         "followups": ["I ran lsof, there are deleted files held open."]},
        {"id": "dns", "question": "Websites do not load but ping 8.8.8.8 works."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path
