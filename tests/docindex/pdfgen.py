"""Write small text PDFs for tests: a hand-made file, outline added with pypdf."""
from __future__ import annotations

import io
from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


Line = str | tuple[str, int]      # a line of 12 pt text, or (text, font size)


def _line(line: Line) -> str:
    text, size = (line, 12) if isinstance(line, str) else line
    return f"/F1 {size} Tf {round(size * 1.6)} TL T* ({_escape(text)}) Tj"     # down by its own leading, then draw


def text_pdf(pages: list[list[Line]]) -> bytes:
    """A PDF with one Helvetica text line per string (12 pt; a (text, size) pair sets its size),
    pages in order."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for index, lines in enumerate(pages):
        content = "BT /F1 12 Tf 14 TL 72 720 Td " + " ".join(_line(line) for line in lines) + " ET"
        stream = content.encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_ids[index] + 1} 0 R >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def write_pdf(path: Path, pages: list[list[Line]], outline: list[tuple[str, int, int]] = (),
              title: str | None = None) -> Path:
    """outline: (title, page index, level 1-6); a level-n entry nests under the last level n-1 one.
    title: the document metadata's /Title."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(pages))))
    if title is not None:
        writer.add_metadata({"/Title": title})
    parents: dict[int, object] = {}
    for entry, page, level in outline:
        item = writer.add_outline_item(title=entry, page_number=page, parent=parents.get(level - 1))
        parents[level] = item
    with path.open("wb") as f:
        writer.write(f)
    return path
