"""The agent's settings, all from environment variables (read when asked, so that a server or a
test can set them first).

``HELPDESK_LLM_URL``    OpenAI-compatible base URL of the model (``http://HOST:PORT/v1``); required
``HELPDESK_LLM_MODEL``  model name sent to it (default ``qwen2.5-coder-1.5b``, deskbench's embedded one)
``HELPDESK_LLM_API_KEY`` the endpoint's API key (default: none needed, as for llama.cpp)
``HELPDESK_KB``         a JSONL knowledge base of ``{"id", "question", "answer"}`` (default: built
                        from the data deskbench ships, see SOURCE.md)
``HELPDESK_INDEX_DIR``  chromadb's folder (default ``$TMPDIR/helpdesk-agent-index``)
``HELPDESK_K``          passages retrieved per turn (default 3)
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "qwen2.5-coder-1.5b"


class SettingsError(RuntimeError):
    """A setting that is missing or malformed; the message names the variable and the fix."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The agent's settings (see the module docstring for the variables)."""

    llm_url: str
    llm_model: str
    llm_api_key: str
    kb_path: Path | None
    index_dir: Path
    k: int
    max_tokens: int


def load_settings(require_llm: bool = True) -> Settings:
    """The settings from the environment.

    Raises:
        SettingsError: ``HELPDESK_LLM_URL`` unset (when ``require_llm``) or not http(s), or
            ``HELPDESK_K`` not a positive integer.
    """
    url = os.environ.get("HELPDESK_LLM_URL", "").strip()
    if require_llm and not url.startswith(("http://", "https://")):
        raise SettingsError("HELPDESK_LLM_URL must be the model's OpenAI-compatible base URL, e.g. "
                            f"http://127.0.0.1:8080/v1 (got {url!r}); export it before starting the agent.")
    try:
        k = int(os.environ.get("HELPDESK_K", "3"))
        max_tokens = int(os.environ.get("HELPDESK_MAX_TOKENS", "320"))
    except ValueError as exc:
        raise SettingsError(f"HELPDESK_K and HELPDESK_MAX_TOKENS must be integers ({exc})") from exc
    if k < 1 or max_tokens < 1:
        raise SettingsError("HELPDESK_K and HELPDESK_MAX_TOKENS must be at least 1")
    kb = os.environ.get("HELPDESK_KB")
    index = os.environ.get("HELPDESK_INDEX_DIR") or str(Path(tempfile.gettempdir()) / "helpdesk-agent-index")
    return Settings(llm_url=url, llm_model=os.environ.get("HELPDESK_LLM_MODEL") or DEFAULT_MODEL,
                    llm_api_key=os.environ.get("HELPDESK_LLM_API_KEY") or "not-needed",
                    kb_path=Path(kb) if kb else None, index_dir=Path(index), k=k, max_tokens=max_tokens)
