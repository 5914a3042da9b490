"""Load test of the live Gradio app with ``gradio_client`` (a script, not a pytest test).

Run from the repository root:

    .venv/bin/python tests/benchmarks/bench_app_load.py                       # 20 x 5, LLM 0 and 200 ms
    .venv/bin/python tests/benchmarks/bench_app_load.py --participants 20 --turns 5 --llm-latency-ms 0

For each LLM latency asked for (a phase), it serves the real app (``AppServices`` and
``ui.app.launch``, Gradio on loopback, in this process) on a temporary store, with every role
pointed at ``tests.fake_openai_server.FakeOpenAIServer`` over HTTP (the real ``ChatOpenAI``
client path, the agent's reply streamed), each model call taking ``--llm-latency-ms``. The rate
limits (``app.messages_per_minute``, per session and per IP for starts) are raised so the
benchmark is not refused. Then ``--participants`` threads, each with its own
``gradio_client.Client``, start together and each: ``/live_start`` with a unique problem,
``--turns`` x ``/live_send`` with unique marker text, ``/live_rate``, ``/live_end`` and a final
``/live_view``. Every call's wall latency is measured on the client.

Figures per phase: turns/s (``/live_send`` calls over the participants' wall time), p50/p95/max
per endpoint and, for ``/live_start`` and ``/live_send``, the *non-LLM part*: the client latency
minus the LLM time on the call's critical path, read from the store's ``llm_calls`` rows
(``latency_ms`` per call; start: summary -> problem -> complexity in sequence; a turn: user
judge -> agent reply -> max(agent judge, solved-check), the last two run concurrently). At LLM
latency 0 the client latency is itself (almost) all non-LLM time: harness, store, LangGraph,
Gradio queue and transport, and the client (the clients share this process and its GIL).

Isolation: each participant's final ``/live_view`` must hold exactly its own ``--turns`` user
messages (its markers, in order) and agent replies numbered from its own history, no other
participant's marker may appear in any view it got, and no request that reached the model
endpoint may mix two participants' text. Exits 1 if isolation fails or any call errs.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import sqlite3
import sys
import tempfile
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter, process_time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gradio_client import Client  # noqa: E402

from harness.config import load_config  # noqa: E402
from harness.live.services import AppServices  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.fakes import default_responder  # noqa: E402
from ui.app import launch  # noqa: E402

ROLES = ("agent", "user", "judge", "complexity", "extractor")
ENDPOINTS = ("/live_start", "/live_send", "/live_rate", "/live_end", "/live_view")
MARK = re.compile(r"bench-p(\d+)-")
PARALLEL = ("judge:agent_helpfulness", "judge:solved")  # run together in the judge_agent node
STEP = re.compile(r"^Step (\d+):")


# -- figures -----------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the nearest ranks; nan for no values."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass
class Call:
    endpoint: str
    ms: float
    session: str = ""
    turn: int | None = None  # /live_send: the turn it completed
    error: str | None = None


@dataclass
class Participant:
    k: int
    markers: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    views: list[dict] = field(default_factory=list)
    session: str = ""
    final: dict | None = None
    connect_ms: float = 0.0
    failure: str | None = None


def participant_run(k: int, url: str, turns: int, barrier: threading.Barrier) -> Participant:
    p = Participant(k)
    tag = uuid.uuid4().hex[:6]
    t0 = perf_counter()
    client = Client(url, verbose=False, analytics_enabled=False, download_files=False)
    p.connect_ms = (perf_counter() - t0) * 1000
    barrier.wait()

    def call(endpoint: str, *args, turn: int | None = None) -> dict:
        started = perf_counter()
        try:
            out = client.predict(*args, api_name=endpoint)
        except Exception as exc:  # a transport or server failure: recorded, the participant stops
            p.calls.append(Call(endpoint, (perf_counter() - started) * 1000, p.session, turn,
                                f"{type(exc).__name__}: {exc}"))
            raise
        ms = (perf_counter() - started) * 1000
        err = out.get("error") if isinstance(out, dict) else f"unexpected reply {out!r:.200}"
        p.calls.append(Call(endpoint, ms, p.session or (out or {}).get("session", ""), turn, err))
        if err:
            raise RuntimeError(f"{endpoint}: {err}")
        p.views.append(out)
        return out

    try:
        view = call("/live_start", f"bench-p{k:02d}-problem-{tag}: printer {k} on floor {k % 7} "
                    "shows offline although it is switched on.", "plain")
        p.session = view["session"]
        for t in range(1, turns + 1):
            marker = f"bench-p{k:02d}-t{t}-{tag}"
            p.markers.append(marker)
            call("/live_send", p.session, f"{marker} it still does not print, what next?", turn=t)
        call("/live_rate", p.session, turns, 7, False)
        call("/live_end", p.session)
        p.final = call("/live_view", p.session)
    except Exception as exc:
        p.failure = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            client.close()
        except Exception:
            pass
    return p


# -- isolation ---------------------------------------------------------------------------------
def isolation_problems(parts: list[Participant], turns: int, requests: list[dict]) -> list[str]:
    problems = []
    sessions = [p.session for p in parts if p.session]
    if len(set(sessions)) != len(sessions):
        problems.append("two participants got the same session token")
    for p in parts:
        who = f"participant {p.k}"
        if p.final is None:
            problems.append(f"{who}: no final view ({p.failure})")
            continue
        msgs = p.final["messages"]
        users = [m["content"].split(" ", 1)[0] for m in msgs if m["role"] == "user"]
        agents = [m["content"] for m in msgs if m["role"] == "agent"]
        if users != p.markers:
            problems.append(f"{who}: its user messages are {users}, expected {p.markers}")
        if p.final["turns"] != turns or len(agents) != turns:
            problems.append(f"{who}: {p.final['turns']} turns and {len(agents)} agent replies, "
                            f"expected {turns}")
        steps = [int(m.group(1)) if (m := STEP.match(a)) else None for a in agents]
        if steps != list(range(1, len(agents) + 1)):  # the agent numbers replies from its history
            problems.append(f"{who}: agent replies numbered {steps}: its history held other messages")
        for view in p.views:
            seen = {int(x) for m in view.get("messages", []) for x in MARK.findall(m["content"])}
            if seen - {p.k}:
                problems.append(f"{who}: a view showed messages of participants {sorted(seen - {p.k})}")
                break
    mixed = 0
    for r in requests:
        seen = {int(x) for m in r.get("messages", []) for x in MARK.findall(str(m.get("content")))}
        mixed += len(seen) > 1
    if mixed:
        problems.append(f"{mixed} model requests mixed two participants' text")
    return problems


# -- LLM time on the critical path, from the store --------------------------------------------
def critical_llm_ms(store: Path) -> tuple[dict[str, str], dict[tuple[str, int | None], float],
                                         dict[tuple[str, int | None], int], int]:
    """(session -> interaction, (interaction, turn or None for the start) -> critical-path LLM ms,
    the same -> model calls in sequence on the critical path, number of llm_calls rows)."""
    db = sqlite3.connect(str(store))
    try:
        sessions = dict(db.execute("SELECT id, interaction_id FROM live_sessions"))
        per = defaultdict(lambda: defaultdict(float))
        n = 0
        for iid, turn, purpose, ms in db.execute(
                "SELECT interaction_id, turn_index, purpose, latency_ms FROM llm_calls"):
            per[(iid, turn)][purpose] += ms or 0.0  # retries of one purpose are sequential
            n += 1
    finally:
        db.close()
    critical, levels = {}, {}
    for key, by_purpose in per.items():
        serial = sum(ms for p, ms in by_purpose.items() if p not in PARALLEL)
        critical[key] = serial + max([by_purpose.get(p, 0.0) for p in PARALLEL])
        levels[key] = sum(p not in PARALLEL for p in by_purpose) + any(p in PARALLEL for p in by_purpose)
    return sessions, critical, levels, n


# -- one phase ---------------------------------------------------------------------------------
def run_phase(n: int, turns: int, llm_ms: float, concurrency: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-app-") as tmp, \
            FakeOpenAIServer(default_responder(solve_at=None), delay_s=llm_ms / 1000) as fake:
        store = Path(tmp) / "s.sqlite"
        app = {"port": 0, "max_turns": max(turns + 1, 2), "messages_per_minute": 10_000}
        if concurrency:
            app["concurrency"] = concurrency
        roles = {r: {"base_url": fake.base_url, "model": f"{r}-fake"} for r in ROLES}
        cfg = load_config(overrides={"store": str(store), "app": app, "roles": roles})
        services = AppServices(cfg, organiser_secret="bench")
        demo, url = launch(services)
        try:
            barrier = threading.Barrier(n + 1)
            with concurrent.futures.ThreadPoolExecutor(n) as pool:
                futures = [pool.submit(participant_run, k, url, turns, barrier) for k in range(n)]
                barrier.wait(timeout=300)
                wall0, cpu0 = perf_counter(), process_time()
                parts = [f.result() for f in futures]
                wall, cpu = perf_counter() - wall0, process_time() - cpu0
        finally:
            demo.close()
            services.close()
        sessions, critical, levels, n_llm = critical_llm_ms(store)
        requests = list(fake.requests)

    calls = [c for p in parts for c in p.calls]
    ok = [c for c in calls if not c.error]
    by_ep = {ep: [c.ms for c in ok if c.endpoint == ep] for ep in ENDPOINTS}
    non_llm: dict[str, list[float]] = {"/live_start": [], "/live_send": []}
    llm: dict[str, list[float]] = {"/live_start": [], "/live_send": []}
    nominal: dict[str, list[float]] = {"/live_start": [], "/live_send": []}
    for c in ok:
        if c.endpoint not in non_llm:
            continue
        key = (sessions.get(c.session), c.turn)
        if key in critical:
            llm[c.endpoint].append(critical[key])
            non_llm[c.endpoint].append(c.ms - critical[key])
            nominal[c.endpoint].append(c.ms - levels[key] * llm_ms)
    problems = isolation_problems(parts, turns, requests)
    sent = len(by_ep["/live_send"])
    return {
        "llm_ms": llm_ms, "participants": n, "turns": turns, "wall_s": wall, "cpu_s": cpu,
        "turns_done": sent, "turns_per_s": sent / wall if wall else 0.0,
        "calls_per_s": len(ok) / wall if wall else 0.0,
        "errors": [f"p{p.k}: {p.failure}" for p in parts if p.failure],
        "connect_ms_p50": pct([p.connect_ms for p in parts], 50),
        "endpoints": {ep: {"n": len(v), "p50": pct(v, 50), "p95": pct(v, 95),
                           "max": max(v) if v else float("nan")} for ep, v in by_ep.items()},
        "non_llm": {ep: {"n": len(v), "p50": pct(v, 50), "p95": pct(v, 95),
                         "max": max(v) if v else float("nan"), "llm_p50": pct(llm[ep], 50),
                         "nominal_p50": pct(nominal[ep], 50), "nominal_p95": pct(nominal[ep], 95)}
                    for ep, v in non_llm.items()},
        "llm_calls": n_llm, "model_requests": len(requests),
        "isolation_ok": not problems, "isolation_problems": problems,
        "concurrency": cfg.app.concurrency, "load_avg_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }


def print_phase(r: dict) -> None:
    print(f"\n== LLM latency {r['llm_ms']:.0f} ms per call: {r['participants']} participants x "
          f"{r['turns']} turns, Gradio concurrency {r['concurrency']}, load average "
          f"{r['load_avg_1m']:.1f} on {r['cpus']} CPUs ==")
    print(f"wall {r['wall_s']:.2f} s (process CPU {r['cpu_s']:.2f} s), {r['turns_done']} turns, "
          f"{r['turns_per_s']:.2f} turns/s, {r['calls_per_s']:.2f} API calls/s; "
          f"client connect p50 {r['connect_ms_p50']:.0f} ms (not timed below)")
    print(f"model requests {r['model_requests']}, llm_calls rows {r['llm_calls']}")
    print(f"{'endpoint':<12} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} | "
          f"{'LLM p50':>8} {'non-LLM p50':>11} {'p95':>7} {'max':>7} | {'nominal p50':>11} {'p95':>7}")
    for ep, s in r["endpoints"].items():
        line = f"{ep:<12} {s['n']:>4} {s['p50']:>8.1f} {s['p95']:>8.1f} {s['max']:>8.1f}"
        if ep in r["non_llm"]:
            x = r["non_llm"][ep]
            line += (f" | {x['llm_p50']:>8.1f} {x['p50']:>11.1f} {x['p95']:>7.1f} {x['max']:>7.1f}"
                     f" | {x['nominal_p50']:>11.1f} {x['nominal_p95']:>7.1f}")
        print(line)
    print("isolation: " + ("OK" if r["isolation_ok"] else "FAILED"))
    for p in r["isolation_problems"][:20]:
        print("  - " + p)
    for e in r["errors"][:20]:
        print("  error: " + e)


NOTE = """\
LLM p50: critical-path model time per call from llm_calls.latency_ms; non-LLM = client latency
minus it. latency_ms is timed inside the app's event loop, so when the process is short of CPU it
also holds time the loop was busy elsewhere, and non-LLM is then an underestimate; nominal =
client latency minus (model calls in sequence x the fake's fixed latency), an overestimate."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=20)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--llm-latency-ms", default="0,200",
                    help="fixed latency of every model call; comma-separated: one phase each")
    ap.add_argument("--concurrency", type=int, default=None,
                    help="app.concurrency (Gradio queue); default: the config's")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    latencies = [float(x) for x in str(args.llm_latency_ms).split(",") if x.strip()]

    results = []
    for llm_ms in latencies:
        r = run_phase(args.participants, args.turns, llm_ms, args.concurrency)
        print_phase(r)
        results.append(r)

    print("\n" + NOTE)
    print(f"\nSummary: {args.participants} participants x {args.turns} turns (client wall ms)")
    print(f"{'LLM ms':>6} {'turns/s':>7} {'send p50':>8} {'p95':>7} {'nonLLM p50':>10} {'p95':>7} "
          f"{'nominal p50':>11} {'p95':>7} {'start p50':>9} {'nonLLM p50':>10} {'err':>3} {'isolation':>9}")
    for r in results:
        s, x = r["endpoints"]["/live_send"], r["non_llm"]["/live_send"]
        st, xs = r["endpoints"]["/live_start"], r["non_llm"]["/live_start"]
        print(f"{r['llm_ms']:>6.0f} {r['turns_per_s']:>7.2f} {s['p50']:>8.0f} {s['p95']:>7.0f} "
              f"{x['p50']:>10.0f} {x['p95']:>7.0f} {x['nominal_p50']:>11.0f} {x['nominal_p95']:>7.0f} "
              f"{st['p50']:>9.0f} {xs['p50']:>10.0f} {len(r['errors']):>3} "
              f"{'OK' if r['isolation_ok'] else 'FAILED':>9}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    failed = any(not r["isolation_ok"] or r["errors"] for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
