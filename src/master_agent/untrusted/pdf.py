"""Text of an uploaded PDF, read in an isolated worker (``isolated``) with page and size limits.

A small PDF can cost hours of CPU: a hundred pages may point at one compressed stream of a hundred
thousand text operators, each page decoding it again. So the page count is bounded before any page is
read, the text kept is bounded, and the caller's time limit kills the worker that overruns it.
"""

from __future__ import annotations

import io

#: Pages of a document that are read; a longer document is refused.
MAX_PDF_PAGES = 20
#: Characters of text kept from a document.
MAX_PDF_TEXT_CHARS = 200_000


def pdf_text(content: bytes) -> str:
    """The document's text (the worker's entry point); a ``ValueError`` saying why it was not read."""
    # Imported here: only worker interpreters read PDFs.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not content.startswith(b"%PDF-"):
        raise ValueError("a PDF starts with %PDF-; this file does not")
    try:
        reader = PdfReader(io.BytesIO(content))
        pages = len(reader.pages)
        if pages > MAX_PDF_PAGES:
            raise ValueError(f"the PDF has {pages} pages; at most {MAX_PDF_PAGES} are read")
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            text = page.extract_text() or ""
            parts.append(text)
            size += len(text)
            if size > MAX_PDF_TEXT_CHARS:
                break
    except (PyPdfError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise ValueError(f"not a readable PDF ({type(error).__name__})") from None
    return "\n".join(parts)[:MAX_PDF_TEXT_CHARS]
