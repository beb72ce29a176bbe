"""MDX files read as the rendered page: no module statements, JSX comments, tag-only lines or
admonition fences; front matter, component text and code blocks kept."""
from __future__ import annotations

from docindex.extract import extract

PAGE = """---
title: Installation
---
import Tabs from '@theme/Tabs';
import {
  Foo,
} from '../components';

export const meta = {
  author: 'x',
};

# Installation

{/* TODO: screenshots */}
Install the CLI first. Then we
import the data with it.

<Tabs groupId="os">
  <TabItem value="linux" label="Linux">

Run `curl -sSL https://get.example | sh` on Linux.

  </TabItem>
</Tabs>

:::tip Keep it current
Update every month.
:::

```jsx
import X from 'y';
<Tabs>{/* kept: code */}</Tabs>
```
"""


def test_an_mdx_page_reads_as_its_rendered_text(tmp_path):
    path = tmp_path / "install.mdx"
    path.write_text(PAGE)
    extracted = extract(path)
    assert (extracted.title, extracted.metadata["format"]) == ("Installation", "mdx")
    assert [(b.kind, b.text) for b in extracted.blocks] == [
        ("heading", "Installation"),
        ("para", "Install the CLI first. Then we\nimport the data with it."),   # a paragraph's "import" is text
        ("para", "Run `curl -sSL https://get.example | sh` on Linux."),
        ("para", "Keep it current"),
        ("para", "Update every month."),
        ("code", "```jsx\nimport X from 'y';\n<Tabs>{/* kept: code */}</Tabs>\n```"),
    ]
