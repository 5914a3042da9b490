"""SelfScore, the method: the judges and their prompts, complexity, the solved-check, cost, the
batch runner and its store sink, figures and scoring formulas, transcript scoring, re-judging,
the sanity sets and the adversarial robustness suite. The two sides it rates are elsewhere: the
simulated user in ``harness.simuser``, the agents in ``harness.agents``; the composition root
builds them and hands them in.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "AgentTurnCost": "cost",
    "PROMPT_VERSION": "prompts",
    "extract": "preprocess",
    "EXPORT_FIELDS": "scoring",
    "Progress": "runs",
    "ProgressFn": "runs",
    "Reason": "judges",
    "SCORER_VERSION": "scoring",
    "SCORE_READING_VERSION": "score_reading",
    "SelfScoreBatch": "batch",
    "SelfScoreJudges": "judges",
    "StoreTurnSink": "batch",
    "StructuredJudge": "judges",
    "TRANSLATE_VERSION": "languages",
    "solved_rules_version": "solved_evidence",
    "translate_version": "languages",
    "TraceJudges": "trace_judges",
    "TranscriptError": "transcripts",
    "YES_NO_SYSTEM": "prompts",
    "agent_error_text": "batch",
    "aid_counts": "aid_effects",
    "arun_selfscore": "batch",
    "ascore_transcripts": "transcripts",
    "call_rows": "runs",
    "complexity_pairs_for": "sanity",
    "create_rejudge_run": "rejudge",
    "escape_judged_text": "judge_messages",
    "CONVERSATION_MAX_CHARS": "judge_messages",
    "LATEST_MAX_CHARS": "judge_messages",
    "guard_version": "preprocess",
    "failed_by_agent": "batch",
    "failed_turn_calls": "batch",
    "finish_run": "runs",
    "history_from_turns": "batch",
    "interaction_figures": "figures",
    "load_suite": "adversarial",
    "new_run": "runs",
    "prepare_problem": "batch",
    "profile_label": "figures",
    "raise_problems": "transcripts",
    "record_failure": "runs",
    "rejudge_config": "rejudge",
    "replays": "rejudge",
    "rescore_run": "figures",
    "run_all": "runs",
    "run_name": "batch",
    "run_robustness": "adversarial",
    "run_sanity": "sanity",
    "score_reading_record": "score_reading",
    "score_row": "figures",
    "score_transcripts": "transcripts",
    "summarize": "scoring",
    "turn_quality": "scoring",
    "verdict_text": "adversarial",
    "weighted_complexity": "scoring",
    "yes_no_messages": "judge_messages",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
