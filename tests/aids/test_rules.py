"""The rules engine (harness.aids.rules) and the rule data it reads (harness.aids.data_*)."""
from __future__ import annotations

import re

import pytest

from graphs.protocols import Message
from harness.aids import catalogue
from harness.aids.cues import (SOLVED_CUES_VERSION, agent_hits, claims_success, claims_success_hits,
                               persisting_cues, persisting_hits, result_hits)
from harness.aids.data_bounds import HB
from harness.aids.helpfulness_bounds import RULES_VERSION, first_question_bounds, user_reply_bounds
from harness.aids.rules import Hit, Limit, Rule, RuleSet, WordList


def rule(rule_id: str, pattern: str, **kw) -> Rule:
    return Rule(id=rule_id, pattern=pattern, decides="a test decision", why="a test", **kw)


# -- the engine ----------------------------------------------------------------------------------
def test_the_version_is_the_name_and_a_hash_of_the_content():
    a = RuleSet("demo", [rule("demo.still", r"\bstill\b")])
    assert re.fullmatch(r"demo-[0-9a-f]{10}", a.version)
    assert RuleSet("demo", [rule("demo.still", r"\bstill\b")]).version == a.version  # content, not identity


@pytest.mark.parametrize("changed", [
    lambda: RuleSet("demo", [rule("demo.still", r"\bstill\b(?!\s+works)")]),       # a pattern
    lambda: RuleSet("demo", [rule("demo.stays", r"\bstill\b")]),                   # an id
    lambda: RuleSet("demo", [rule("demo.still", r"\bstill\b", flags="")]),         # the flags
    lambda: RuleSet("demo", [Rule("demo.still", r"\bstill\b", "another decision", "a test")]),
    lambda: RuleSet("demo", [rule("demo.still", r"\bstill\b")], limits=[Limit("demo.cap", 3, "a cap", "a test")]),
])
def test_a_changed_rule_changes_the_version(changed):
    assert changed().version != RuleSet("demo", [rule("demo.still", r"\bstill\b")]).version


def test_the_why_is_not_part_of_the_version():
    # rewording why a rule exists changes no verdict, so it keeps the version
    a = RuleSet("demo", [Rule("demo.x", "x", "d", "one reason")])
    assert RuleSet("demo", [Rule("demo.x", "x", "d", "a better-worded reason")]).version == a.version


def test_hits_name_their_rules():
    s = RuleSet("demo", [rule("demo.still", r"\bstill\b"), rule("demo.same", r"\bsame error\b"),
                         rule("demo.error", r"\berror\b")])
    text = "Still the same error, and another error."
    assert s.first(text) == Hit("demo.still", "Still", 0, 5)
    # left to right, never overlapping, as one alternation's finditer: "same error" is one hit
    assert [(h.rule_id, h.text) for h in s.all(text)] == [
        ("demo.still", "Still"), ("demo.same", "same error"), ("demo.error", "error")]
    assert [(h.rule_id, h.text) for h in s.each(text)] == [
        ("demo.still", "Still"), ("demo.same", "same error"), ("demo.error", "error")]
    assert s.first("nothing here") is None and s.all("") == [] and s.each(None) == []
    assert s.sub("_", "same error again") == "_ again"


def test_first_at_one_place_takes_the_rule_listed_first_and_each_rule_keeps_its_flags():
    s = RuleSet("demo", [rule("demo.word", r"\bno\b"), rule("demo.phrase", r"\bno luck\b"),
                         rule("demo.Case", r"[a-z]+-[a-z]+", flags="")])
    assert s.first("no luck").rule_id == "demo.word"
    assert s.first("No luck").rule_id == "demo.word"              # "i" by default
    assert s.first("APT-GET") is None and s.first("apt-get").rule_id == "demo.Case"


def test_a_set_refuses_two_entries_with_one_id_and_joins_shared_entries_once():
    still = rule("demo.still", r"\bstill\b")
    with pytest.raises(ValueError, match="demo.still"):
        RuleSet("demo", [still, rule("demo.still", r"\bsame\b")])
    joined = RuleSet.joined("both", [RuleSet("a", [still]), RuleSet("b", [still, rule("demo.same", "same")])])
    assert [r.id for r in joined.rules] == ["demo.still", "demo.same"]
    with pytest.raises(ValueError, match="demo.still"):
        RuleSet.joined("clash", [RuleSet("a", [still]), RuleSet("b", [rule("demo.still", "other")])])


@pytest.mark.parametrize("bad", [
    dict(id="", pattern="x", decides="d", why="w"),
    dict(id="x", pattern="x", decides="", why="w"),
    dict(id="x", pattern="x", decides="d", why=""),
    dict(id="x", pattern="(a)\\1", decides="d", why="w"),      # a back-reference breaks once joined
    dict(id="x", pattern="x", decides="d", why="w", flags="q"),
])
def test_a_rule_needs_an_id_a_decision_a_reason_and_a_joinable_pattern(bad):
    with pytest.raises(ValueError):
        Rule(**bad)


def test_a_pattern_that_does_not_compile_fails_when_the_rule_is_made():
    with pytest.raises(re.error):
        rule("demo.bad", "(unclosed")


def test_a_word_list_splits_a_string_and_keeps_its_order():
    w = WordList("demo.words", "ok okay k", "acknowledges", "a test")
    assert w.words == ("ok", "okay", "k") and w.as_set == {"ok", "okay", "k"}


