"""Task sets: the built-in and JSONL task files (``datasets``, ``jsonl``), the Stack Exchange and
#ubuntu IRC importers and the seeded knowledge-base/test split.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "DEFAULT_PATH": "ubuntu_irc",
    "Dataset": "datasets",
    "DatasetError": "datasets",
    "JsonlError": "jsonl",
    "PERSONAS": "personas",
    "Task": "datasets",
    "atomic_write": "jsonl",
    "import_dump": "stackexchange",
    "import_ubuntu_irc": "ubuntu_irc",
    "json_type": "jsonl",
    "load_dataset": "datasets",
    "read_jsonl": "jsonl",
    "split_ids": "split",
    "task_solution": "datasets",
    "write_jsonl": "jsonl",
    "write_split": "split",
    "write_tasks": "stackexchange",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
