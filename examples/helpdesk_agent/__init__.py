"""A small help-desk agent built the way teams build them: a LangGraph graph over an
OpenAI-compatible model with a knowledge-base tool on chromadb (see examples/README.md).

``examples.helpdesk_agent.graph:graph`` is the compiled graph (``--agent python``);
``contract_server`` serves it over deskbench's agent contract (``--agent http``) and
``openai_facade`` as an OpenAI-compatible chat endpoint (``--agent openai``).
"""
