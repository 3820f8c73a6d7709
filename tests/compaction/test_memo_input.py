"""What a memo writer reads: long tool outputs are cut between their lines."""

from compaction.backends import MemoSource
from compaction.memo_input import fit_sources
from convmem.tokens import DEFAULT_ENCODING, count_tokens


def test_a_long_output_of_lines_is_cut_between_whole_lines() -> None:
    lines = [
        f"row {n:04d}: bucket-{n * 7 % 97} holds {n * 13} objects, owner team-{n % 5}"
        for n in range(300)
    ]
    source = MemoSource(id="msg_1", role="tool", content="\n".join(lines))

    (fitted,) = fit_sources([source], budget=600, encoding=DEFAULT_ENCODING)

    assert count_tokens(fitted.content, DEFAULT_ENCODING) < count_tokens(
        source.content, DEFAULT_ENCODING
    )
    kept = fitted.content.split("\n")
    markers = [line for line in kept if "tokens cut" in line]
    assert len(markers) >= 1
    assert kept[0] == lines[0]
    assert kept[-1] == lines[-1]
    for line in kept:
        assert line in lines or line in markers


def test_text_without_line_breaks_is_still_cut_around_a_marker() -> None:
    text = " ".join(f"word{n}" for n in range(2000))
    source = MemoSource(id="msg_1", role="user", content=text)

    (fitted,) = fit_sources([source], budget=300, encoding=DEFAULT_ENCODING)

    assert fitted.content.startswith("word0 ")
    assert fitted.content.endswith("word1999")
    assert "tokens cut" in fitted.content
