"""Public ids: a prefix and 22 base-62 characters, each position drawn uniformly."""

from convmem.ids import ALPHABET, PUBLIC_ID, RANDOM_LENGTH, new_message_id, new_public_id


def test_an_id_is_its_prefix_and_random_base62_characters() -> None:
    ids = [new_public_id("thr") for _ in range(3000)]

    assert len(set(ids)) == len(ids)
    for public_id in ids:
        assert PUBLIC_ID.fullmatch(public_id)
        prefix, _, random_part = public_id.partition("_")
        assert prefix == "thr"
        assert len(random_part) == RANDOM_LENGTH
        assert set(random_part) <= set(ALPHABET)


def test_every_position_takes_every_character() -> None:
    # 3000 draws of 62 characters: a position that missed any (a leading digit always zero,
    # say) would hold fewer; each is missed by chance with probability about 62 * e**-48.
    ids = [new_message_id().partition("_")[2] for _ in range(3000)]

    for position in range(RANDOM_LENGTH):
        assert {public_id[position] for public_id in ids} == set(ALPHABET)
