"""The human-labelled agreement set (harness/data/agreement/labelled.jsonl, issue 29).

Standard library and pytest only: the file's size, its solved balance per split, that every label
says how it was decided and who gave it (labelled_by), that the checked split (the first held-out part,
renamed after it was looked at) shares no thread or question with what the prompts were tuned on
(troubleshooting.jsonl, harness/data/sanity/*), that its agent labels use the whole 0-2 scale, and that
the fresh held-out part (heldout.jsonl) is the frozen file, new and balanced. harness/data/agreement/build_labelled.py checks the rest (and prints the counts).
"""
import glob
import json
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "harness" / "data"
LABELLED = DATA / "agreement" / "labelled.jsonl"
TROUBLESHOOTING = DATA / "ubuntu_irc" / "troubleshooting.jsonl"
THREADS = DATA / "ubuntu_irc" / "ubuntu_irc_test_threads.jsonl"
SANITY = DATA / "sanity"
SPLITS = ("tune", "checked")
OVERLAP_LIMIT = 0.6  # as in build_labelled.py
THREAD_ID = re.compile(r"\d{4}-\d{2}-\d{2}_\d{2}#\d+")
STOP = set("""a an and are as at be but by can could do does doesn't dont don't for from get gets got
has have how i i'm im if in is it its it's me my no not of on or so some the their them then there this
to up was what when where which who why will with would you your yes ok hi hello hey anyone any help
please thanks just now also all after before into out only than that these those one still been am""".split())


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def words(text):
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.+_-]*[a-z0-9]|[a-z0-9]", text.lower())
            if w not in STOP and len(w) > 1}


def overlap(a, b):
    wa, wb = words(a), words(b)
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else 0.0


def normal(text):
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def first_asker_message(thread):
    asker, texts = thread["messages"][0]["speaker"], []
    for m in thread["messages"]:
        if m["speaker"] != asker:
            break
        texts.append(m["text"])
    return "\n".join(texts)


@pytest.fixture(scope="module")
def rows():
    return read_jsonl(LABELLED)


@pytest.fixture(scope="module")
def tuning_sets():
    """(thread ids, questions) of troubleshooting.jsonl and the sanity sets."""
    ids, questions, sanity_questions = set(), [], []
    for task in read_jsonl(TROUBLESHOOTING):
        ids.add(task["metadata"]["thread_id"])
        questions.append(task["question"])
    for path in glob.glob(str(SANITY / "*")):
        ids.update(THREAD_ID.findall(Path(path).read_text(encoding="utf-8")))
        if path.endswith(".jsonl"):
            for case in read_jsonl(path):
                texts = [case.get("question")]
                conversation = case.get("conversation") or []
                if conversation and conversation[0].get("role") == "user":
                    texts.append(conversation[0]["content"])
                if case.get("first"):
                    texts += [case.get("helpful"), case.get("useless")]
                sanity_questions += [t for t in texts if t and len(words(t)) >= 4]
    for thread in read_jsonl(THREADS):  # #ubuntu threads a sanity case was modelled on
        if any(overlap(first_asker_message(thread), q) >= OVERLAP_LIMIT for q in sanity_questions):
            ids.add(thread["thread_id"])
    return ids, questions + sanity_questions


def test_size_and_fields(rows):
    assert len(rows) >= 60
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["split"] in SPLITS, r["id"]
        assert isinstance(r["labels"]["solved"], bool), r["id"]
        assert r["problem"].strip() and r["turns"], r["id"]
        assert {"dataset", "id", "licence"} <= set(r["source"]), r["id"]
        for turn in r["turns"]:
            assert isinstance(turn["user"], str) and isinstance(turn["agent"], str), r["id"]
            assert not {"user_helpfulness", "agent_helpfulness", "solved"} & set(turn), \
                f"{r['id']}: human labels belong under turn['labels'], not in the judged fields"
            for key in ("agent_helpfulness", "user_helpfulness"):
                if key in turn.get("labels", {}):
                    assert turn["labels"][key] in (0, 1, 2), r["id"]


