"""simcheck: the fidelity of the simulated user against real askers (issue 42, docs/simcheck.md).

The real reply points of a task file (``points``), the act of a reply decided by rules
(``acts``), the measures between simulated and real replies (``measures``: act agreement,
over-cooperation, facts, style), the simulated user played at every point with a cache
(``run``), and the printed table and JSON summary (``report``).

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "ACTS": "acts",
    "FACT_MODES": "points",
    "SPLITS": "points",
    "Point": "points",
    "act_of": "acts",
    "classifier_agreement": "acts",
    "load_act_labels": "acts",
    "problem_statements": "run",
    "real_points": "points",
    "simcheck_lines": "report",
    "simcheck_summary": "report",
    "simulate_points": "run",
    "split_digest": "points",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
