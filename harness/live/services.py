"""Everything the live app needs, built from the config: the runtime (models), the store,
live sessions (SelfScore, and NoisyToolBench with a person as the user), studies, the
organiser secret and results folders. One per app process."""
from __future__ import annotations

import hmac
import os
import secrets
import threading
from pathlib import Path

from harness.compose import ChatModelFactory, Runtime
from harness.config import EXTERNAL_AGENTS, Config, ConfigError
from harness.live.guards import LiveError, RateLimiter
from harness.live.ntb_sessions import NtbLiveSessions
from harness.live.sessions import LiveSessions
from harness.live.studies import Studies
from harness.tasks.datasets import DatasetError, load_dataset
from store import StoreReader, StoreWriter


def check_app_agents(config: Config) -> None:
    """A team's own agent in ``app.agents`` is the one ``run.agent`` and the ``agent`` section
    describe (``python app.py --agent http --agent-url URL`` sets both).

    Raises:
        ConfigError: naming the setting to fix."""
    other = [a for a in config.app.agents if a in EXTERNAL_AGENTS and a != config.run.agent]
    if other:
        raise ConfigError(f"app.agents names {', '.join(other)}, but run.agent is {config.run.agent!r}: the "
                          f"app serves the team's agent that run.agent names; start it with --agent {other[0]} "
                          "--agent-url URL (or --agent-target MODULE:ATTR).")


class AppServices:
    """Owns the app's collaborators; :meth:`close` stops the engine and the writer."""

    def __init__(self, config: Config, chat_models: ChatModelFactory | None = None,
                 organiser_secret: str | None = None):
        check_app_agents(config)
        self.config = config
        self.runtime = Runtime(config, chat_models)
        self.runtime.reasons_by_default = True  # the organiser page shows each score's reason
        self.writer = StoreWriter(config.store)
        self.reader = StoreReader(config.store, must_exist=False)
        self.live = LiveSessions(self.runtime, self.writer, self.reader)
        self.ntb = NtbLiveSessions(self.runtime, self.writer, self.reader)  # a person as the NTB user
        self.studies = Studies(self.live.store, config.app.agents)
        self.secret_generated = False
        secret = organiser_secret or os.environ.get(config.app.organiser_secret_env)
        if not secret:
            secret, self.secret_generated = secrets.token_urlsafe(18), True
        self._secret = secret
        self.out_dir = Path(config.store).parent / "app"
        self.app_url = f"http://{config.app.host}:{config.app.port}/"  # set by the UI at launch
        self.starts = RateLimiter(config.app.starts_per_minute_per_ip)
        self._free_pool = None
        self._free_pool_lock = threading.Lock()

    @property
    def organiser_secret(self) -> str:
        """The secret the organiser pages ask for (given, from the environment, or generated)."""
        return self._secret

    def check_secret(self, given: str | None) -> None:
        """Raises:
            LiveError: when ``given`` is not the organiser secret."""
        if not given or not hmac.compare_digest(given.strip().encode(), self._secret.encode()):
            raise LiveError("Organiser pages need the organiser secret (set it with the "
                            f"{self.config.app.organiser_secret_env} environment variable; "
                            "`python app.py` prints it at start-up).")

    def free_task(self, index: int):
        """A task from the configured task set for a free session (``run.dataset``)."""
        with self._free_pool_lock:
            if self._free_pool is None:
                try:
                    self._free_pool = load_dataset(self.config.run.dataset)
                except DatasetError as exc:
                    raise LiveError(f"The task set cannot be loaded: {exc}") from exc
        tasks = self._free_pool.tasks
        return tasks[index % len(tasks)], self._free_pool

    def warm_up(self) -> None:
        """Start the embedded engine in the background so the first participant does not wait."""
        def start():
            try:
                # a team's own agent (run.agent http, ...) needs no model of the agent role
                roles = ("judge",) if self.config.run.agent in EXTERNAL_AGENTS else ("agent", "judge")
                for role in roles:
                    spec = self.config.role(role)
                    if spec.embedded:
                        self.runtime.engine.base_url(spec.model)
            except Exception as exc:  # reported on first use with the engine's own message
                print(f"deskbench app: the embedded engine did not start yet: {exc}")
        threading.Thread(target=start, daemon=True, name="engine-warm-up").start()

    def close(self) -> None:
        """Stop the runtime (its embedded engine) and close the store writer."""
        self.runtime.close()
        self.writer.close()
