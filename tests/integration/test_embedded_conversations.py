"""Real multi-turn conversations on the embedded model: ``deskbench sanity`` (every judgment's
sanity set, half yes, half no) and ``deskbench demo``, each run as a user runs it.
Slow (minutes); skip with ``-m 'not integration'``."""
import os
import re
import subprocess
import sys
from pathlib import Path

from store import StoreReader

ARTIFACTS = Path(os.environ.get("DESKBENCH_TEST_ARTIFACTS", "test-artifacts"))
DESKBENCH = str(Path(sys.executable).with_name("deskbench"))


def counts(pattern: str, text: str) -> tuple[int, ...]:
    m = re.search(pattern, text)
    assert m, f"no line matching {pattern!r} in:\n{text}"
    return tuple(int(g) for g in m.groups())


def test_deskbench_sanity_as_the_readme_runs_it(tmp_path):
    """Every judgment's sanity set on the embedded model, half yes and half no, through the
    installed script: helpfulness and complexity pairs, the helpfulness pairs inside
    conversations, the solved-check's 26 conversations, the simulated user's 22 outcome
    scenarios and 5 persona scenarios, and the stability set."""
    proc = subprocess.run([DESKBENCH, "sanity", "--store", str(tmp_path / "s.sqlite"), "--quiet"],
                          capture_output=True, text=True, timeout=2400)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "sanity-output.txt").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    print(out)
    helpful, pairs, harder, complexity_pairs = counts(
        r"helpful reply scored higher in (\d+)/(\d+) pairs; harder problem rated more complex in (\d+)/(\d+)", out)
    assert pairs == 12 and complexity_pairs == 9
    # measured 11-12 of 12 with prompt p4; 10 leaves room for numeric drift between CPUs while a
    # judge that cannot tell helpful from useless (about 6 of 12) still fails; a complexity judge
    # that rates every problem alike ties (fails) every pair
    assert helpful >= 10 and harder >= 7, out
    solved_right, solved_n, unsolved_right, unsolved_n = counts(
        r"Solved-check \(\w+\): right on (\d+)/(\d+) solved and (\d+)/(\d+) unsolved", out)
    assert solved_n == unsolved_n == 13
    # the bound: at least 90% of each class (12 of 13); a judge that says "solved" to
    # everything gets 0 of 13 unsolved right, one that never does gets 0 of 13 solved
    assert solved_right >= 12 and unsolved_right >= 12, out
    fix_right, fix_n, other_right, other_n, said_fix, _, said_persists, _ = counts(
        r"outcome right on (\d+)/(\d+) fixes and (\d+)/(\d+) non-fixes; its reply reports success on "
        r"(\d+)/(\d+) fixes and persists on (\d+)/(\d+) non-fixes", out)
    assert fix_n == other_n == 11
    # the simulated user's decision: 11/11 and 9/11 measured (docs/selfscore.md; the reinstall
    # of vim and a generic list for the flash thread pass at the threshold); a user that always
    # says "it works" (or never does) gets 0 of 11 in one class
    assert fix_right >= 8 and other_right >= 8, out
    # its reply reports success exactly when the case is a fix (the checks regenerate a reply
    # that contradicts the decision), so it is bounded by the decision's accuracy
    assert said_fix + said_persists >= 15, out  # measured 20 of 22 (p8), 19 of 22 (p9)
    # the simulated-user personas (docs/selfscore.md, "Personas"): one scenario each, played turn
    # by turn; the cooperative one behaves only when no deviation appears, so a user that
    # deviates everywhere fails it and one that never deviates fails the other four
    behaved, personas, _, _, broken, replies = counts(
        r"Personas \([^)]*\): (\d+)/(\d+) behaved \(.*\); (\d+)/(\d+) kept the grounding rules "
        r"\((\d+)/(\d+) replies broke one\)", out)
    assert personas == 5 and replies >= 5, out
    assert "persona cooperative (persona-cooperative): behaved" in out, out
    # measured 5/5 behaved and 0/9 replies broke a rule in three runs (p12, 2026-12-05); the
    # user samples at temperature 0.7, so one persona may miss its act in a run
    assert behaved >= 4 and broken <= 1, out
    agent_turns, agent_n, user_turns, user_n, first_right, first_n = counts(
        r"Helpfulness in conversations: helpful version scored higher for (\d+)/(\d+) agent replies later "
        r"in a conversation; (\d+)/(\d+) user replies; (\d+)/(\d+) first questions", out)
    assert (agent_n, user_n, first_n) == (6, 6, 3)
    # a judge that gives every message one score fails every pair; with the rubric bounds (p10) the
    # 1.5B was right on all 15 (docs/selfscore.md), under p9 without them on 6, 3 and 1
    assert agent_turns >= 5 and user_turns >= 5 and first_right >= 2, out
    # the same message judged 5 times at once: p10's largest spread was 1 in one run and 2 in
    # another (docs/selfscore.md), the layout tried for p11 flipped one reply between 8 and 1 (7)
    # and passed every pair set above
    (largest,) = counts(r"Judge stability: 4 messages judged 5 times each at once, .*; largest (\d+)\.", out)
    assert largest <= 3, out
    # agreement with human labels on the 12 shortest conversations of the fresh held-out part
    # (heldout.jsonl, 6 solved, 6 not, the askers' own verdicts): the evidence check was right on
    # 11/14 and 13/14 of the whole part (docs/selfscore.md);
    # a judge that says "solved" to everything (the paper's verdict on the 1.5B) gets 0 of 6 not solved
    agreed, agreed_n, refused, refused_n = counts(
        r"agreement with human labels \(12 held-out conversations\): solved (\d+)/(\d+) solved, (\d+)/(\d+) not solved", out)
    assert agreed_n == refused_n == 6 and agreed >= 2 and refused >= 2 and agreed + refused >= 7, out


def test_demo_as_the_readme_runs_it(tmp_path):
    store = tmp_path / "demo.sqlite"
    proc = subprocess.run([DESKBENCH, "demo", "--store", str(store), "--quiet"],
                          capture_output=True, text=True, timeout=2700)  # 21 min here with 3 tasks, 2 now
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "demo-output.txt").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for expected in ("Solved-check (evidence): right on", "Simulated user (", "## Conversations",
                     "## Method profile", "Profile **embedded**",
                     "turns per conversation: mean", "solved: ", "stop reasons: ",
                     "simulated user: ", "violation rate", "problem statement from: solution"):
        assert expected in out, expected
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["dataset"] == "ubuntu_irc_troubleshooting" and run["status"] == "completed"
    interactions = reader.interactions(run["id"])
    assert len(interactions) == 2 and all(i["status"] == "completed" for i in interactions)
    assert all(i["problem_source"] == "solution" for i in interactions)
    # a real conversation: the evidence check may solve an agent's right first answer, so not
    # every conversation needs a second turn, but the simulated user answered in at least one,
    # and every later user message is the simulator's
    later = [t for i in interactions for t in reader.turns(i["id"])[1:]]
    assert later and all(t["user_message"].strip() and '"simulator"' in (t["extra_json"] or "") for t in later)
