"""People and the simulated user side by side (``deskbench compare RUN STUDY``), on a hand-built
store: a simulator batch and a live study's run over the same task set, paired by task."""
import json

import pytest

from harness.cli.main import main
from harness.selfscore.scoring import score_interaction
from harness.study.compare import compare
from harness.study.people_vs_simulator import (MIN_SHARED_TASKS, PEOPLE, SIMULATOR, pairs, side_by_side,
                                               user_side)
from harness.study.user_acts import ACTS, act_shares, user_act
from store import StoreReader, StoreWriter
from store.live import LiveStore

SHA = "a" * 64
SIM, STUDY = "plain_batch", "study1"
LIVE = f"live-{STUDY}-user-plain"


def add_run(writer, run_id, kind, *, user="llm", sha=SHA, dataset="tasks", source=None, agent="plain"):
    """A run row as the batch and the live app store it (only what the comparison reads)."""
    config = {"run": {"user": user, "agent": agent, "max_turns": 6}, "scoring": {"formula": "paper"}}
    writer.create_run({"id": run_id, "name": run_id, "kind": kind, "config_json": json.dumps(config),
                       "models_json": json.dumps({"judge": "judge-1", "agent": "agent-1"}),
                       "dataset": dataset, "dataset_sha256": sha, "source_run": source})


def add_conversation(writer, run_id, task, users, *, user_h=5, agent_h=8, solved=False, n=0,
                     dataset="tasks"):
    """One scored conversation of ``run_id`` on ``task``: a turn per user message, the last turn
    solved when ``solved``; its figures computed as the scorer does."""
    iid = f"{run_id}:{task}:{n}"
    writer.upsert_problems([{"id": f"{dataset}:{task}", "dataset": dataset, "task_id": task,
                             "question": f"Question {task}?"}])
    writer.start_interaction({"id": iid, "run_id": run_id, "problem_id": f"{dataset}:{task}",
                              "position": n, "trial": 1})
    turns = [{"interaction_id": iid, "turn_index": k + 1, "user_message": text, "agent_message": "Try this.",
              "user_helpfulness": user_h, "agent_helpfulness": agent_h,
              "solved": int(solved and k == len(users) - 1)} for k, text in enumerate(users)]
    for t in turns:
        writer.save_turn(t, [], [])
    stop = "solved" if solved else "max_turns"
    figures = score_interaction({"critical_thinking": 6, "error_handling": 4, "topic_knowledge": 5}, turns, stop)
    figures.update(interaction_id=iid, task_id=task, trial=1, persona=None)
    writer.finish_interaction(iid, "completed", stop, len(turns), run_id=run_id,
                              scores=[{"interaction_id": iid, "scorer": "selfscore", "scorer_version": "t",
                                       "formula": "paper", "figures_json": json.dumps(figures)}])


PEOPLE_SAYS = ["my wifi drops", "Still drops."]                      # 2 turns, 3 + 2 words
SIM_SAYS = ["My laptop wifi drops every few minutes on Ubuntu.", "It is an Intel AX200 card.",
            "Which driver do I have?", "Now it works, thanks!"]      # 4 turns, 9 then 6, 5, 4 words


@pytest.fixture
def store(tmp_path):
    """Six tasks played by both (people twice on t1), t7 only by people, t8 only by the simulator;
    people: 2 turns, user helpfulness 7, agent 6, never solved; simulator: 4 turns, 5, 8, solved."""
    path = tmp_path / "s.sqlite"
    writer = StoreWriter(path)
    add_run(writer, SIM, "selfscore")
    add_run(writer, LIVE, "live", sha="")  # the study's sha256 stands in (as in the app's tests)
    LiveStore(writer, StoreReader(path)).create_study(STUDY, "Study one", {
        "dataset": "data/tasks.jsonl", "task_limit": 7, "dataset_sha256": SHA, "dataset_name": "tasks"})
    for i, task in enumerate([f"t{k}" for k in range(1, 8)]):
        add_conversation(writer, LIVE, task, PEOPLE_SAYS, user_h=7, agent_h=6, n=i)
    add_conversation(writer, LIVE, "t1", PEOPLE_SAYS, user_h=7, agent_h=6, n=10)
    for i, task in enumerate([f"t{k}" for k in (1, 2, 3, 4, 5, 6, 8)]):
        add_conversation(writer, SIM, task, SIM_SAYS, user_h=5, agent_h=8, solved=True, n=i)
    writer.close()
    return path


