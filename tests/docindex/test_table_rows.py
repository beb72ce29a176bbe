"""Markdown tables are embedded as plain rows; the displayed text keeps them as written."""
from __future__ import annotations

from docindex.chunking import Chunk
from docindex.table_rows import plain_tables, row_text

TABLE = ("Tools it serves:\n\n| Tool | Purpose |\n|------|:-------:|\n| `fs_list` | List the entries of a directory |\n"
         "| `fs_read` | Read a UTF-8 text file |\n\nEvery path is confined to the root.")


def test_a_table_reads_as_plain_rows_and_everything_else_as_written() -> None:
    assert plain_tables(TABLE) == ("Tools it serves:\n\nTool — Purpose\n`fs_list` — List the entries of a directory\n"
                                   "`fs_read` — Read a UTF-8 text file\n\nEvery path is confined to the root.")


def test_pipes_that_are_no_table_are_text() -> None:
    """A syntax synopsis (`| ALL |`), one row without a separator, a shell pipe: as written."""
    for text in ("SELECT [ ALL | DISTINCT ]\n| ALL |", "| a | b |\n| c | d |", "cat x | grep y", "|"):
        assert plain_tables(text) == text


def test_the_chunk_embeds_plain_rows_but_shows_the_table() -> None:
    chunk = Chunk(0, 2, "tools", ("filesystem-mcp", "Tools"), TABLE)
    assert chunk.text == TABLE
    assert chunk.embed_text.startswith("filesystem-mcp › Tools\nTools it serves:\n\nTool — Purpose\n")
    assert "|" not in chunk.embed_text


def test_a_separator_row_is_nothing_and_cells_join_with_a_dash() -> None:
    assert row_text("|---|:---:|") == "" and row_text("| a |  | b |") == "a — b"


def test_a_label_cell_ending_in_a_colon_is_followed_by_its_value_not_a_dash() -> None:
    """Apache's directive tables ("| Default: | LimitRequestBody 1073741824 |") were quoted "Default: — …"."""
    assert row_text("| Default: | LimitRequestBody 1073741824 |") == "Default: LimitRequestBody 1073741824"
    assert row_text("| Context: | server config | .htaccess |") == "Context: server config — .htaccess"


def test_an_escaped_pipe_is_part_of_its_cell() -> None:
    """GFM: `\\|` inside a cell is a pipe (`ls \\| wc`), as the HTML reader writes a cell's own pipes."""
    assert row_text("| `ls \\| wc` | counts |") == "`ls | wc` — counts"
    assert row_text("|---|:--:|") == ""


def test_a_gfm_table_without_outer_pipes_is_read_as_a_table() -> None:
    """GFM makes a table's outer pipes optional; Icinga's manual writes all 497 of its tables without them,
    and they were read as paragraphs ("Name | Description ------|------ vmware_host | **Required.** …")."""
    from docindex.markdown_reader import parse_markdown
    from docindex.table_rows import piped
    table = "Name | Description\n-----|:----\nvmware_host | **Required.** ESX hostname.\nport | `443`"
    assert piped(table) == ("| Name | Description |\n| -----|:---- |\n| vmware_host | **Required.** ESX hostname. |\n"
                            "| port | `443` |")
    assert [b.text for b in parse_markdown(f"{table}\n").blocks] == [piped(table)]
    assert piped("| a | b |\n|---|---|\n| 1 | 2 |") is None                  # already a table
    assert piped("a | b\n-----\nc") is None                                 # one column: no pipe in the rule
    assert piped("a | b | c\n---|---\n1 | 2") is None                       # header and rule disagree
    assert piped("Text with a | pipe\nand a second line") is None
