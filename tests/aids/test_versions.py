"""What a run records as each aid's version is a hash of everything that decides it: change one
rule, word list or threshold and the version ``compose.aid_versions()`` records changes
(issue 43: the ev4 change to the evidence rules had kept the recorded ``solved_rules`` version)."""
from __future__ import annotations

import dataclasses

import pytest

from harness import compose
from harness.aids import RuleSet, version_of
from harness.aids.rules import Limit, Rule, WordList


def changed(rule_set: RuleSet, entry_id: str, **fields) -> RuleSet:
    """``rule_set`` with the entry ``entry_id`` changed (``fields`` replaced), all else the same."""
    found = [e for e in (*rule_set.rules, *rule_set.word_lists, *rule_set.limits) if e.id == entry_id]
    assert found, entry_id

    def swap(entries):
        return [dataclasses.replace(e, **fields) if e.id == entry_id else e for e in entries]
    return RuleSet(rule_set.name, swap(rule_set.rules), swap(rule_set.word_lists), swap(rule_set.limits))


def recorded(aid: str) -> str:
    return compose.aid_versions()[aid]


def test_every_recorded_version_is_a_content_hash_named_by_its_aid():
    versions = compose.aid_versions()
    from harness.aids import AID_NAMES
    assert set(versions) == set(AID_NAMES)  # every aid of the profiles has a recorded version
    assert all(v.startswith(n.replace("_", "-") + "-") or n in ("manipulation_defence", "translation")
               for n, v in versions.items())
    assert "manipulation-rules-2" not in versions.values() and "translate-1" not in versions.values()
    assert versions == compose.aid_versions()  # the same content, the same version


def test_an_evidence_rule_changes_the_recorded_solved_rules_version(monkeypatch):
    from harness.aids import evidence
    before = recorded("solved_rules")
    assert evidence.reaction("that fixed it, thanks")[0] == "confirms"
    confirms = evidence.EVIDENCE.entry("evidence.confirms")
    monkeypatch.setattr(evidence, "EVIDENCE", changed(evidence.EVIDENCE, "evidence.confirms",
                                                      pattern=confirms.pattern.replace("fixed|", "")))
    assert recorded("solved_rules") != before
    # the behaviour reads the same set: "fixed" alone no longer confirms
    assert evidence.reaction("that fixed it, thanks")[0] != "confirms"


def test_a_solved_threshold_changes_the_recorded_solved_rules_version(monkeypatch):
    from harness.aids import evidence
    before = recorded("solved_rules")
    monkeypatch.setattr(evidence, "SOLVED_THRESHOLDS", changed(evidence.SOLVED_THRESHOLDS, "solved.answer", value=0.6))
    assert recorded("solved_rules") != before


def test_the_solved_checks_thresholds_are_the_catalogues():
    from harness.aids import SOLVED_THRESHOLDS
    from harness.selfscore.judges import CONFIRMED_THRESHOLD
    from harness.selfscore.solved_evidence import ANSWER_THRESHOLD
    assert CONFIRMED_THRESHOLD == SOLVED_THRESHOLDS.limit("solved.confirmed")
    assert ANSWER_THRESHOLD == SOLVED_THRESHOLDS.limit("solved.answer")


def test_a_manipulation_cue_changes_the_recorded_defence_version_and_what_a_turn_records(monkeypatch):
    from harness.defence import manipulation
    before = recorded("manipulation_defence")
    assert manipulation.turn_record("hi", "ok")["rules"] == before
    cues = manipulation.MANIPULATION_CUES
    rule = cues.rules[0]
    monkeypatch.setattr(manipulation, "MANIPULATION_CUES", changed(cues, rule.id, pattern=rule.pattern + "|\\bzzzq\\b"))
    after = recorded("manipulation_defence")
    assert after != before
    monkeypatch.setattr(manipulation, "RULES_VERSION", manipulation.rules_version())
    assert manipulation.turn_record("hi", "ok")["rules"] == after