# -- the data ------------------------------------------------------------------------------------
ENTRIES = catalogue.entries()


def test_every_entry_has_an_id_a_decision_a_language_and_a_reason_and_ids_are_unique():
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for e in ENTRIES:
        assert e.id and e.decides.strip() and e.why.strip(), e
        assert re.fullmatch(r"[a-z]+\.[a-z0-9_]+", e.id), e.id
        if not isinstance(e, Limit):
            assert e.language in {"en", "multi", "de", "fr", "es", "it", "pt", "nl", "sv", "pl"}, e.id


def test_every_pattern_compiles_and_every_family_entry_is_in_a_rule_set():
    for e in ENTRIES:
        if isinstance(e, Rule):
            assert isinstance(e.regex, re.Pattern)
    listed = {e.id: e for e in ENTRIES}
    for family in catalogue.FAMILIES:
        for e in (*family.rules, *family.word_lists, *family.limits):
            assert listed.get(e.id) is e, f"{family.name}: {e.id} is in no rule set of the catalogue"
    names = [s.name for s in (*catalogue.RULE_SETS, *catalogue.FAMILIES)]
    assert len(names) == len(set(names))


def test_a_run_records_the_version_a_bounded_judgment_records_and_it_moves_with_a_band(monkeypatch):
    from harness import compose
    from harness.aids import helpfulness_bounds
    recorded = compose.aid_versions()["helpfulness_bounds"]
    assert recorded == RULES_VERSION and recorded.startswith("helpfulness-bounds-")
    assert SOLVED_CUES_VERSION == catalogue.rule_set("solved-cues").version
    limits = [Limit(x.id, x.value + 1, x.decides, x.why) if x.id == "band.outcome" else x for x in HB.limits]
    monkeypatch.setattr(helpfulness_bounds, "HB", RuleSet(HB.name, HB.rules, HB.word_lists, limits))
    assert compose.aid_versions()["helpfulness_bounds"] != recorded


def test_hit_counts_count_texts_per_rule():
    counts = catalogue.hit_counts(["it still fails", "still the same error", "ok"])
    assert counts["persists.still"] == 2 and counts["persists.same"] == 1 and "success.word" not in counts
    assert "persists-" in catalogue.report(["it still fails"]) and "[1 hits]" in catalogue.report(["it still fails"])


# -- the cues and bounds name the rules that decided -----------------------------------------------
def test_the_cues_name_their_rules():
    assert [h.rule_id for h in persisting_hits("I'll try that, but it still didnt work")] == [
        "untried.will_try", "persists.still", "persists.not_working"]
    assert persisting_cues("I'll try that, but it still didnt work") == ["I'll try", "still", "didnt work"]
    assert [h.rule_id for h in agent_hits("Sure! You should run it. I hope this helps")] == [
        "agent.sure", "agent.you_should", "assistant.hope_helps"]
    assert [h.rule_id for h in result_hits("I logged back in again and it works now")] == [
        "success.word", "result.word"]                   # "back" and "again" follow a step
    assert [h.rule_id for h in claims_success_hits("The error no longer appears.")] == ["success.symptom_gone"]
    assert claims_success_hits("it does not work") == [] and not claims_success("it does not work")


def test_a_quote_inside_words_is_no_quote():
    # "don't ... it's" once read as quoting "t know, it" (an output, floor 5); a real quote still is
    history = [Message("user", "My wifi drops."), Message("agent", "Run `iwconfig`.")]
    text = "I don't know, it's weird"
    assert user_reply_bounds(text, [*history, Message("user", text)]).floor == 1
    text = "I get 'Operation not permitted'"
    b = user_reply_bounds(text, [*history, Message("user", text)])
    assert b.floor == 5 and b.rule_ids[-1] == "band.output"
    # the quoted "work" of an error message is no claimed success
    assert not claims_success("Git says 'the remote contains work that you do not have locally'.")


def test_bounds_record_the_ids_of_the_rules_that_set_the_band():
    history = [Message("user", "No sound."), Message("agent", "Unmute it in alsamixer.")]
    b = user_reply_bounds("still no sound", [*history, Message("user", "still no sound")])
    assert b.rule_ids == ("persists.still", "band.outcome")
    record = b.record(2)
    assert record["rule_ids"] == ["persists.still", "band.outcome"] and record["rules_version"] == RULES_VERSION
    assert set(record) == {"judge_score", "floor", "cap", "rules", "rules_version", "rule_ids"}
    assert first_question_bounds("help, my sound is broken").rule_ids == ("band.no_detail",)


def test_every_rule_id_a_judgment_records_is_in_the_catalogue():
    known = {e.id for e in ENTRIES}
    history = [Message("user", "My wifi drops since the update."), Message("agent", "Run `iwconfig` and paste it.")]
    replies = ["ok", "still drops", "That worked, thanks", "I will try that next week", "I don't want to run that",
               "It says: wlan0 IEEE 802.11 ESSID", "I'm sorry to hear that, let me know if it helps",
               "My wifi drops since the update.", "no errors this time", "I have 2.6.24 and /dev/sda1 here"]
    for text in replies:
        ids = user_reply_bounds(text, [*history, Message("user", text)]).rule_ids
        assert set(ids) <= known, (text, ids)
    for text in ("I changed the permissions.", "I'll try it, but it still fails. Sure, you should reboot."):
        ids = [h.rule_id for h in (*persisting_hits(text), *agent_hits(text), *result_hits(text))]
        assert set(ids) <= known and "result.none" in known
