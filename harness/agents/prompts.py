"""The agents' system prompts: the paper's plain-agent prompt verbatim, and the reply-length
bound of the ``reply_cap`` aid (``harness.aids.profiles``). Versioned with the judges' prompts by
``harness.selfscore.prompts.PROMPT_VERSION``, which the runs record (these texts are unchanged
since ``selfscore-p8``)."""
from __future__ import annotations

# --- the agent (the paper's plain agent system prompt, verbatim) ----------------------------
AGENT_SYSTEM = (
    "A user is having a problem. Respond with simple and helpful instructions most likely to "
    "guide the user to a solution. Only provide one solution at a time. Never give instructions "
    "to contact external or professional services. Never suggest contacting external or "
    "professional services."
)
# Appended to AGENT_SYSTEM when run.agent_reply_sentences > 0 (see agent_system). Measured on the
# first replies to 4 real IRC questions with the 1.5B (temperature 0.3): the paper's prompt
# 218 tokens mean, 22 of 48 batch replies at the 320 cap; "Keep each reply short: at most 100
# words." was ignored (320 and 282 tokens, numbered lists); "Reply in at most three sentences:
# give only the single most likely next step, no list." 39-223; this text 35-88.
AGENT_REPLY_BOUND = (" Answer in at most {sentences} short sentences. Give only the one most likely "
                     "next step, never a numbered list.")


def agent_system(reply_sentences: int = 0) -> str:
    """The plain agent's system prompt: the paper's text, plus a reply-length bound when
    ``reply_sentences`` > 0."""
    return AGENT_SYSTEM + (AGENT_REPLY_BOUND.format(sentences=reply_sentences) if reply_sentences > 0 else "")
