"""NoisyToolBench (Wang et al., "Learning to Ask", EMNLP 2025) in deskbench.

:mod:`harness.ntb.cases` loads the 200 shipped cases; :mod:`harness.ntb.toolbench` holds the
ToolBench naming rules and the OpenAI tool schemas and :mod:`harness.ntb.arguments` the argument
normalisation shared by the environment and the scorers; :mod:`harness.ntb.scoring` combines the
metrics (A1, A2, A3, Re, Steps) of its metric modules; :mod:`harness.ntb.apienv` is the
offline API environment (recorded responses, response examples, templates, an optional LLM
simulator). The method is restated in
``harness/data/noisytoolbench/SOURCE.md`` and the project's NoisyToolBench documentation.
"""
from harness.face import lazy_face

FACE = {
    "Case": "cases",
    "CaseError": "cases",
    "DATASET": "batch",
    "METRICS": "report",
    "NtbBatch": "batch",
    "PROTOCOL_VERSIONS": "agent",
    "SimulatedToolUser": "user",
    "agent_error_lines": "report",
    "StoreStepSink": "batch",
    "arun_ntb": "batch",
    "compare_runs": "report",
    "export_run": "report",
    "load_case": "cases",
    "load_cases": "cases",
    "problem_row": "batch",
    "run_rows": "report",
    "score_ntb_transcripts": "transcripts",
    "score_row": "batch",
    "scoring_data_sha": "batch",
    "selected_cases": "batch",
    "text_tables": "report",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
