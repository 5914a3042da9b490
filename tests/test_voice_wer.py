"""Word error rate by utterance length (harness.voice.wer) and the silence padding the
transcriber puts around short messages. No speech models run."""
import pytest

from harness.voice.wer import LENGTH_BUCKETS, length_bucket, summarize_errors, wer_by_length, word_errors


@pytest.mark.parametrize("words, label", [(0, "0"), (1, "1-3"), (3, "1-3"), (4, "4-8"), (8, "4-8"),
                                          (9, "9-20"), (20, "9-20"), (21, "21+"), (400, "21+")])
def test_length_buckets(words, label):
    assert length_bucket(words) == label


def test_buckets_count_normalised_reference_words():
    # "Wi-Fi" is one word and "twenty-one" one number after normalisation: 3 words, not 5
    assert length_bucket(word_errors("Wi-Fi twenty-one times", "").reference_words) == "1-3"
    assert [lo for lo, _ in LENGTH_BUCKETS] == [1, 4, 9, 21]


def test_wer_by_length_groups_in_bucket_order_with_mean_and_corpus_wer():
    pairs = [("It still fails and the light blinks red every time.", "It still fails and the light blinks red every time."),
             ("Yes.", "Yeah."),
             ("It still does not work.", "It still does not work."),
             ("No luck.", "No luck."),
             ("Is the printer on?", "Is the printer gone?")]
    by = wer_by_length(pairs)
    assert list(by) == ["1-3", "4-8", "9-20"]
    short = by["1-3"]
    assert (short.n, short.words, short.errors) == (2, 3, 1)
    assert short.mean == pytest.approx(0.5)            # (1/1 + 0/2) / 2: one short miss weighs a lot
    assert short.corpus == pytest.approx(1 / 3)        # 1 error in 3 words
    assert by["4-8"].errors == 1 and by["4-8"].corpus == pytest.approx(1 / 9)
    assert by["9-20"].mean == 0.0


def test_summarize_errors_of_nothing():
    s = summarize_errors([])
    assert (s.n, s.words, s.errors, s.mean, s.corpus) == (0, 0, 0, 0.0, 0.0)
