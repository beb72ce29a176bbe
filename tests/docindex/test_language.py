"""Passages in the question's language first (docindex/language.py): aptitude's manual in English, French
and Spanish in one collection put French and Spanish pages among an English question's results."""
from __future__ import annotations

from docindex.index import Index
from docindex.ingest import ingest
from docindex.language import language, same_language_first
from docindex.ranking import Ranked

from .conftest import write_files

EN = ("# Holding packages\n\nTo keep a package at its current version, mark it as held with the hold command; "
      "a held package is not upgraded by safe-upgrade or full-upgrade until you unhold it.\n")
FR = ("# Conserver des paquets\n\nPour conserver un paquet dans sa version actuelle, marquez-le avec la commande "
      "hold ; un paquet conservé n'est pas mis à jour par safe-upgrade ou full-upgrade tant que vous ne le "
      "libérez pas avec unhold. Cette commande est utile pour les paquets du système.\n")
ES = ("# Retener paquetes\n\nPara mantener un paquete en su versión actual, márquelo con la orden hold; un paquete "
      "retenido no se actualiza con safe-upgrade o full-upgrade hasta que lo libere con unhold. Esta orden es "
      "útil para los paquetes del sistema y para las pruebas.\n")


def test_a_texts_language_is_named_only_when_it_is_plain():
    assert language(EN) == "en" and language(FR) == "fr" and language(ES) == "es"
    assert language("Файл debian/rules — это исполняемый сценарий для сборки пакета") == "ru"
    assert language("debian/rules は Debian パッケージをビルドするための実行可能スクリプトです") == "ja"
    assert language("How do I hold a package?", short=True) == "en"
    assert language("Comment puis-je conserver un paquet ?", short=True) == "fr"
    # code, tables and names are no language: PostgreSQL's CHECK clause was read as Spanish
    assert language("```\nCHECK ( logdate >= DATE '2008-01-01' AND logdate < DATE '2008-02-01' ) y a el\n```") is None
    assert language("| 'B' | unsigned_char(bitwise=True) |\n|---|---|") is None
    assert language("dpkg -i foo.deb", short=True) is None        # nothing to tell by


def test_other_languages_follow_in_their_order_and_one_misread_chunk_moves_nothing():
    texts = {1: FR, 2: EN, 3: ES, 4: FR, 5: "```\nmake\n```", 6: ES, 7: EN}
    ranked = [Ranked(i, 1.0 / i, 0.0, 1.0 / i) for i in texts]
    order = same_language_first("How do I hold a package?", ranked, 4, lambda ids: {i: texts[i] for i in ids})
    assert [r.chunk_id for r in order] == [2, 5, 7, 1, 3, 4, 6]       # English and code first, then the others
    lone = {1: ES, 2: EN, 3: EN}                                       # one Spanish-looking chunk: a misreading
    ranked = [Ranked(i, 1.0, 0.0, 1.0) for i in lone]
    assert same_language_first("How do I hold a package?", ranked, 4, lambda ids: {i: lone[i] for i in ids}) == ranked
    only_french = [Ranked(i, 1.0, 0.0, 1.0) for i in (1, 4)]           # none in the question's language
    assert same_language_first("How do I hold a package?", only_french, 4,
                               lambda ids: {i: texts[i] for i in ids}) == only_french


def test_an_english_question_over_three_languages_gets_english_passages_first(tmp_path):
    other_en = ("# Upgrading\n\nThe safe-upgrade command upgrades installed packages without removing any; "
                "full-upgrade may remove packages to upgrade others, and a held package is kept back by both.\n")
    docs = write_files(tmp_path / "docs", {"en/hold.md": EN, "en/upgrade.md": other_en,
                                           **{f"fr/p{i}.md": FR + f"\nPage {i}.\n" for i in range(3)},
                                           **{f"es/p{i}.md": ES + f"\nPágina {i}.\n" for i in range(3)}})
    ingest([docs], tmp_path / "i.db", "apt")
    with Index(tmp_path / "i.db") as index:
        hits = index.search("How do I keep a package from being upgraded with hold?", k=8, collection="apt")
        assert [h.source.split("/")[0] for h in hits][:2] == ["en", "en"] and len(hits) >= 4
        french = index.search("Comment conserver un paquet avec la commande hold ?", k=1, collection="apt")
        assert french[0].source.startswith("fr/")          # the French pages are copies: one place (distinct)
