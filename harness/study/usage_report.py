"""The run report's model-usage sections: per role, and per turn and role, the calls, the
prompt tokens the server evaluated and those it reused from its prompt cache, the generated
tokens, the seconds, and for streamed calls (a live session's agent replies) the mean time to the
first token (docs/selfscore.md, "What a turn costs")."""
from __future__ import annotations

from store import StoreReader


def _s(ms: float | None) -> str:
    return f"{(ms or 0) / 1000:.1f}"


def _tokens(value: int | None) -> str:
    """A token sum; NULL where no call reported it (an agent under test without ``usage``)."""
    return "not reported" if value is None else str(value)


def _evaluated(c: dict) -> str:
    if c["input_tokens"] is None:
        return "-"
    return str(c["input_tokens"] - (c["cached_tokens"] or 0))


def usage_lines(reader: StoreReader, run_id: str) -> list[str]:
    """Markdown lines: "## Model calls" (per role and model) and "## Model calls per turn"
    (per turn index and role, summed over the run's conversations; turn "-" is the work done
    before turn 1: problem extraction and complexity)."""
    lines = ["", "## Model calls", "",
             "| role | model | calls | prompt tokens | evaluated | cached | generated | s | "
             "first token s | errors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in reader.llm_call_totals(run_id):
        first = f"{_s(c['ttft_ms'])} ({c['streamed']} streamed)" if c["streamed"] else "-"
        lines.append(f"| {c['role']} | {c['model']} | {c['calls']} | {_tokens(c['input_tokens'])} | "
                     f"{_evaluated(c)} | {c['cached_tokens']} | {_tokens(c['output_tokens'])} | "
                     f"{_s(c['latency_ms'])} | {first} | "
                     f"{c['errors']} |")
    limited = reader.rate_limit_totals(run_id)
    if limited["rate_limited"] or limited["waited_s"] > 0.05:
        lines += ["", f"Rate limits: {limited['rate_limited']} answered HTTP 429 (followed by "
                  f"{limited['backoff_s']:.1f} s of waiting before their retries); calls waited "
                  f"{limited['waited_s']:.1f} s in all for the endpoint's limits (requests_per_minute, "
                  "tokens_per_minute, max_in_flight) or a 429's pause before they were sent."]
    rows = reader.llm_call_totals(run_id, by_turn=True)
    if not rows:
        return lines
    lines += ["", "## Model calls per turn", "",
              "Summed over the conversations that reached the turn; evaluated = prompt tokens the "
              "server computed, cached = reused from its prompt cache; s = the calls' own seconds "
              "(calls overlap when conversations run at once).", "",
              "| turn | role | conversations | calls | evaluated | cached | generated | s |",
              "|---|---|---|---|---|---|---|---|"]
    for c in rows:
        turn = "-" if c["turn_index"] is None else c["turn_index"]
        lines.append(f"| {turn} | {c['role']} | {c['interactions']} | {c['calls']} | {_evaluated(c)} | "
                     f"{c['cached_tokens']} | {_tokens(c['output_tokens'])} | {_s(c['latency_ms'])} |")
    return lines
