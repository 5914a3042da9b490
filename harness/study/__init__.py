"""Statistics and reports over stored runs: the run report, exports, statistics across runs
(ANOVA, Tukey, Mann-Whitney, agreement, reliability), the HTML comparison report and its plots,
and the voice and call figures.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "PASS_K_PNG": "trial_report",
    "agent_figures": "agent_report",
    "agent_lines": "agent_report",
    "agreement_line": "label_report",
    "agreement_markdown": "label_report",
    "agreement_summary": "label_agreement",
    "call_lines": "call_report",
    "check_label_sources": "label_sources",
    "cluster_bootstrap": "bootstrap",
    "cohen_kappa": "label_agreement",
    "compare_trials": "noise",
    "export_run": "export",
    "failure_detail": "agent_report",
    "human_llm_agreement": "agreement",
    "noise_lines": "noise",
    "pass_k_figures": "trials",
    "pass_k_lines": "trial_report",
    "pass_k_png": "report_plots",
    "persona_lines": "trial_report",
    "report_markdown": "report",
    "run_distributions_png": "report_plots",
    "trial_lines": "trial_report",
    "trial_summary": "trials",
    "trust_line": "solved_check_trust",
    "trust_short": "solved_check_trust",
    "turn_agent_extra": "agent_report",
    "voice_lines": "voice_report",
    "write_csv": "export",
    "write_html_report": "html_report",
    "write_report": "report",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
