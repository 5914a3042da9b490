"""LangGraph state machines: state, node functions, routing and graph builders.

Imports only LangGraph and the standard library: collaborators (users, agents, judges, cost,
the turn sink) are handed in, typed by the Protocols in ``graphs.protocols``.
"""
