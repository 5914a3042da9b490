"""Checks labelled.jsonl, the human-labelled conversations for ``deskbench agreement``, and prints its counts.

It generates nothing and never labels: every label in the file was decided by hand (SOURCE.md). It
checks that

- every row is a valid transcript for ``harness.selfscore.transcripts`` (read with its own reader) and
  carries no judged field (``user_helpfulness``, ``agent_helpfulness``, ``solved`` on a turn), so a
  judge still scores every turn;
- ``split`` is tune or checked (the first held-out part, renamed after it was looked at; the fresh
  held-out part is heldout.jsonl, built by build_heldout.py), ``kind`` one of the seven families, ``source`` names dataset, id and
  licence, ``problem`` is set, and each family has its fixed solved label and shape (an
  irc_thanks_no_fix asker's last message thanks, an irc_fix_no_thanks asker never does, turn_help and
  user_help have several turns);
- labels are in range (``solved`` a bool; per turn ``agent_helpfulness`` / ``user_helpfulness`` 0, 1
  or 2, an agent label only on a non-empty agent message) and every label object has a ``note`` and
  a ``labelled_by`` (``maintainers`` or ``people``; per turn ``maintainers``: every grade was written here);
- the real text is the sources' text: a Stack Exchange question and its reply are the LFRQA question
  and reference answer (its own for se_accepted, ``source.reply_id``'s for se_neighbour, a written one
  marked ``written`` for se_wrong); a verbatim #ubuntu row's turns are its thread rebuilt with the
  brief's merge rule; a written-after-question row starts with the thread's first asker message;
- checked rows (the first held-out part) share no thread id with troubleshooting.jsonl or any file of harness/data/sanity/,
  and no question with them (same normalised text, or content-word overlap >= OVERLAP_LIMIT with a
  question or first user message there; a #ubuntu thread whose first message is that close to a sanity
  question counts as a sanity thread);

then prints the counts per family, split and solved label, the solved share per split and the
turn-label values. Exit status 1 if anything is wrong. Run from the repository root:
``.venv/bin/python harness/data/agreement/build_labelled.py``.
"""
from __future__ import annotations

import glob
import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LABELLED = HERE / "labelled.jsonl"
LFRQA = HERE.parent / "lfrqa_technology" / "tasks.jsonl.gz"
IRC = HERE.parent / "ubuntu_irc"
THREADS = IRC / "ubuntu_irc_test_threads.jsonl"
TROUBLESHOOTING = IRC / "troubleshooting.jsonl"
SANITY = HERE.parent / "sanity"

SPLITS = ("tune", "checked")
SOURCES = ("maintainers", "people")
KINDS = ("se_accepted", "se_neighbour", "se_wrong", "irc_thanks_no_fix", "irc_fix_no_thanks",
         "turn_help", "user_help")
FIXED_SOLVED = {"se_accepted": True, "se_neighbour": False, "se_wrong": False,
                "irc_thanks_no_fix": False, "irc_fix_no_thanks": True}
ORIGINS = ("verbatim", "written_reply", "written_after_question")
TURN_LABELS = ("agent_helpfulness", "user_helpfulness")
JUDGED = ("user_helpfulness", "agent_helpfulness", "solved")
OVERLAP_LIMIT = 0.6
THREAD_ID = re.compile(r"\d{4}-\d{2}-\d{2}_\d{2}#\d+")
THANKS = re.compile(r"thank|thanx|\bthx\b|\bty\b|\btyvm\b", re.I)
STOP = set("""a an and are as at be but by can could do does doesn't dont don't for from get gets got
has have how i i'm im if in is it its it's me my no not of on or so some the their them then there this
to up was what when where which who why will with would you your yes ok hi hello hey anyone any help
please thanks just now also all after before into out only than that these those one still been am""".split())


def words(text: str) -> set[str]:
    """Content words of a text: lower case, stop words and one-letter tokens dropped."""
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.+_-]*[a-z0-9]|[a-z0-9]", text.lower())
            if w not in STOP and len(w) > 1}