def figures_of(result):
    return {r["figure"]: r for r in result["figures"]}


def test_the_act_rules_read_each_kind_of_message():
    assert user_act("Now it works, thanks!") == "reports fixed"
    assert user_act("Still drops.") == user_act("I'll try that tomorrow") == "still broken"
    assert user_act("Which driver do I have?") == user_act("can I do it from the GUI") == "asks a question"
    assert user_act("Thanks, bye") == "thanks / closes"
    assert user_act("It is an Intel AX200 card.") == user_act("error 42") == "gives a fact"
    assert user_act("ok") == user_act("") == "other"
    assert act_shares([]) is None
    shares = act_shares(["Still drops.", "ok"])
    assert list(shares) == list(ACTS) and shares["still broken"] == shares["other"] == 0.5


def test_who_played_the_user_comes_from_the_run(store):
    reader = StoreReader(store)
    writer = StoreWriter(store)
    add_run(writer, "scripted", "selfscore", user="scripted")
    add_run(writer, "rejudged-live", "rejudge", source=LIVE)
    add_run(writer, "human-agent", "live_human_agent")
    writer.close()
    sides = {ref: user_side(reader, reader.run(ref)) for ref in (SIM, LIVE, "scripted", "rejudged-live", "human-agent")}
    assert sides == {SIM: SIMULATOR, LIVE: PEOPLE, "scripted": None, "rejudged-live": PEOPLE,
                     "human-agent": SIMULATOR}
    runs = [reader.run(ref) for ref in (SIM, LIVE, "scripted")]
    assert [(p["id"], s["id"]) for p, s in pairs(reader, runs)] == [(LIVE, SIM)]
    assert pairs(reader, [reader.run(SIM), reader.run("human-agent")]) == []  # both simulated


def test_conversations_are_paired_by_task_and_each_figure_is_known(store):
    reader = StoreReader(store)
    result = side_by_side(reader, reader.run(LIVE), reader.run(SIM))
    assert result["mismatch"] is None and result["sentence"] is None
    assert result["shared_tasks"] == [f"t{k}" for k in range(1, 7)]
    assert result["only_people"] == ["t7"] and result["only_simulator"] == ["t8"]
    assert result["people"]["conversations"] == 8 and result["simulator"]["conversations"] == 7
    assert result["shared_conversations"] == {"people": 7, "simulator": 6}
    f = figures_of(result)
    expected = {"turns": (2, 4, -2), "solved": (0, 1, -1), "first_words": (3, 9, -6),
                "later_words": (2, 5, -3), "user_helpfulness": (7, 5, 2),
                "agent_helpfulness": (6, 8, -2), "quality": (6 / 7, 8 / 5, 6 / 7 - 8 / 5),
                "act:still broken": (1, 0, 1), "act:reports fixed": (0, 1 / 3, -1 / 3),
                "act:asks a question": (0, 1 / 3, -1 / 3), "act:gives a fact": (0, 1 / 3, -1 / 3),
                "act:other": (0, 0, 0)}
    for key, (people, simulator, difference) in expected.items():
        row = f[key]
        assert row["people_shared"] == pytest.approx(people) and row["simulator_shared"] == pytest.approx(simulator)
        assert row["difference"] == pytest.approx(difference) and row["tasks"] == 6
        # every task differs by the same amount: the interval is that one value
        assert row["low"] == pytest.approx(difference) and row["high"] == pytest.approx(difference)
    assert f["final_score"]["difference"] == pytest.approx((6 / 7 - 8 / 5) / 2 * 10)
    notes = " ".join(result["notes"])
    assert "word for word" in notes and "divided by the user's" in notes
    assert "people: max_turns 8; simulator: solved 7" in notes


