"""People and the simulated user side by side, paired by task: the part of ``deskbench compare``
that tells whether the simulator talks like the people it stands in for.

One run's user is people (a live study's sessions in mode ``user``, run kind ``live``, or a
re-judged copy of one) and the other's is the LLM-simulated user (``run.user = "llm"``: a batch,
or a study in mode ``agent``, where people answer the simulator). When both ran over the same
task set (the same ``dataset_sha256``; a study's runs carry the study's), conversations are
grouped by task id, and for each figure:

- each side's mean over all its scored conversations;
- over the tasks both sides played (and where the figure is defined on both): each side's
  mean of per-task means, and the difference people - simulator, i.e. the mean over shared
  tasks of (people's mean on the task - the simulator's mean on the task);
- a 95% percentile interval of that difference, tasks resampled as clusters
  (:func:`harness.study.bootstrap.cluster_mean_bootstrap`, 2,000 resamples): several people on
  one task, or several trials of the simulator, count once per task.

With fewer than :data:`MIN_SHARED_TASKS` shared tasks no interval is given and a sentence
says so. The figures: turns per conversation, solved rate, the first message's length and the
later messages' mean length in words, the judge's user helpfulness, the act mix of the later
user messages (:mod:`harness.study.user_acts`), and the agent's scores against each user type
(agent helpfulness, quality, final score). Notes say what the comparison cannot separate.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from harness.study.bootstrap import RESAMPLES, cluster_mean_bootstrap
from harness.study.user_acts import ACTS, act_shares, words
from store import StoreError, StoreReader
from store.live import LiveStore

PEOPLE, SIMULATOR = "people", "simulator"
#: fewer tasks played by both sides than this: no interval, a sentence instead
MIN_SHARED_TASKS = 5
#: (key, label) of every figure, in the report's order
FIGURES = (
    ("turns", "turns per conversation"),
    ("solved", "solved rate"),
    ("first_words", "first message (words)"),
    ("later_words", "later messages (words)"),
    ("user_helpfulness", "user helpfulness"),
    *((f"act:{act}", f"act: {act}") for act in ACTS),
    ("agent_helpfulness", "agent helpfulness"),
    ("quality", "quality"),
    ("final_score", "final score"),
)


def user_side(reader: StoreReader, run: Mapping[str, Any], depth: int = 0) -> str | None:
    """Who played the user in ``run``: :data:`PEOPLE` (a live study or free session in mode
    ``user``), :data:`SIMULATOR` (the LLM-simulated user), or None (a scripted user, a
    NoisyToolBench run). A re-judged run is its source's."""
    kind = run.get("kind") or ""
    if kind == "rejudge" and run.get("source_run") and depth < 10:
        try:
            return user_side(reader, reader.run(run["source_run"]), depth + 1)
        except StoreError:
            return None
    if "noisytoolbench" in kind:
        return None
    if kind == "live":
        return PEOPLE
    user = ((run.get("config") or {}).get("run") or {}).get("user", "llm")
    return SIMULATOR if user == "llm" else None


def study_runs(reader: StoreReader, ref: str) -> list[str] | None:
    """The ids of a study's runs (``live-<study>-<mode>-<agent>``), or None when ``ref`` names no
    study."""
    if LiveStore(None, reader).study(ref) is None:  # type: ignore[arg-type]  (reads only)
        return None
    return [r["id"] for r in reader.runs() if r["id"].startswith(f"live-{ref}-")]