def overlap(a: str, b: str) -> float:
    """Shared content words over the smaller text's content words (0 when either has none)."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else 0.0


def normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def thread_turns(thread: dict) -> list[dict]:
    """The brief's turn rule: the asker is the user, everyone else the agent; consecutive messages of
    one side are joined with a newline; a turn is a user message then an agent message ('' at the end)."""
    asker = thread["messages"][0]["speaker"]
    blocks: list[tuple[str, list[str]]] = []
    for m in thread["messages"]:
        side = "user" if m["speaker"] == asker else "agent"
        if blocks and blocks[-1][0] == side:
            blocks[-1][1].append(m["text"])
        else:
            blocks.append((side, [m["text"]]))
    turns: list[dict] = []
    for side, texts in blocks:
        if side == "user":
            turns.append({"user": "\n".join(texts), "agent": ""})
        else:
            turns[-1]["agent"] = "\n".join(texts)
    return turns


def held_out_references() -> tuple[set[str], list[tuple[str, str]]]:
    """Thread ids and questions the prompts were tuned on (troubleshooting.jsonl, harness/data/sanity/*).

    Questions: troubleshooting's questions; the sanity sets' questions and first user messages (and the
    two versions of a judged first message) with at least four content words. Thread ids: troubleshooting's,
    every thread id written in a sanity file, and each #ubuntu thread whose first message overlaps a
    sanity question by OVERLAP_LIMIT or more.
    """
    ids: set[str] = set()
    questions: list[tuple[str, str]] = []
    for task in read_jsonl(TROUBLESHOOTING):
        ids.add(task["metadata"]["thread_id"])
        questions.append((f"troubleshooting {task['id']}", task["question"]))
    sanity_questions: list[tuple[str, str]] = []
    for path in sorted(glob.glob(str(SANITY / "*"))):
        text = Path(path).read_text(encoding="utf-8")
        ids.update(THREAD_ID.findall(text))
        if not path.endswith(".jsonl"):
            continue
        for case in read_jsonl(Path(path)):
            texts = [case.get("question")]
            conversation = case.get("conversation") or []
            if conversation and conversation[0].get("role") == "user":
                texts.append(conversation[0]["content"])
            if case.get("first"):
                texts += [case.get("helpful"), case.get("useless")]
            sanity_questions += [(f"sanity {Path(path).name}:{case['id']}", t)
                                 for t in texts if t and len(words(t)) >= 4]
    questions += sanity_questions
    for thread in read_jsonl(THREADS):
        first = thread_turns(thread)[0]["user"]
        if any(overlap(first, q) >= OVERLAP_LIMIT for _, q in sanity_questions):
            ids.add(thread["thread_id"])
    return ids, questions


def check(rows: list[dict]) -> tuple[list[str], list[str]]:
    """(problems, notes): what is wrong with the rows, and turns a family would normally label but do not."""
    problems: list[str] = []
    lfrqa = {r["id"]: r for r in read_jsonl(LFRQA)}
    threads = {t["thread_id"]: t for t in read_jsonl(THREADS)}
    held_ids, held_questions = held_out_references()
    seen_questions: dict[str, str] = {}
    for n, row in enumerate(rows, 1):
        rid = row.get("id", f"line {n}")
        bad = lambda msg: problems.append(f"{rid}: {msg}")  # noqa: E731
        if row.get("split") not in SPLITS:
            bad(f"split {row.get('split')!r} is not tune or checked")
        kind = row.get("kind")
        if kind not in KINDS:
            bad(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        if row.get("origin") not in ORIGINS:
            bad(f"origin {row.get('origin')!r} is not one of {', '.join(ORIGINS)}")
        if not isinstance(row.get("problem"), str) or not row["problem"].strip():
            bad("problem is missing")
        source = row.get("source") or {}
        for key in ("dataset", "id", "licence"):
            if not source.get(key):
                bad(f"source.{key} is missing")
        labels = row.get("labels") or {}
        if not isinstance(labels.get("solved"), bool):
            bad("labels.solved must be true or false")
        if not str(labels.get("note", "")).strip():
            bad("labels.note is missing")
        if labels.get("labelled_by") not in SOURCES:
            bad(f"labels.labelled_by {labels.get('labelled_by')!r} is not one of {', '.join(SOURCES)}")
        if "quality" in labels and (isinstance(labels["quality"], bool)
                                    or not isinstance(labels["quality"], (int, float))):
            bad("labels.quality must be a number")
        if kind in FIXED_SOLVED and labels.get("solved") is not FIXED_SOLVED[kind]:
            bad(f"{kind} must have solved={FIXED_SOLVED[kind]}")
        turns = row.get("turns") or []
        said = [t.get("user", "") for t in turns if t.get("user")]
        if kind == "irc_thanks_no_fix" and not (said and THANKS.search(said[-1])):
            bad("irc_thanks_no_fix: the asker's last message does not thank")
        if kind == "irc_fix_no_thanks" and any(THANKS.search(t.get("user", "")) for t in turns):
            bad("irc_fix_no_thanks: the asker says thanks")
        if kind in ("turn_help", "user_help") and len(turns) < 2:
            bad(f"{kind} needs several turns")
        wanted = "agent_helpfulness" if kind == "turn_help" else "user_helpfulness" if kind == "user_help" else None
        for i, turn in enumerate(turns):
            for key in JUDGED:
                if key in turn:
                    bad(f"turns[{i}].{key} is a judged field; human labels go under turns[{i}].labels")
            tl = turn.get("labels")
            if tl is None:
                if wanted and (wanted == "user_helpfulness" or turn.get("agent")):
                    problems.append(f"{rid}: note: turns[{i}] has no {wanted} label")
                continue
            if not str(tl.get("note", "")).strip():
                bad(f"turns[{i}].labels.note is missing")
            if tl.get("labelled_by") != "maintainers":
                bad(f"turns[{i}].labels.labelled_by must be maintainers (every grade was written here)")
            if not any(k in tl for k in TURN_LABELS):
                bad(f"turns[{i}].labels has no label")
            for key in TURN_LABELS:
                if key in tl and (isinstance(tl[key], bool) or tl[key] not in (0, 1, 2)):
                    bad(f"turns[{i}].labels.{key} is {tl[key]!r}, must be 0, 1 or 2")
            if "agent_helpfulness" in tl and not turn.get("agent", "").strip():
                bad(f"turns[{i}] labels an empty agent message")
            extra = set(tl) - {*TURN_LABELS, "note", "labelled_by"}
            if extra:
                bad(f"turns[{i}].labels has unknown keys {sorted(extra)}")
        problems += [f"{rid}: {p}" for p in check_text(row, lfrqa, threads)]
        key = normal(row.get("question", ""))
        if key in seen_questions:
            bad(f"same question as {seen_questions[key]}")
        seen_questions[key] = rid
        if row.get("split") == "checked":
            tid = source.get("thread_id")
            if tid and tid in held_ids:
                bad(f"checked (held-out) row from thread {tid}, which the tuning sets use")
            for where, q in held_questions:
                if normal(q) == key or overlap(row.get("question", ""), q) >= OVERLAP_LIMIT:
                    bad(f"checked (held-out) question too close to {where}")
    return [p for p in problems if ": note: " not in p], [p for p in problems if ": note: " in p]


def check_text(row: dict, lfrqa: dict, threads: dict) -> list[str]:
    """Differences between a row's real text and its source."""
    out: list[str] = []
    source, turns, origin = row.get("source") or {}, row.get("turns") or [], row.get("origin")
    if not turns:
        return out
    if source.get("dataset") == "lfrqa_technology":
        task = lfrqa.get(source.get("id"))
        if task is None:
            return [f"unknown LFRQA id {source.get('id')!r}"]
        if len(turns) != 1:
            out.append("a Stack Exchange row has exactly one turn")
        if row.get("question") != task["question"] or turns[0]["user"] != task["question"]:
            out.append("question is not the LFRQA question")
        kind = row.get("kind")
        if kind == "se_accepted" and turns[0]["agent"] != task["reference_answer"]:
            out.append("reply is not the question's own reference answer")
        if kind == "se_neighbour":
            other = lfrqa.get(source.get("reply_id"))
            if other is None or source.get("reply_id") == source.get("id"):
                out.append("source.reply_id must name a different LFRQA question")
            elif turns[0]["agent"] != other["reference_answer"]:
                out.append("reply is not the reference answer of source.reply_id")
        if kind == "se_wrong" and (origin != "written_reply" or turns[0].get("written") != ["agent"]):
            out.append("a written reply must have origin written_reply and turns[0].written ['agent']")
    elif source.get("dataset") == "ubuntu_irc":
        thread = threads.get(source.get("thread_id"))
        if thread is None or source.get("id") != f"ubuntu-irc-{source.get('thread_id')}":
            return [f"unknown #ubuntu thread {source.get('thread_id')!r} or id not ubuntu-irc-<thread_id>"]
        real = thread_turns(thread)
        if origin == "verbatim":
            got = [(t["user"], t["agent"]) for t in turns]
            if got != [(t["user"], t["agent"]) for t in real]:
                out.append("turns are not the thread's messages (merge rule)")
        elif origin == "written_after_question":
            if turns[0]["user"] != real[0]["user"]:
                out.append("first user message is not the thread's first asker message")
            if any(not t.get("written") for t in turns):
                out.append("every turn of a written conversation says which sides are written")
        if row.get("question") != turns[0]["user"]:
            out.append("question is not the first user message")
    else:
        out.append(f"unknown source.dataset {source.get('dataset')!r}")
    return out


def report(rows: list[dict]) -> str:
    """The counts: per family x split x solved, solved share per split, turn-label values."""
    lines = [f"{len(rows)} conversations"]
    table = Counter((r["kind"], r["split"], r["labels"]["solved"]) for r in rows)
    lines.append(f"{'family':20} {'tune T/F':>9} {'checked T/F':>12} {'all':>4}")
    for kind in KINDS:
        cells = [f"{table[(kind, s, True)]}/{table[(kind, s, False)]}" for s in SPLITS]
        total = sum(v for (k, _, _), v in table.items() if k == kind)
        lines.append(f"{kind:20} {cells[0]:>9} {cells[1]:>12} {total:>4}")
    for split in SPLITS:
        part = [r for r in rows if r["split"] == split]
        solved = sum(r["labels"]["solved"] for r in part)
        fam = [r for r in part if r["kind"] in FIXED_SOLVED]
        fam_solved = sum(r["labels"]["solved"] for r in fam)
        lines.append(f"{split}: {len(part)} conversations, solved=true {solved} ({solved / len(part):.0%}); "
                     f"solved-check families {fam_solved}/{len(fam)} ({fam_solved / len(fam):.0%})")
        for key in TURN_LABELS:
            values = Counter(t["labels"][key] for r in part for t in r["turns"]
                             if key in t.get("labels", {}))
            lines.append(f"  {key}: " + ", ".join(f"{v}: {values[v]}" for v in (0, 1, 2))
                         + f" ({sum(values.values())} labels)")
    by = Counter((r["split"], r["labels"]["labelled_by"]) for r in rows)
    lines.append("solved labelled_by: " + ", ".join(f"{split} {src} {by[(split, src)]}" for split in SPLITS for src in SOURCES))
    origins = Counter(r["origin"] for r in rows)
    lines.append("origin: " + ", ".join(f"{k} {origins[k]}" for k in ORIGINS))
    return "\n".join(lines)


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from harness.selfscore.transcripts import TranscriptError, read_transcripts
    try:
        read_transcripts(LABELLED)
    except TranscriptError as exc:
        print(f"not a valid transcript file:\n{exc}")
        return 1
    rows = read_jsonl(LABELLED)
    problems, notes = check(rows)
    print(report(rows))
    for note in notes:
        print(note)
    held_ids, _ = held_out_references()
    print(f"held-out check: {sum(r['split'] == 'checked' for r in rows)} checked rows against "
          f"{len(held_ids)} tuning thread ids and their questions: "
          + ("no overlap" if not any("held-out" in p for p in problems) else "OVERLAP"))
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
