"""Text as FTS5 sees it: CJK segmentation, stopwords, safe MATCH expressions.

FTS5's unicode61 tokenizer splits on spaces and punctuation only, so a run of
Chinese characters would be one giant token. Chinese runs are segmented with
jieba on both sides: `cut_for_search` when indexing (words plus their
sub-words), precise `cut` for queries, so every query word exists in the index.

User text never reaches MATCH as syntax: each term is quoted (FTS5 string
syntax, `"` doubled) and terms are OR-ed, so `AND`, `NEAR`, `*`, `:` or an
unbalanced quote in a question are just words.
"""
from __future__ import annotations

import logging
import re
import threading
from types import ModuleType

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_WORD = re.compile(r"\w+", re.UNICODE)
_ALNUM = re.compile(r"[^\W_]", re.UNICODE)   # FTS5 drops "_" and punctuation

STOPWORDS_EN = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves tell explain describe
please there's what's how's i'm can't don't doesn't
""".split())

STOPWORDS_ZH = frozenset("""
的 了 是 在 和 与 或 及 吗 呢 吧 啊 呀 么 嘛 什么 怎么 怎样 怎么样 如何 哪些 哪个 哪里 哪 多少 多久
可以 能 能否 需要 要 我 你 您 他 她 它 我们 你们 他们 有 没有 会 这 那 这个 那个 这些 那些 就
都 也 还 又 被 把 给 对 从 到 为 为什么 一个 请问 请 吗？ 是否 之 其 而 但 并 等 让 该 应该 得 地 着 过
""".split())

STOPWORDS = STOPWORDS_EN | STOPWORDS_ZH

_jieba_lock = threading.Lock()
_jieba: ModuleType | None = None


def _segmenter() -> ModuleType:
    """jieba, imported and initialised once (its dictionary load takes ~1 s)."""
    global _jieba
    with _jieba_lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def cjk_share(text: str) -> float:
    """Fraction of the letters and digits of `text` that are CJK characters."""
    letters = [ch for ch in text if ch.isalnum()]
    if not letters:
        return 0.0
    return sum(len(run) for run in _CJK.findall("".join(letters))) / len(letters)


def index_text(text: str) -> str:
    """The text stored in FTS5: CJK runs replaced by their space-separated words."""
    if not has_cjk(text):
        return text
    jieba = _segmenter()
    return _CJK.sub(lambda m: " " + " ".join(w for w in jieba.cut_for_search(m.group()) if w.strip()) + " ", text)


def query_terms(query: str) -> list[str]:
    """Searchable terms of a question: lower-cased, segmented, stopwords and punctuation dropped."""
    terms: list[str] = []
    position = 0
    lowered = query.lower()
    for match in _CJK.finditer(lowered):
        terms.extend(_WORD.findall(lowered[position:match.start()]))
        terms.extend(w for w in _segmenter().cut(match.group()) if w.strip())
        position = match.end()
    terms.extend(_WORD.findall(lowered[position:]))
    seen: set[str] = set()
    kept: list[str] = []
    for term in terms:
        if term in STOPWORDS or term in seen or not _ALNUM.search(term):
            continue
        seen.add(term)
        kept.append(term)
    return kept


def match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH string that treats every term as a literal."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
