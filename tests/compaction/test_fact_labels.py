import pytest

from compaction.fact_labels import fact_label


@pytest.mark.parametrize(
    ("fact", "words"),
    [
        ("money:EUR 615.09", "Amount: EUR 615.09"),
        ("id:TCK-5521", "Ticket id: TCK-5521"),
        ("id:INC0012345", "Ticket id: INC0012345"),
        ("id:1Z999AA10123456784", "Tracking number: 1Z999AA10123456784"),
        ("id:JD01 5523 5435 2199 7787", "Tracking number: JD01 5523 5435 2199 7787"),
        ("id:12345678901234", "Tracking number: 12345678901234"),
        ("id:ORD-48213", "Order number: ORD-48213"),
        ("id:403-5652257-5185400", "Order number: 403-5652257-5185400"),
        ("id:INV-2024-0931", "Invoice number: INV-2024-0931"),
        ("id:RMA 4471-22", "Return authorisation: RMA 4471-22"),
        ("id:CU 0899 5727", "Reference: CU 0899 5727"),
        ("date:2024-11-06", "Date: 6 Nov 2024"),
        ("date:--11-06", "Date: 6 Nov"),
        ("date:2024-11", "Date: Nov 2024"),
        ("date:2024-13-45", "Date: 2024-13-45"),
        ("time:18:00", "Time: 18:00"),
        ("email:dana@example.com", "Email: dana@example.com"),
        ("phone:+442079460958", "Phone: +442079460958"),
        ("url:https://example.com/x", "Link: https://example.com/x"),
        ("name:Maria Lopez", "Name: Maria Lopez"),
        ("quote:handshake failed", "Quote: \u201chandshake failed\u201d"),
        ("number:1200", "Number: 1200"),
        ("shoe:42", "Shoe: 42"),
        ("no kind here", "no kind here"),
    ],
)
def test_facts_are_named_in_words(fact: str, words: str) -> None:
    assert fact_label(fact) == words
