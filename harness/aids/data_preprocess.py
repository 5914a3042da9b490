"""Rule data: the preprocessing guard's signs (``harness.selfscore.preprocess``): a summary that
answers the question instead of restating it, a "problem statement" that is a fix.

Data only (the engine is :mod:`harness.aids.rules`). Each rule's ``sign`` trait is the name a
preprocessing row stores (its id is that name as a slug); a flagged extraction is regenerated
once with a stricter prompt (measured in ``tests/benchmarks/bench_preprocess.py``, docs/selfscore.md).
"""
from __future__ import annotations

import re

from harness.aids.rules import Limit, Rule, RuleSet

_WHY = ("a small extractor answers a question instead of restating it, and states the fix instead of the "
        "problem (tests/benchmarks/bench_preprocess.py measures the signs)")

# Signs that a "summary" answers the question instead of restating it. "you can" and "you
# should" are answers unless the user asks about them ("whether you can ...").
_NOT_ASKED = r"(?<!\bif )(?<!\bwhether )(?<!\bhow )(?<!\bwhat )(?<!\bwhere )(?<!\bwhy )(?<!\bwhen )"
_ANSWER: dict[str, str] = {
    "yes/no reply": r"^\W*(yes|no|nope|yep|sure|certainly|absolutely|of course|correct|not necessarily)\b\s*[,.!:;-]",
    "it means": r"\b(it|this|that) (means|indicates|is because|happens because)\b",
    "you can": _NOT_ASKED + r"\byou (can|could|may|might)(?!n?['’]t|not)( also| simply| just)? (use|try|run|do|install|change|set|edit|add|open|check|press|type|find|get|see|list|view|disable|enable)\b",
    "you should": _NOT_ASKED + r"\byou (should|need to|must|have to|will need|'ll need|'d need|want to)\b",
    "to fix": _NOT_ASKED + r"\bto (fix|solve|resolve|do) (this|it|that)\b",
    "run a command": r"\b(run|type|execute|enter|use)( the)?( command)? `(?![^.?!]*\?\s*$)",
    "code block": r"```",
    "replies as the help desk": (r"\b(can|may|could) i (help|assist) you\b|\bwhat can i do for you\b|"
                                 r"\bhow can i (help|assist)\b|\bi('d| would) be (happy|glad) to\b|"
                                 r"\bi('m| am) sorry\b|\bi apologi[sz]e\b"),
    "numbered steps": r"(^|\n)\s*(\d+[.)]|step \d+:?)\s",
    "here is how": r"\bhere('s| is) (how|what|a)\b|\bthe (answer|solution|fix) is\b",
    "imperative": r"^\W*(run|use|type|press|click|open|go to|navigate to|install|make sure|try|simply|first,)\b(?![^.?!]*\?\s*$)",
}
# Signs that a "problem statement" is a fix or instructions rather than the problem.
_SOLUTION: dict[str, str] = {
    # verbs that rarely start a problem statement, and verbs that are also nouns ("Update
    # manager crashes", "Boot partition is full"), the latter only before an object
    "imperative": (r"^\W*(run|use|type|press|click|open|go|navigate|install|uninstall|reinstall|make sure|"
                   r"try|simply|first|edit|add|enable|disable|remove|delete|download|mount|unmount|"
                   r"restart|reboot|select|create|configure|replace|rename|ask|join|see|purge|fix|"
                   r"repair|connect|apply|modify|follow|visit|append|insert|recreate|reformat|specify|"
                   r"avoid|don't|do not|never|always|please)\b"
                   r"|^\W*(set|change|check|update|upgrade|format|boot|load|build|start|stop|switch|copy|"
                   r"move|turn|reset|read|look|search|get|put|write|kill|compile|call|define|plug|"
                   r"unplug|upload|save|add)\s+(the|your|it|a|an|to|this|that|all|from|with|in|into|on|"
                   r"off|up|out|sudo|`)\b"),
    "you should": r"\byou (should|need to|must|have to|can|could|may|might|will need|'ll need)\b(?!n?['’]t|not)",
    "to fix": r"\bto (fix|solve|resolve) (this|it|that|the)\b|\bthe (solution|fix|answer) is\b",
    "the user should": r"\b(the )?user (should|needs to|must|has to|can|could)\b(?!n?['’]t|not)",
    "run a command": r"(?<!how to )\b(run|type|execute|enter|use)( the)?( command)? `|```|\bsudo \w",
    "can be used": r"\b(can|could|should|must) be (used|done|fixed|solved|run|installed|changed|set)\b",
    "by doing": r"^\W*by \w+ing\b",
    "numbered steps": r"(^|\n)\s*(\d+[.)]|step \d+:?)\s",
    "question": r"\?\s*$",
}


def _signs(prefix: str, signs: dict[str, str], decides: str) -> list[Rule]:
    return [Rule(id=f"{prefix}.{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}", pattern=pattern,
                 decides=decides, why=_WHY, traits={"sign": name}) for name, pattern in signs.items()]


PREPROCESS_ANSWER_SIGNS = RuleSet("preprocess-answer-signs", _signs(
    "answer", _ANSWER, "a summary that answers the question instead of restating it"))
"""Signs that a summary answers the question (``answer_signs``), in the order listed."""

PREPROCESS_SOLUTION_SIGNS = RuleSet("preprocess-solution-signs", _signs(
    "solution", _SOLUTION, "a problem statement that is a fix, instructions or a question"), limits=[
    Limit(id="solution.max_words", value=30, decides="a problem statement of more words is 'too long'",
          why="the solved-check reads the problem as one short sentence about the user's system"),
])
"""Signs that a problem statement is no problem (``solution_signs``), in the order listed."""
