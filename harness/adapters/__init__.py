"""The team's own agent under test: adapters that translate one external contract each (an
HTTP endpoint speaking the harness's contract, a Python callable or LangGraph graph, an
OpenAI-compatible endpoint as it is, a LangGraph server, an A2A agent) into the ``Agent``
protocol, with the agent's trace, usage and latency (docs/agents.md).

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "CONTRACT_VERSION": "contract",
    "AgentResponse": "contract",
    "ContractError": "contract",
    "build_request": "contract",
    "parse_response": "contract",
    "ExternalAgent": "external",
    "GraphAgent": "graph_agent",
    "NOT_REPORTED": "external",
    "build_external_agent": "build",
    "check_agent": "build",
    "close_agent": "build",
    "expand_headers": "headers",
    "load_target": "python_agent",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
