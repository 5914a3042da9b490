"""The aids made for small local judges, beside the method in ``harness.selfscore``: the method
profiles that switch them, and the judgment rules as named, versioned data read by one small
engine (the helpfulness bounds, the solved-check's cues, the simulated user's check data).

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "AIDS": "profiles",
    "EMBEDDED_AIDS": "profiles",
    "PAPER_AIDS": "profiles",
    "PROFILES": "profiles",
    "Profile": "profiles",
    "resolve_profile": "profiles",
    "Bounds": "helpfulness_bounds",
    "RULES_VERSION": "helpfulness_bounds",
    "agent_reply_bounds": "helpfulness_bounds",
    "first_question_bounds": "helpfulness_bounds",
    "user_reply_bounds": "helpfulness_bounds",
    "SOLVED_CUES_VERSION": "cues",
    "SUCCESS_CLAIM_VERSION": "cues",
    "agent_cues": "cues",
    "agent_hits": "cues",
    "assistant_hits": "cues",
    "assistant_phrases": "cues",
    "claims_success": "cues",
    "claims_success_hits": "cues",
    "persisting_cues": "cues",
    "persisting_hits": "cues",
    "result_cues": "cues",
    "result_hits": "cues",
    "CODE_SPAN": "text",
    "addressees": "text",
    "escape_tags": "text",
    "sentence_ends": "text",
    "sentences": "text",
    "tags": "text",
    "version_of": "rules",
    "copied_fraction": "text",
    "plain_words": "text",
    "strip_address": "text",
    "terms": "text",
    "without_addresses": "text",
    "LANGUAGES": "data_languages",
    "OTHER_LANGUAGES": "data_languages",
    "PREPROCESS_ANSWER_SIGNS": "data_preprocess",
    "PREPROCESS_SOLUTION_SIGNS": "data_preprocess",
    "TEXT": "data_text",
    "TEXT_SPANS": "data_text",
    "MANIPULATION_CUES": "data_defence",
    "MANIPULATION_FORMATS": "data_defence",
    "MANIPULATION_STRUCTURE": "data_defence",
    "Limit": "rules",
    "Rule": "rules",
    "RuleSet": "rules",
    "WordList": "rules",
    "FIX_TERMS": "data_user",
    "USER_CHECKS": "data_user",
    "USER_CHECKS_VERSION": "data_user",
    "EVIDENCE_RULES_VERSION": "evidence",
    "not_a_fix": "evidence",
    "reaction": "evidence",
    "FAMILIES": "catalogue",
    "RULE_SETS": "catalogue",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
