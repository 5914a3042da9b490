"""Crowd-sourced studies: an organiser's set-up, pseudonymous participants, balanced tasks.

A study names a task pool (a task set, optionally the first N tasks), the agent(s), the mode
(participants ask as the user, or answer as the agent), how many sessions one participant may
hold, and the consent text. Participants join with the study's link and a code of their own
choosing (or one handed out); the code is never stored: the participant id is a keyed hash
(HMAC-SHA256) of study and code, so the same code finds the same participant again and exports
carry only the pseudonym. Each new session gets the (task, agent) pair with the fewest sessions
so far that the participant has not done, so coverage stays balanced across tasks and agents.

The organiser may close a study and reopen it. A closed study admits no new participant (a
code it has not seen); everything stored stays, and participants who already joined may finish
their conversations.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import asdict, dataclass, field

from harness.live.guards import LiveError
from harness.live.sessions import MODES, agent_choices
from harness.tasks.datasets import Dataset, DatasetError, Task, load_dataset
from store.live import LiveStore

_KEY_NAME = "pseudonym_key"
OPEN, CLOSED = "open", "closed"
CLOSED_MESSAGE = ("This study is closed to new participants. Thank you for your interest. If "
                  "you already joined, enter the same code to continue.")


@dataclass
class StudySpec:
    """What an organiser sets up."""

    name: str
    dataset: str = "lfrqa_technology"
    task_limit: int | None = 20
    agents: list[str] = field(default_factory=lambda: ["plain"])
    mode: str = "user"
    max_sessions: int = 3
    consent: str = ("This is a research study of help-desk assistants. Your messages and ratings "
                    "are stored with a pseudonym, never with your name or code. Do not type "
                    "personal information. You can stop at any time.")


class Studies:
    """Creates studies, admits participants and assigns them tasks. ``agents``: the app's
    ``app.agents`` (a team's own agent, ``--agent http``, among them), which a study may name
    beside plain and rag."""

    def __init__(self, store: LiveStore, agents: tuple[str, ...] | list[str] = ()):
        self.store = store
        self.agents = agent_choices(agents)
        self._key = self._pseudonym_key()
        self._datasets: dict[str, Dataset] = {}
        self._lock = threading.Lock()

    def _pseudonym_key(self) -> bytes:
        db = self.store.writer.db
        row = db.execute("SELECT value FROM meta WHERE key=?", [_KEY_NAME]).fetchone()
        if row is None:
            with self.store.writer._transaction():
                self.store.writer._insert("meta", {"key": _KEY_NAME, "value": secrets.token_hex(32)},
                                          verb="INSERT OR IGNORE")
            row = db.execute("SELECT value FROM meta WHERE key=?", [_KEY_NAME]).fetchone()
        return bytes.fromhex(row[0])

    # -- organiser -------------------------------------------------------------------------
    def create(self, spec: StudySpec) -> str:
        """Validate ``spec`` and store the study; returns its id (used in the study link).

        Raises:
            LiveError: naming the field to fix.
        """
        name = (spec.name or "").strip()
        if not name:
            raise LiveError("Give the study a name.")
        if spec.mode not in MODES:
            raise LiveError(f"Mode must be 'user' (participants ask) or 'agent' (participants "
                            f"answer), not {spec.mode!r}.")
        agents = [a for a in spec.agents if a]
        if not agents or any(a not in self.agents for a in agents):
            raise LiveError(f"Agents must be one or more of {', '.join(self.agents)}; got {spec.agents!r}.")
        if spec.mode == "agent" and len(agents) > 1:
            raise LiveError("In mode 'agent' the participants are the agent: choose one agent entry.")
        if spec.max_sessions < 1:
            raise LiveError("Sessions per participant must be at least 1.")
        if spec.task_limit is not None and spec.task_limit < 1:
            raise LiveError("The task pool needs at least 1 task (or no limit).")
        if not (spec.consent or "").strip():
            raise LiveError("Write the consent text participants must accept.")
        dataset = self._dataset(spec.dataset)
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24] or "study"
        study_id = f"{slug}-{secrets.token_hex(3)}"
        config = {**asdict(spec), "name": name, "agents": agents,
                  "dataset_sha256": dataset.sha256, "dataset_name": dataset.name}
        self.store.create_study(study_id, name, config)
        return study_id

    def _dataset(self, name: str) -> Dataset:
        if name not in self._datasets:
            try:
                self._datasets[name] = load_dataset(name)
            except DatasetError as exc:
                raise LiveError(f"Task pool: {exc}") from exc
        return self._datasets[name]

    def close(self, study_id: str) -> dict:
        """Close a study to new participants (nothing stored is touched); returns its row.

        Raises:
            LiveError: no such study.
        """
        return self._set_status(study_id, CLOSED)

    def reopen(self, study_id: str) -> dict:
        """Admit new participants to a closed study again; returns its row.

        Raises:
            LiveError: no such study.
        """
        return self._set_status(study_id, OPEN)

    def _set_status(self, study_id: str, status: str) -> dict:
        self.study(study_id)
        self.store.set_study_status(study_id, status)
        return self.study(study_id)

    def study(self, study_id: str) -> dict:
        """The study's row (with its parsed config), open or closed (``status``).

        Raises:
            LiveError: no such study.
        """
        study = self.store.study(study_id or "")
        if study is None:
            raise LiveError("No such study. Check the link you were given.")
        return study

    def pool(self, study: dict) -> tuple[Dataset, list[Task]]:
        """The study's task set and its tasks to assign (the first ``task_limit``, if set)."""
        dataset = self._dataset(study["config"]["dataset"])
        limit = study["config"].get("task_limit")
        return dataset, dataset.tasks[:limit] if limit else dataset.tasks

    # -- participants ----------------------------------------------------------------------
    def pseudonym(self, study_id: str, code: str) -> str:
        """The participant id of ``code`` in ``study_id``: ``p-`` and 16 hex digits of its
        keyed hash (HMAC-SHA256), so the same code finds the same participant again."""
        return "p-" + hmac.new(self._key, f"{study_id}\x00{code}".encode(), hashlib.sha256).hexdigest()[:16]

    def join(self, study_id: str, code: str, consented: bool) -> str:
        """Admit a participant who accepted the consent text; returns their pseudonym. A
        closed study admits only participants who joined before it closed (the same code).

        Raises:
            LiveError: unknown study, a new code for a closed study, no code, or consent not
                given.
        """
        study = self.study(study_id)
        code = (code or "").strip()
        if not (3 <= len(code) <= 64) or any(ord(c) < 32 for c in code):
            raise LiveError("Enter your participant code (3 to 64 characters), as given to you.")
        pid = self.pseudonym(study_id, code)
        if study["status"] == CLOSED and self.store.participant(pid) is None:
            raise LiveError(CLOSED_MESSAGE)
        if not consented:
            raise LiveError("Please read the consent text and tick 'I agree' to take part.")
        self.store.add_participant(pid, study_id)
        return pid

    def next_assignment(self, study_id: str, participant_id: str) -> tuple[Task, str, Dataset]:
        """The (task, agent) with the fewest sessions that this participant has not done.

        Hold :attr:`lock` from this call until the session is created, so that two people
        joining at the same moment are spread over different tasks.

        Raises:
            LiveError: the participant has done all their sessions, or every task.
        """
        study = self.study(study_id)
        if self.store.participant(participant_id) is None:
            raise LiveError("Join the study first (code and consent).")
        cfg = study["config"]
        mine = [s for s in self.store.sessions_of(study_id, participant_id) if s["status"] != "abandoned"]
        if len(mine) >= cfg["max_sessions"]:
            raise LiveError(f"You have completed all {cfg['max_sessions']} conversations of this "
                            "study. Thank you for taking part!")
        dataset, tasks = self.pool(study)
        done = {(s["task_id"], s["agent"]) for s in mine}
        done_tasks = {s["task_id"] for s in mine}
        coverage = self.store.coverage(study_id)
        candidates = [(coverage.get((t.id, a), 0), t.id in done_tasks, pos, t, a)
                      for pos, t in enumerate(tasks) for a in cfg["agents"] if (t.id, a) not in done]
        if not candidates:
            raise LiveError("You have done every task of this study. Thank you for taking part!")
        _, _, _, task, agent = min(candidates, key=lambda c: c[:3])
        return task, agent, dataset

    @property
    def lock(self) -> threading.Lock:
        """Held from :meth:`next_assignment` until the session is created (balanced tasks)."""
        return self._lock
