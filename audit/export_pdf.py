"""The readable export (``audit.export_html``) as a PDF, printed by WeasyPrint.

The same templates and the same records as the ``html`` encoding, with page rules for print
(A4, page numbers). WeasyPrint lays a document out whole, so this encoding is not streamed: the
page is rendered into memory, then printed, and the PDF is answered in one piece. Its memory
grows with the subject's history (the other encodings' stays constant); it is meant for the
person asking for their data, whose history is a reading's worth, and the JSON remains the
encoding for bulk copies.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from audit.exports import Export


def export_pdf(export: "Export") -> bytes:
    """The export's readable page as PDF bytes. The page loads nothing (no images, no
    stylesheets: see its Content-Security-Policy), so no URL is fetched while printing.

    WeasyPrint is imported here, when a PDF is asked for: importing it parses its own
    stylesheets, a start-up cost every web, worker and manage.py process would pay otherwise."""
    from weasyprint import HTML

    page = "".join(export.chunks())
    return HTML(string=page, url_fetcher=_fetch_nothing).write_pdf()


def _fetch_nothing(url: str, *args: object, **kwargs: object) -> dict:
    raise ValueError(f"The export PDF loads nothing ({url}).")
