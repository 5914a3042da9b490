"""Text cleaning for speech and word error rate: pure functions, no models."""
import pytest

from harness.voice.textclean import CODE_OMITTED, clean_for_speech
from harness.voice.wer import normalize, wer, word_errors


@pytest.mark.parametrize("text, spoken", [
    ("**Restart** the *router* and __then__ the _modem_.", "Restart the router and then the modem."),
    ("# Fix the printer\nTurn it off.", "Fix the printer. Turn it off."),
    ("Steps:\n1. Open settings\n2. Click Network\n- Reboot", "Steps: Open settings. Click Network. Reboot."),
    ("See [the guide](https://help.ubuntu.com/wifi) now.", "See the guide now."),
    ("Read https://askubuntu.com/questions/123?tab=votes#a1 first.", "Read askubuntu.com first."),
    ("Go to www.example.org/path today", "Go to example.org today"),
    ("![diagram of the network](img/net.png) shows it", "diagram of the network shows it"),
    ("Run `sudo apt update` now", "Run sudo apt update now"),
    ("Great job 🎉👍🏽 it works ✅!", "Great job it works!"),
    ("> quoted advice\nplain", "quoted advice plain"),
    ("Use <b>bold</b> and<br>break", "Use bold and break"),
    ("| cmd | effect |\n|---|---|\n| ls | lists files |", "cmd, effect. ls, lists files."),
    ("Compute 2*3*4 and keep snake_case_names", "Compute 2*3*4 and keep snake_case_names"),
    ("above\n\n---\n\nbelow", "above below"),
])
def test_clean_for_speech_rules(text, spoken):
    assert clean_for_speech(text) == spoken


def test_short_code_block_is_read_long_one_omitted():
    short = "Run this:\n```bash\nsudo systemctl restart NetworkManager\n```\nthen wait."
    assert clean_for_speech(short) == "Run this: sudo systemctl restart NetworkManager. then wait."
    long = "Edit it:\n```\n" + "\n".join(f"line {i} = value" for i in range(6)) + "\n```\nDone."
    assert clean_for_speech(long) == f"Edit it: {CODE_OMITTED} Done."
    unterminated = "Try:\n```\n" + "x = 1\n" * 5
    assert clean_for_speech(unterminated) == f"Try: {CODE_OMITTED}"


def test_nothing_speakable_gives_empty_text():
    assert clean_for_speech("🙂 🚀\u200d ✨") == ""
    assert clean_for_speech("   \n\n ") == ""


def test_normalize_folds_case_punctuation_numbers_and_hyphens():
    assert normalize("It's 5 GB on Wi-Fi, twenty-one times!") == ["its", "5", "gb", "on", "wifi", "21", "times"]
    assert normalize("forty two") == normalize("42")


def test_word_errors_counts_each_edit_kind():
    e = word_errors("the cat sat on the mat", "the cat sit on mat today")
    assert (e.substitutions, e.deletions, e.insertions, e.reference_words) == (1, 1, 1, 6)
    assert e.wer == pytest.approx(3 / 6)
    assert wer("Restart the router.", "restart the router") == 0.0
    assert wer("", "") == 0.0 and wer("", "noise") == 1.0
    assert wer("two words", "") == 1.0