@pytest.mark.parametrize("split", SPLITS)
def test_each_split_is_balanced(rows, split):
    solved = [r["labels"]["solved"] for r in rows if r["split"] == split]
    assert True in solved and False in solved
    assert 0.35 <= sum(solved) / len(solved) <= 0.65


def test_checked_is_disjoint_from_the_tuning_sets(rows, tuning_sets):
    ids, questions = tuning_sets
    held = [r for r in rows if r["split"] == "checked"]
    assert held
    normalised = {normal(q) for q in questions}
    for r in held:
        assert r["source"].get("thread_id") not in ids, r["id"]
        assert normal(r["question"]) not in normalised, r["id"]
        close = [q for q in questions if overlap(r["question"], q) >= OVERLAP_LIMIT]
        assert not close, f"{r['id']} is too close to a tuning question: {close[0][:80]!r}"


def test_every_label_has_a_note_and_a_source(rows):
    for r in rows:
        assert r["labels"].get("note", "").strip(), r["id"]
        assert r["labels"]["labelled_by"] in ("maintainers", "people"), r["id"]
        for i, turn in enumerate(r["turns"]):
            if "labels" in turn:
                assert turn["labels"].get("note", "").strip(), f"{r['id']} turn {i}"
                assert turn["labels"]["labelled_by"] == "maintainers", f"{r['id']} turn {i}: every grade was written here"


def test_people_labels_rest_on_the_askers_words(rows):
    """A solved label is the people's only where the asker's own words in the real thread decide it:
    real #ubuntu threads, never a written conversation or a Stack Exchange reply paired here."""
    people = [r for r in rows if r["labels"]["labelled_by"] == "people"]
    assert people
    for r in people:
        assert r["origin"] == "verbatim" and r["source"]["dataset"] == "ubuntu_irc", r["id"]


def test_checked_agent_labels_use_the_whole_scale(rows):
    values = {t["labels"]["agent_helpfulness"] for r in rows if r["split"] == "checked"
              for t in r["turns"] if "agent_helpfulness" in t.get("labels", {})}
    assert {0, 1, 2} <= values


HELDOUT = DATA / "agreement" / "heldout.jsonl"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "selfscore.md"
SHA256 = re.compile(r"`([0-9a-f]{64})`")


def test_the_fresh_held_out_part_is_the_frozen_file():
    """heldout.jsonl was frozen before any figure was read on it: its sha256 is the one written in
    SOURCE.md and docs/selfscore.md. A changed file (or a changed record) fails here."""
    import hashlib
    digest = hashlib.sha256(HELDOUT.read_bytes()).hexdigest()
    for doc in (LABELLED.parent / "SOURCE.md", DOCS):
        recorded = SHA256.findall(doc.read_text(encoding="utf-8"))
        assert digest in recorded, f"{HELDOUT.name} sha256 {digest} is not the one recorded in {doc.name}: {recorded}"


def test_the_fresh_held_out_part_is_new_balanced_and_people_labelled(tuning_sets):
    fresh = read_jsonl(HELDOUT)
    solved = [r["labels"]["solved"] for r in fresh]
    assert len(fresh) >= 20 and sum(solved) == len(solved) - sum(solved)
    old = read_jsonl(LABELLED)
    used = {r["source"].get("thread_id") for r in old} | tuning_sets[0]
    for r in fresh:
        assert r["split"] == "heldout" and r["labels"]["labelled_by"] == "people", r["id"]
        assert r["source"]["thread_id"] not in used, r["id"]
        assert r["labels"]["note"].startswith("The asker's own words"), r["id"]
        close = [q for q in [o["question"] for o in old] + tuning_sets[1] if overlap(r["question"], q) >= OVERLAP_LIMIT]
        assert not close, f"{r['id']} is too close to {close[0][:80]!r}"


def test_the_fresh_held_out_part_is_what_its_build_script_builds():
    """heldout.jsonl is reproducible: build_heldout.py (the hand-written verdict table and the
    threads' own messages) gives the same bytes."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("build_heldout", LABELLED.parent / "build_heldout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.serialise(module.build_rows()) == HELDOUT.read_bytes()
