"""The agents, the side of a help-desk conversation that SelfScore rates: the paper's plain
agent, its RAG agent over a knowledge base of earlier questions and answers, and the scripted
agent that replays fixed replies (the human baseline, re-judging); the history window they read.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "HISTORY_CHARS": "history",
    "as_chat": "history",
    "window": "history",
    "AGENT_REPLY_BOUND": "prompts",
    "AGENT_SYSTEM": "prompts",
    "agent_system": "prompts",
    "PlainAgent": "plain",
    "ScriptedAgent": "scripted",
    "BuildStats": "rag",
    "KnowledgeBase": "rag",
    "KnowledgeBaseError": "rag",
    "RAG_PROMPT_VERSION": "rag",
    "RagAgent": "rag",
    "split_tasks": "rag",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