def test_a_task_played_twice_by_people_counts_once_in_the_pairing(store):
    writer = StoreWriter(store)
    add_conversation(writer, LIVE, "t2", ["hi", "a", "b", "c", "d", "e"], user_h=7, agent_h=6, n=20)
    writer.close()
    reader = StoreReader(store)
    turns = figures_of(side_by_side(reader, reader.run(LIVE), reader.run(SIM)))["turns"]
    # t2: people (2 + 6) / 2 = 4 turns, difference 0; the other five tasks -2
    assert turns["difference"] == pytest.approx(-10 / 6)
    assert turns["people"] == pytest.approx((8 * 2 + 6) / 9)  # all conversations, unpaired
    assert -2 <= turns["low"] < turns["difference"] < turns["high"] <= 0


def test_too_few_shared_tasks_get_a_sentence_and_no_interval(tmp_path):
    path = tmp_path / "s.sqlite"
    writer = StoreWriter(path)
    add_run(writer, SIM, "selfscore")
    add_run(writer, LIVE, "live")
    for task in ("t1", "t2", "t3"):
        add_conversation(writer, LIVE, task, PEOPLE_SAYS)
        add_conversation(writer, SIM, task, SIM_SAYS)
    writer.close()
    reader = StoreReader(path)
    result = side_by_side(reader, reader.run(LIVE), reader.run(SIM))
    assert "Only 3 tasks were played by both" in result["sentence"] and str(MIN_SHARED_TASKS) in result["sentence"]
    turns = figures_of(result)["turns"]
    assert turns["difference"] == -2 and turns["low"] is None and turns["high"] is None


def test_different_task_sets_get_a_message_naming_both(store):
    writer = StoreWriter(store)
    add_run(writer, "other_batch", "selfscore", sha="b" * 64, dataset="su.test")
    add_conversation(writer, "other_batch", "t1", SIM_SAYS, dataset="su.test")
    writer.close()
    reader = StoreReader(store)
    result = side_by_side(reader, reader.run(LIVE), reader.run("other_batch"))
    message = result["mismatch"]
    assert "'tasks' (sha256 aaaaaaaaaaaa)" in message and "'su.test' (sha256 bbbbbbbbbbbb)" in message
    assert "deskbench run --dataset data/tasks.jsonl --limit 7" in message
    assert "figures" not in result


