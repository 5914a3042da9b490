"""An endpoint's rate limits (harness/models/rate_limits.py, issue 44): places in order, the
requests and tokens a minute and the requests in flight never above the limits, a 429 pausing
every role, estimates corrected; and a batch against an endpoint that answers 429 past its limit
(tests/benchmarks/load_endpoint.py ``--rpm``): without limits it meets 429s, with them none,
and the report counts both."""
import asyncio
import json
import subprocess
import sys

import pytest

from harness.cli.main import main
from harness.config import ModelSpec
from harness.models.rate_limits import Limits, RateLimiter, estimate_tokens, limiter_for
from store import StoreReader


class Clock:
    """A clock that moves only when the limiter sleeps (every wait is exact and instant)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def sends(limits: Limits, costs: list[int], hold_s: float = 0.0) -> tuple[list[float], int]:
    """The clock times at which requests of ``costs`` tokens were let through, and the most in
    flight at once (each request holds its place ``hold_s`` of the clock)."""
    clock = Clock()
    limiter = RateLimiter(limits, clock=clock, sleep=clock.sleep)
    times, in_flight, most = [], [0], [0]

    async def one(cost):
        await limiter.acquire(cost)
        times.append(clock.now)
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        if hold_s:
            await clock.sleep(hold_s)
        in_flight[0] -= 1
        limiter.release(cost, cost)

    async def run():
        await asyncio.gather(*(one(c) for c in costs))
    asyncio.run(run())
    return [t - 100.0 for t in times], most[0]


def most_in_window(times: list[float], window: float) -> int:
    return max(sum(1 for u in times if t <= u < t + window) for t in times)


def test_requests_are_evenly_spaced_at_the_limit():
    times, _ = sends(Limits(requests_per_minute=120), [1] * 300)
    assert len(times) == 300 and times == sorted(times)
    assert most_in_window(times, 60.0) <= 120 and most_in_window(times, 1.0) <= 2
    assert times[-1] == pytest.approx(299 / 2.0, abs=0.01)  # 2 a second from the first


def test_tokens_a_minute_counts_each_request_and_a_large_one_leaves_a_debt():
    costs = [50] * 40 + [500, 50]
    times, _ = sends(Limits(tokens_per_minute=6000), costs)  # 100 tokens a second
    spent = list(zip(times, costs))
    for start, _ in spent:
        assert sum(c for t, c in spent if start <= t < start + 10.0) <= 100 * 10 + 500
    assert times[-1] - times[-2] == pytest.approx(5.0)  # the 500 tokens owed: 5 s before the next


def test_no_more_requests_in_flight_than_allowed():
    _, most = sends(Limits(max_in_flight=3), [1] * 20, hold_s=0.5)
    assert most == 3
    _, unlimited = sends(Limits(), [1] * 20, hold_s=0.5)
    assert unlimited == 20


def test_a_429_pauses_every_request_and_limits_combine_to_the_tightest():
    clock = Clock()
    limiter = RateLimiter(Limits(), clock=clock, sleep=clock.sleep)

    async def run():
        assert await limiter.acquire(10) == 0.0
        limiter.release(10, None)
        limiter.pause(7.5)
        waited = await limiter.acquire(10)
        limiter.release(10, 12)
        return waited
    assert asyncio.run(run()) == pytest.approx(7.5)
    assert Limits(60, None, 4).tightest(Limits(30, 1000, None)) == Limits(30, 1000, 4)
    assert Limits(60, 6000, 4).divided(4) == Limits(15, 1500, 1)

    async def shared():
        a = limiter_for("http://x/v1", Limits(requests_per_minute=60))
        b = limiter_for("http://x/v1", Limits(requests_per_minute=30, max_in_flight=2))
        return a, b, limiter_for("http://x/v1", Limits())
    a, b, c = asyncio.run(shared())
    assert b.limits == Limits(30, None, 2) and c is b and a.limits == Limits(60, None, None)


def test_a_cancelled_request_gives_its_place_back():
    clock = Clock()
    limiter = RateLimiter(Limits(max_in_flight=1), clock=clock, sleep=clock.sleep)

    async def run():
        await limiter.acquire(1)
        waiting = asyncio.ensure_future(limiter.acquire(1))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        limiter.release(1, None)
        await asyncio.wait_for(limiter.acquire(1), 1)  # the place is free again
    asyncio.run(run())


def test_estimate_and_config_validation():
    assert estimate_tokens(400, 64) == 164
    with pytest.raises(ValueError):
        ModelSpec(requests_per_minute=0)
    with pytest.raises(ValueError):
        ModelSpec(max_in_flight=0)


@pytest.fixture
def limited_endpoint():
    """Starts light load endpoints answering at most 120 requests a minute (2 a second) and
    HTTP 429 past it; returns their URLs."""
    procs = []

    def start() -> str:
        proc = subprocess.Popen([sys.executable, "-m", "tests.benchmarks.load_endpoint", "--delay", "0.05",
                                 "--rpm", "120"], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        return f"http://127.0.0.1:{proc.stdout.readline().split()[1]}/v1"
    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


def run_batch(tmp_path, url, name, extra):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "question": f"My printer {i} jams."}) + "\n"
                             for i in range(2)))
    flags = ["--profile", "embedded"]
    for role in ("agent", "user", "judge", "complexity", "extractor"):
        flags += ["--role", f"{role}.base_url={url}", "--role", f"{role}.model={role}-fake", *extra(role)]
    store = tmp_path / f"{name}.sqlite"
    assert main(["run", "--store", str(store), "--dataset", str(tasks), "--max-turns", "1", "--concurrency", "2",
                 "--quiet", "--name", name, *flags]) in (0, 3)
    reader = StoreReader(store)
    run = reader.runs()[0]
    calls = [c for i in reader.interactions(run["id"]) for c in reader.llm_calls(i["id"])]
    report = (tmp_path / run["id"] / "report.md").read_text()
    return calls, report


def test_a_batch_within_the_limits_meets_no_429_and_the_report_counts_both(tmp_path, limited_endpoint):
    calls, report = run_batch(tmp_path, limited_endpoint(), "unlimited", lambda role: [])
    met = [c for c in calls if (c["error"] or "").startswith("rate_limited")]
    assert met, "the endpoint's limit was never met: the test measures nothing"
    assert f"Rate limits: {len(met)} answered HTTP 429" in report
    # every role at 90% of the endpoint's limit (the limiter is the endpoint's, shared by the roles)
    calls, report = run_batch(tmp_path, limited_endpoint(), "limited",
                              lambda role: ["--role", f"{role}.requests_per_minute=108"])
    assert not [c for c in calls if (c["error"] or "").startswith("rate_limited")]
    assert sum(c["rate_wait_ms"] for c in calls) > 0
    assert "Rate limits: 0 answered HTTP 429" in report and "for the endpoint's limits" in report


def test_ray_shards_share_the_endpoint_limits():
    from harness.config import Config
    from harness.scale.shards import share_rate_limits

    config = Config()
    config.roles["judge"] = ModelSpec(base_url="http://x/v1", requests_per_minute=600, tokens_per_minute=90000,
                                      max_in_flight=8)
    share_rate_limits(config, 4)
    judge = config.roles["judge"]
    assert (judge.requests_per_minute, judge.tokens_per_minute, judge.max_in_flight) == (150, 22500, 2)
    assert config.roles["agent"].requests_per_minute is None  # no limit stays none