def test_a_cue_trait_changes_the_defence_version(monkeypatch):
    from harness.defence import manipulation
    before = recorded("manipulation_defence")
    cues = manipulation.MANIPULATION_CUES
    weak = next(r for r in cues.rules if r.trait("strength") == "weak")
    traits = {**dict(weak.traits), "strength": "strong"}
    monkeypatch.setattr(manipulation, "MANIPULATION_CUES", changed(cues, weak.id, traits=traits))
    assert recorded("manipulation_defence") != before


def test_a_language_word_changes_the_recorded_translation_version(monkeypatch):
    from harness.selfscore import languages
    before = recorded("translation")
    german = languages.LANGUAGES.entry("language.german")
    monkeypatch.setattr(languages, "LANGUAGES", changed(languages.LANGUAGES, "language.german",
                                                        words=(*german.words, "trotzdem")))
    assert recorded("translation") != before


def test_a_translation_prompt_changes_the_recorded_translation_version(monkeypatch):
    from harness.selfscore import languages
    before = recorded("translation")
    monkeypatch.setattr(languages, "TRANSLATE_SYSTEM", languages.TRANSLATE_SYSTEM + " Be brief.")
    assert recorded("translation") != before


def test_the_reply_cap_sentence_and_the_user_checks_change_their_versions(monkeypatch):
    from harness.agents import prompts as agent_prompts
    from harness.aids import data_user
    cap, user = recorded("reply_cap"), recorded("user_regenerations")
    monkeypatch.setattr(agent_prompts, "AGENT_REPLY_BOUND", agent_prompts.AGENT_REPLY_BOUND + " Be kind.")
    assert recorded("reply_cap") != cap
    rules = data_user.USER_CHECK_RULES
    monkeypatch.setattr(data_user, "USER_CHECK_RULES", changed(rules, "copy.run", value=9))
    assert recorded("user_regenerations") != user


def test_a_preprocess_sign_changes_the_guard_version(monkeypatch):
    from harness.aids import PREPROCESS_ANSWER_SIGNS
    from harness.selfscore import preprocess
    before = recorded("preprocessing_guard")
    sign = PREPROCESS_ANSWER_SIGNS.rules[0]
    monkeypatch.setattr(preprocess, "PREPROCESS_ANSWER_SIGNS",
                        changed(PREPROCESS_ANSWER_SIGNS, sign.id, pattern=sign.pattern + "|zzzq"))
    assert recorded("preprocessing_guard") != before


def test_version_of_hashes_every_part_kind_in_order_and_refuses_others():
    rule = Rule("demo.rule", "a", "decides", "why")
    words = WordList("demo.words", "a b", "decides", "why")
    limit = Limit("demo.limit", 1, "decides", "why")
    base = version_of("demo", [RuleSet("demo", [rule]), rule, words, limit, "prompt"])
    assert base.startswith("demo-") and len(base) == len("demo-") + 10
    assert version_of("demo", [RuleSet("demo", [rule]), rule, words, limit, "prompt."]) != base
    assert version_of("demo", [RuleSet("demo", [rule]), rule, words, dataclasses.replace(limit, value=2),
                               "prompt"]) != base
    assert version_of("demo", ["prompt", RuleSet("demo", [rule]), rule, words, limit]) != base
    with pytest.raises(TypeError):
        version_of("demo", [0.5])


def test_a_new_evidence_logic_version_changes_the_recorded_solved_rules_version(monkeypatch):
    """The ev4 change was code, not a rule: its hand-set logic version is part of the hash too."""
    from harness.selfscore import solved_evidence
    before = recorded("solved_rules")
    monkeypatch.setattr(solved_evidence, "EVIDENCE_VERSION", "ev5")
    assert recorded("solved_rules") != before


def test_a_user_outcome_threshold_changes_the_recorded_user_outcome_version(monkeypatch):
    from harness.aids import USER_OUTCOME_THRESHOLDS
    from harness.simuser import users
    before = recorded("user_outcome")
    monkeypatch.setattr(users, "USER_OUTCOME_THRESHOLDS",
                        changed(USER_OUTCOME_THRESHOLDS, "outcome.with_terms", value=0.56))
    assert recorded("user_outcome") != before
