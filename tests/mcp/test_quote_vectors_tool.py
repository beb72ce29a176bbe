"""`quote_vectors` over the real `docindex serve-mcp`: the vectors ingest stored for the
chunks a search returned, as the Retriever reads them; bad ids are argument errors."""
from __future__ import annotations

import base64

from docindex import quotable, quote_blobs
from docindex.embedder import MODEL_NAME
from docindex.minilm import default_embedder

from .conftest import mcp_client


async def test_the_vectors_of_a_searchs_chunks_are_the_models_own(small_index):
    async with mcp_client(small_index) as client:
        found = await client.call_tool("search", {"query": "quokka license key", "k": 3})
        passages = found.structured_content["passages"]
        ids = [p["chunk_id"] for p in passages]
        result = await client.call_tool("quote_vectors", {"chunk_ids": ids + [ids[0]]})
        assert not result.is_error
        payload = result.structured_content
        assert payload["model"] == MODEL_NAME and payload["dim"] == 384
        by_id = {int(k): base64.b64decode(v) for k, v in payload["vectors"].items()}
        texts = {p["chunk_id"]: quotable.quotable_texts(p["text"]) for p in passages}
        assert set(by_id) == {i for i, t in texts.items() if t}
        chunk_id, sentences = next((i, t) for i, t in texts.items() if t)
        table = quote_blobs.unpack(by_id[chunk_id], 384)
        fresh = default_embedder().embed(sentences)
        for sentence, vector in zip(sentences, fresh):
            assert float(table[quote_blobs.quote_key(sentence)] @ vector) > 0.97     # float16, maybe another build

        for bad, tail in (({"chunk_ids": []}, "path: /chunk_ids"), ({"chunk_ids": [2**63]}, "path: /chunk_ids/0"),
                          ({"chunk_ids": list(range(1, 66))}, "path: /chunk_ids"), ({"chunk_ids": ["1"]}, "/chunk_ids/0")):
            refused = await client.call_tool("quote_vectors", bad)
            assert refused.is_error and "Invalid arguments for tool 'quote_vectors'" in refused.content[0].text
            assert tail in refused.content[0].text
        unknown = await client.call_tool("quote_vectors", {"chunk_ids": [999_999]})
        assert not unknown.is_error and unknown.structured_content["vectors"] == {}
