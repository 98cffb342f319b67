"""Facts told in other languages, asked in other forms of their words after
compaction took them out of view: each is in grep's top 5 and reads back.

A user who speaks German, French or Russian to an agent asks in that language; the
index stems each message in its own language and the question in every language the
file holds, so "Prüfung des Berichts" finds "Prüfungen der Berichte" and
"резервная копия" finds "резервные копии"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lossless
from lossless.config import Config, ModelConfig
from lossless.parts import TextPart
from lossless.session import Session
from lossless.testing.facts import PlantedFact, check_facts, fact_session, record_facts

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::UserWarning")]

# (what the user said, how it is asked for later): the question shares no word of
# four letters or more with the fact as written, only other forms of its words.
FACTS = [
    (
        "Wichtig: die Prüfungen der Berichte dauern bei uns drei Wochen, Vorgang 4417.",
        "Wie lange dauert eine Prüfung des Berichts?",
    ),
    (
        "Note : les sauvegardes chiffrées sont conservées quatre-vingt-dix jours, dossier 2290.",
        "Combien de temps une sauvegarde chiffrée est-elle conservée ?",
    ),
    (
        "Recuerda: las facturas pendientes se pagan el último día hábil, cuenta 7781.",
        "¿Cuándo se paga una factura pendiente?",
    ),
    (
        "Ricorda: le chiavi di firma vengono ruotate ogni trimestre, ticket 5530.",
        "Quando si ruota la chiave firmata?",
    ),
    (
        "Lembre-se: os relatórios de desempenho são enviados toda segunda-feira, canal 6612.",
        "Quando se envia um relatório?",
    ),
    (
        "Let op: de certificaten van de gateways verlopen in maart, wijziging 3308.",
        "Wanneer verloopt het certificaat?",
    ),
    (
        "Важно: резервные копии журнала платежей хранятся на отдельном сервере, заявка 9921.",
        "Где хранится резервная копия журналов?",
    ),
    (
        "Kom ihåg: loggarna från betalningstjänsten rensas efter trettio dagar, ärende 4470.",
        "När rensar man loggen i betalningstjänst?",
    ),
    ("重要：支付服务的备份密钥存放在上海机房的保险柜里，编号8812。", "备份密钥在哪里？"),
    (
        "重要：決済サービスの証明書は毎年四月に更新されます。番号5521。",
        "証明書はいつ更新されますか",
    ),
]


def spaced_words(text: str) -> set[str]:
    return {word for word in re.findall(r"\w+", text.lower()) if 4 <= len(word) <= 20}


def test_questions_share_no_written_word_with_their_facts() -> None:
    for text, question in FACTS[:8]:
        assert not spaced_words(text) & spaced_words(question), question


async def test_facts_in_other_languages_are_found_by_other_forms_of_their_words(
    tmp_path: Path,
) -> None:
    turns, _ = fact_session(1_500, 0, seed=5)
    # User turns (every 25th) spread over all but the newest tenth of the run.
    user_turns = list(range(50, 1_300, 25))[:: len(range(50, 1_300, 25)) // len(FACTS)]
    planted = []
    for turn, (text, question) in zip(user_turns, FACTS, strict=False):
        turns[turn] = ("user", [TextPart(text)])
        planted.append(PlantedFact(turn, "user", text, question))
    db = tmp_path / "languages.db"
    config = Config(model=ModelConfig(context_limit=24_000, max_output_tokens=2_000))
    async with Session.open(model="gpt-4o", db=db, config=config) as session:
        facts = await record_facts(session, turns, planted)
        report = check_facts(session, facts)
    assert report.failures == [], report.failures
    assert report.found == report.read_back == len(FACTS)
    assert report.in_context < len(FACTS), "compaction took the facts out of view"
    # The whole file is searched the same way through the module API.
    hits = lossless.grep("Prüfung Berichts", db=db, limit=5)
    assert hits and "[Prüfungen]" in hits[0].snippet