def _study_of(reader: StoreReader, run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The study whose sessions ``run`` (or its re-judged source) collects, or None."""
    run_id = run.get("source_run") if run.get("kind") == "rejudge" else run["id"]
    for study in LiveStore(None, reader).studies():  # type: ignore[arg-type]
        if (run_id or "").startswith(f"live-{study['id']}-"):
            return study
    return None


def task_set(reader: StoreReader, run: Mapping[str, Any]) -> dict[str, Any]:
    """The task set a run played: ``name``, ``sha256`` (the study's when the run did not record
    it) and, for a study's run, ``study`` (its id, task pool and task limit)."""
    study = _study_of(reader, run)
    cfg = (study or {}).get("config") or {}
    out = {"name": run.get("dataset") or "", "sha256": run.get("dataset_sha256") or cfg.get("dataset_sha256") or ""}
    if study:
        out["study"] = {"id": study["id"], "dataset": cfg.get("dataset"), "task_limit": cfg.get("task_limit")}
    return out


def _describe(ts: Mapping[str, Any]) -> str:
    sha = f" (sha256 {ts['sha256'][:12]})" if ts.get("sha256") else " (sha256 not recorded)"
    return f"'{ts['name']}'{sha}"


def same_task_set(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two :func:`task_set` s are one set: the same sha256, or by name where one of them
    did not record its sha256."""
    return a["sha256"] == b["sha256"] if a["sha256"] and b["sha256"] else a["name"] == b["name"]


def mismatch(people: Mapping[str, Any], simulator: Mapping[str, Any]) -> str | None:
    """Why the two task sets cannot be paired task by task (naming both and how to make them
    match), or None when they are the same set (the same sha256; by name where one side did not
    record its sha256)."""
    if people["name"] == "live":
        return ("People typed their own problems (free sessions of the live app), so no task can be "
                "paired with the simulator's. Run a study over a task set (Organiser tab) and the "
                "simulator over the same set.")
    if same_task_set(people, simulator):
        return None
    study = people.get("study") or {}
    pool = study.get("dataset") or people["name"]
    limit = f" --limit {study['task_limit']}" if study.get("task_limit") else ""
    return (f"Different task sets: people played {_describe(people)}, the simulator "
            f"{_describe(simulator)}; no task can be paired. Run the simulator on the people's task "
            f"set (`deskbench run --dataset {pool}{limit}`, the same agent) and compare that run, or "
            "compare a study whose task pool is the simulator's file.")


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def conversations(reader: StoreReader, run_id: str) -> tuple[list[dict[str, Any]], int]:
    """A run's scored conversations as rows of every figure (None where undefined: no later
    message, a failed judgment), and the number of its interactions without a score (still
    running, abandoned, failed)."""
    figures = {s["interaction_id"]: s["figures"] for s in reader.scores(run_id)}
    turns = reader.turns_for_run(run_id)
    rows, unscored = [], 0
    for i in reader.interactions(run_id):
        f = figures.get(i["id"])
        if f is None:
            unscored += 1
            continue
        users = [t["user_message"] for t in turns.get(i["id"], [])]
        shares = act_shares(users[1:])
        rows.append({
            "interaction_id": i["id"], "task_id": i["task_id"], "stop_reason": i.get("stop_reason"),
            "persona": i.get("persona"), "turns": f.get("turns"), "solved": float(bool(f.get("solved"))),
            "first_words": words(users[0]) if users else None,
            "later_words": _mean(words(m) for m in users[1:]),
            "user_helpfulness": f.get("avg_user_helpfulness"),
            "agent_helpfulness": f.get("avg_agent_helpfulness"),
            "quality": f.get("quality"), "final_score": f.get("final_score"),
            **{f"act:{a}": (shares[a] if shares else None) for a in ACTS}})
    return rows, unscored


def _task_means(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, float]:
    by_task: dict[str, list[float]] = {}
    for r in rows:
        if r[key] is not None:
            by_task.setdefault(r["task_id"], []).append(float(r[key]))
    return {t: sum(v) / len(v) for t, v in by_task.items()}


def figure_rows(people: Sequence[Mapping[str, Any]], simulator: Sequence[Mapping[str, Any]],
                seed: int = 0) -> list[dict[str, Any]]:
    """One row per figure of :data:`FIGURES`: each side's mean over all its conversations, over
    the shared tasks (task means), the paired difference people - simulator over the tasks
    where both are defined (``tasks``), and its interval (``low``, ``high``; None under
    :data:`MIN_SHARED_TASKS` tasks)."""
    shared = {r["task_id"] for r in people} & {r["task_id"] for r in simulator}
    out = []
    for key, label in FIGURES:
        p_task, s_task = _task_means(people, key), _task_means(simulator, key)
        paired = sorted(t for t in shared if t in p_task and t in s_task)
        diffs = [p_task[t] - s_task[t] for t in paired]
        ci = cluster_mean_bootstrap(diffs, seed=seed) if len(paired) >= MIN_SHARED_TASKS else None
        out.append({"figure": key, "label": label,
                    "people": _mean(r[key] for r in people), "simulator": _mean(r[key] for r in simulator),
                    "people_shared": _mean(p_task[t] for t in paired),
                    "simulator_shared": _mean(s_task[t] for t in paired),
                    "difference": _mean(diffs), "tasks": len(paired),
                    "low": ci.low if ci else None, "high": ci.high if ci else None})
    return out


def overlap_sentence(shared: int) -> str | None:
    """The plain sentence for a small overlap (None from :data:`MIN_SHARED_TASKS` tasks on)."""
    if shared == 0:
        return ("No task was played by both people and the simulator: nothing can be paired, and "
                "each side's figures below are over different tasks.")
    if shared < MIN_SHARED_TASKS:
        return (f"Only {shared} task{'s were' if shared > 1 else ' was'} played by both people and the "
                f"simulator: too few to say how they differ (an interval needs at least "
                f"{MIN_SHARED_TASKS}); the paired differences are shown without one.")
    return None


def _side(reader: StoreReader, run: Mapping[str, Any], label: str, rows: Sequence[Mapping[str, Any]],
          unscored: int) -> dict[str, Any]:
    cfg = run.get("config") or {}
    return {"run": run["id"], "label": label, "task_set": task_set(reader, run),
            "conversations": len(rows), "unscored": unscored, "tasks": len({r["task_id"] for r in rows}),
            "agent": f"{(cfg.get('run') or {}).get('agent')} ({(run.get('models') or {}).get('agent')})",
            "judge": (run.get("models") or {}).get("judge"),
            "profile": (run.get("profile") or {}).get("profile"),
            "formula": (cfg.get("scoring") or {}).get("formula", "paper"),
            "max_turns": (cfg.get("run") or {}).get("max_turns"),
            "stop_reasons": dict(Counter(r["stop_reason"] or "unknown" for r in rows).most_common()),
            "personas": sorted({r["persona"] for r in rows if r["persona"]})}


def notes(people: Mapping[str, Any], simulator: Mapping[str, Any], shared: int) -> list[str]:
    """What the comparison cannot separate or leaves out, for these two sides and ``shared``
    tasks played by both."""
    out = ["Turn 1: the simulator's first message is the task's question word for word; people "
           "wrote their own from the scenario. The first message's length compares the two; the "
           "act mix reads only the later messages (the replies to the agent)."]
    if "paper" in (people["formula"], simulator["formula"]):
        out.append("Quality (paper formula) is the agent's helpfulness divided by the user's: a "
                   "difference in user helpfulness moves quality and the final score with the same agent.")
    for key, what in (("agent", "agents"), ("judge", "judge models"), ("profile", "method profiles"),
                      ("max_turns", "turn limits")):
        if people[key] != simulator[key]:
            out.append(f"The {what} differ ({people[key]} for people, {simulator[key]} for the "
                       "simulator): every difference mixes the user type with that.")
    ends = "; ".join(f"{name}: " + ", ".join(f"{k} {v}" for k, v in side["stop_reasons"].items())
                     for name, side in ((PEOPLE, people), (SIMULATOR, simulator)))
    out.append(f"How conversations ended ({ends}). People may end a session themselves; the "
               "simulator stops when the solved-check fires or at the turn limit.")
    if shared >= MIN_SHARED_TASKS:
        out.append(f"{len(FIGURES)} figures, each with its own 95% interval: when nothing differs, about one "
                   "interval in twenty still excludes 0.")
    if simulator["personas"]:
        out.append("The simulator played persona(s): " + ", ".join(simulator["personas"]) + ".")
    left = [f"{side['unscored']} of {side['label']}" for side in (people, simulator) if side["unscored"]]
    if left:
        out.append("Conversations without a score are left out (still running, abandoned or failed): "
                   + ", ".join(left) + ".")
    return out


def side_by_side(reader: StoreReader, people_run: Mapping[str, Any], simulator_run: Mapping[str, Any],
                 labels: Mapping[str, str] | None = None, seed: int = 0) -> dict[str, Any]:
    """People's and the simulator's conversations compared task by task (a JSON-ready dict):
    ``people`` and ``simulator`` (run, task set, counts, agent, judge, stop reasons),
    ``mismatch`` (the task sets differ: the message, and nothing else is computed),
    ``shared_tasks``, ``only_people``, ``only_simulator``, ``figures`` (:func:`figure_rows`),
    ``sentence`` (:func:`overlap_sentence`), ``notes`` and ``resamples``."""
    labels = labels or {}
    p_rows, p_unscored = conversations(reader, people_run["id"])
    s_rows, s_unscored = conversations(reader, simulator_run["id"])
    people = _side(reader, people_run, labels.get(people_run["id"], people_run["id"]), p_rows, p_unscored)
    simulator = _side(reader, simulator_run, labels.get(simulator_run["id"], simulator_run["id"]),
                      s_rows, s_unscored)
    out: dict[str, Any] = {"people": people, "simulator": simulator,
                           "mismatch": mismatch(people["task_set"], simulator["task_set"]),
                           "min_shared_tasks": MIN_SHARED_TASKS, "resamples": RESAMPLES}
    if out["mismatch"]:
        return out
    p_tasks, s_tasks = {r["task_id"] for r in p_rows}, {r["task_id"] for r in s_rows}
    shared = sorted(p_tasks & s_tasks)
    out.update(shared_tasks=shared, only_people=sorted(p_tasks - s_tasks),
               only_simulator=sorted(s_tasks - p_tasks), figures=figure_rows(p_rows, s_rows, seed),
               sentence=overlap_sentence(len(shared)), notes=notes(people, simulator, len(shared)),
               shared_conversations={PEOPLE: sum(r["task_id"] in s_tasks for r in p_rows),
                                     SIMULATOR: sum(r["task_id"] in p_tasks for r in s_rows)})
    return out


def pairs(reader: StoreReader, runs: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping, Mapping]]:
    """(people's run, the simulator's run) for each people run among ``runs`` with each simulator
    run of the same agent (with every simulator run when none has its agent). Empty when the
    runs are all people's or all the simulator's."""
    sides = {r["id"]: user_side(reader, r) for r in runs}
    people = [r for r in runs if sides[r["id"]] == PEOPLE]
    simulators = [r for r in runs if sides[r["id"]] == SIMULATOR]

    def agent(run):
        return ((run.get("config") or {}).get("run") or {}).get("agent")
    out = []
    for p in people:
        same = [s for s in simulators if agent(s) == agent(p)]
        out += [(p, s) for s in (same or simulators)]
    return out
