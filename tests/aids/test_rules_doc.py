"""docs/rules.md shows the catalogue as it is: its generated block is what
``python -m harness.aids --markdown`` prints, so the doc cannot drift from the code."""
from __future__ import annotations

from pathlib import Path

from harness.aids import catalogue

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_the_generated_block_of_docs_rules_md_is_the_catalogue():
    text = DOC.read_text(encoding="utf-8")
    assert catalogue.with_markdown(text) == text, \
        "docs/rules.md is out of date: run `python -m harness.aids --markdown docs/rules.md`"


def test_docs_rules_md_names_the_entry_count_and_every_set_with_its_version():
    text = DOC.read_text(encoding="utf-8")
    assert f"{len(catalogue.entries())} entries" in text
    for s in (*catalogue.RULE_SETS, *catalogue.FAMILIES):
        assert f"| `{s.name}` | `{s.version}` |" in text, s.name


def test_the_markdown_command_prints_the_block(capsys):
    from harness.aids.__main__ import main
    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out.strip() == catalogue.markdown()


def test_docs_rules_md_says_what_each_aids_recorded_version_hashes():
    from harness.aids import AID_NAMES
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in AID_NAMES if f"| `{name}` |" not in text]
    assert not missing, f"docs/rules.md, 'Recorded versions': add a row for {missing}"