def test_compare_prints_the_side_by_side_table_after_the_usual_comparison(store, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", SIM, STUDY, "--store", str(store), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.index("One-way ANOVA") < text.index("People and the simulator side by side")
    assert f"{LIVE} (people) vs {SIM} (simulator)" in text
    assert "Tasks: 6 played by both, 1 only by people (t7), 1 only by the simulator (t8)." in text
    line = next(ln for ln in text.splitlines() if ln.startswith("turns per conversation"))
    assert line.split() == ["turns", "per", "conversation", "2.00", "4.00", "2.00", "4.00", "-2.00",
                            "[-2.00,", "-2.00]", "6"]
    page = (out / "report.html").read_text()
    assert "People and the simulator side by side" in page and "act: still broken" in page
    saved = json.loads((out / "people_vs_simulator.json").read_text())
    assert saved[0]["people"]["run"] == LIVE and len(saved[0]["figures"]) == 14


def test_compare_of_two_simulated_runs_is_unchanged(store, tmp_path):
    writer = StoreWriter(store)
    add_run(writer, "second_batch", "selfscore")
    for task in ("t1", "t2"):
        add_conversation(writer, "second_batch", task, SIM_SAYS)
    writer.close()
    path, summary = compare(StoreReader(store), [SIM, "second_batch"], tmp_path / "cmp")
    assert "side by side" not in summary and "side by side" not in path.read_text().replace(
        "Distributions side by side", "")
    assert not (tmp_path / "cmp" / "people_vs_simulator.json").exists()


def test_a_different_task_set_is_said_in_compare(store, tmp_path):
    writer = StoreWriter(store)
    add_run(writer, "other_batch", "selfscore", sha="b" * 64, dataset="su.test")
    add_conversation(writer, "other_batch", "t1", SIM_SAYS, dataset="su.test")
    writer.close()
    _, summary = compare(StoreReader(store), ["other_batch", LIVE], tmp_path / "cmp")
    assert "Different task sets: people played 'tasks'" in summary
    # the noise floor pairs tasks by id: over two task sets it pairs nothing and says why
    assert "Noise floor: not computed: the runs played different task sets" in summary
    assert "paired task" not in summary


def test_a_real_study_and_a_fake_batch_over_its_task_set_are_set_side_by_side(tmp_path, tasks_file):
    """The live app's own study and sessions (fake models) and a simulator batch on the same file:
    the study's run records no sha256 (sessions opened as tests/test_study_status.py opens them),
    the study's stands in; all three tasks pair, too few for an interval."""
    import asyncio

    from harness.compose import Runtime, run_selfscore
    from harness.live.sessions import LiveSessions
    from harness.live.studies import Studies, StudySpec
    from harness.tasks.datasets import load_dataset
    from tests.fakes import default_responder, fake_factory
    from harness.config import load_config

    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "app": {"max_turns": 4, "messages_per_minute": 100},
                                 "run": {"limit": 3, "max_turns": 4, "solved_check": "confirmation"}})
    batch, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder(solve_at=3)))
    runtime = Runtime(cfg, fake_factory(default_responder(solve_at=None)))
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store)
    live = LiveSessions(runtime, writer, reader)
    studies = Studies(live.store)
    sid = studies.create(StudySpec(name="Side", dataset=str(tasks_file), task_limit=3, max_sessions=3))
    pid = studies.join(sid, "alice-01", True)

    async def three():
        for _ in range(3):
            task, agent, dataset = studies.next_assignment(sid, pid)
            session = live.open(mode="user", agent=agent, study_id=sid, participant_id=pid, task=task,
                                dataset=dataset.name)
            await live.begin(session)
            async for _ in live.send(session, "my wifi drops", participant_id=pid):
                pass
            await live.end(session, participant_id=pid)
    asyncio.run(three())
    try:
        path, summary = compare(reader, [batch, sid], tmp_path / "cmp")
    finally:
        writer.close()
        runtime.close()
    runs = {r["id"]: r["name"] for r in reader.runs()}
    assert f"{runs[f'live-{sid}-user-plain']} (people) vs {runs[batch]} (simulator)" in summary
    assert "Tasks: 3 played by both, 0 only by people, 0 only by the simulator." in summary
    assert "Only 3 tasks were played by both" in summary
    line = next(ln for ln in summary.splitlines() if ln.startswith("turns per conversation"))
    assert line.split()[3:] == ["1.00", "3.00", "1.00", "3.00", "-2.00", "-", "3"]
    # one message per person: no later message to read an act or a length from on their side
    line = next(ln for ln in summary.splitlines() if ln.startswith("later messages (words)"))
    assert line.split()[3:] == ["n/a", "9.00", "n/a", "n/a", "n/a", "-", "0"]
    assert "people: user_ended 3; simulator: solved 3" in summary and "one interval in twenty" not in summary
    assert "People and the simulator side by side" in path.read_text()
    # the README's line, as a user types it: `deskbench compare RUN STUDY`, the study by its id
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "harness.cli.main", "compare", batch, sid, "--store", cfg.store,
                           "--out", str(tmp_path / "cli")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "People and the simulator side by side" in proc.stdout and "Tasks: 3 played by both" in proc.stdout
    assert (tmp_path / "cli" / "people_vs_simulator.json").exists()
