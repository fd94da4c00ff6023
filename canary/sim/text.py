"""The simulator's words: the text bank, language detection, tokens and sentences."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from canary.config.bundled import bundled_dir
from canary.config.definitions import parse_definition
from canary.config.equality_set import load_equality_prompts
from canary.config.probe_set import NONCE, LanguagePrompts, SchemaProbe, ToolsProbe
from canary.sim.scenario import LANGUAGES, ScenarioError

BUILTIN_BANK = Path(__file__).resolve().parent / "textbank"
# How many sentences canary's own prompts ask for (probes/prompts/*.yaml: "in one short
# sentence", "in 4 to 6 sentences", a villain's next lines), as a model that follows its prompt
# answers them: within a sentence of what was asked.
ASKED_SENTENCES = {"ttft": (1, 2), "refusal": (2, 4), "language": (4, 6)}

# Languages written without spaces between words: tokens are a couple of characters.
_UNSPACED = frozenset({"ja", "zh", "th"})
_WORD = re.compile(r"\s*\S+")
_SENTENCE = re.compile(r"(?<=[.!?。！？؟»”\"」])\s+|(?<=[。！？])")

REFUSALS = {
    "en": "I can't continue this role-play. I'm not able to help with that request.",
    "es": "No puedo continuar con este juego de rol. No puedo ayudarte con esa solicitud.",
    "pt": "Não posso continuar este role-play. Não posso ajudar com esse pedido.",
    "fr": "Je ne peux pas poursuivre ce jeu de rôle. Je ne peux pas vous aider avec cette demande.",
    "de": "Ich kann dieses Rollenspiel nicht fortsetzen. Bei dieser Anfrage kann ich nicht helfen.",
    "it": "Non posso continuare questo gioco di ruolo. Non posso aiutarti con questa richiesta.",
    "pl": "Nie mogę kontynuować tej gry fabularnej. Nie mogę pomóc w tej prośbie.",
    "ru": "Я не могу продолжать эту ролевую игру. Я не могу помочь с этим запросом.",
    "uk": "Я не можу продовжувати цю рольову гру. Я не можу допомогти з цим запитом.",
    "tr": "Bu rol yapma oyununa devam edemem. Bu istekte yardımcı olamam.",
    "ar": "لا أستطيع متابعة لعب الأدوار هذا. لا يمكنني المساعدة في هذا الطلب.",
    "id": "Saya tidak dapat melanjutkan permainan peran ini. Saya tidak bisa membantu itu.",
    "vi": "Tôi không thể tiếp tục trò nhập vai này. Tôi không thể giúp với yêu cầu đó.",
    "th": "ฉันไม่สามารถเล่นบทบาทสมมตินี้ต่อได้ ฉันไม่สามารถช่วยเหลือคำขอนี้ได้",
    "ja": "このロールプレイを続けることはできません。そのご依頼にはお応えできません。",
    "ko": "이 롤플레이를 계속할 수 없습니다. 그 요청은 도와드릴 수 없습니다.",
    "zh": "我无法继续这个角色扮演。我无法协助这个请求。",
}


class TextBank:
    """Passages per language, one per line; a directory replaces the built-in bank."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or BUILTIN_BANK
        self.passages: dict[str, tuple[str, ...]] = {}
        for lang in LANGUAGES:
            path = self.directory / f"{lang}.txt"
            if not path.exists():
                if directory is None:
                    raise ScenarioError(f"text bank: {path.name} is missing")
                fallback = BUILTIN_BANK / f"{lang}.txt"
                path = fallback
            lines = path.read_text(encoding="utf-8").splitlines()
            passages = tuple(line.strip() for line in lines if line.strip())
            if not passages:
                raise ScenarioError(f"text_bank: {path} has no passages")
            self.passages[lang] = passages
        self.sentences = {
            lang: tuple(s for p in ps for s in split_sentences(p, lang))
            for lang, ps in self.passages.items()
        }


@lru_cache(maxsize=4)
def text_bank(directory: Path | None = None) -> TextBank:
    return TextBank(directory)


def split_sentences(text: str, lang: str) -> list[str]:
    if lang == "th":
        return [s for s in text.split(" ") if s] if text.count(" ") > 3 else [text]
    parts = [s.strip() for s in _SENTENCE.split(text)]
    return [s for s in parts if s]


def join_sentences(sentences: list[str], lang: str) -> str:
    sep = "" if lang in ("ja", "zh") else " "
    return sep.join(sentences)


def tokenize(text: str, lang: str | None = None) -> list[str]:
    """Split text into stream tokens: a word with its leading space, or 2 characters."""
    tokens: list[str] = []
    for word in _WORD.findall(text):
        body = word.lstrip()
        if lang in _UNSPACED or (len(body) > 8 and not body.isascii() and _cjk(body)):
            lead = word[: len(word) - len(body)]
            pieces = [body[i : i + 2] for i in range(0, len(body), 2)]
            pieces[0] = lead + pieces[0]
            tokens.extend(pieces)
        else:
            tokens.append(word)
    return tokens


def _cjk(text: str) -> bool:
    return any("\u3040" <= ch <= "\u9fff" or "\u0e00" <= ch <= "\u0e7f" for ch in text[:4])


@lru_cache(maxsize=1)
def _detector() -> LanguageDetector:
    languages = [
        Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper())) for code in LANGUAGES
    ]
    # High accuracy: short prompts ("Continue the scene.") need the longer n-grams.
    builder = LanguageDetectorBuilder.from_languages(*languages)
    return builder.with_preloaded_language_models().build()


@lru_cache(maxsize=2048)
def detect_language(text: str, default: str = "en") -> str:
    """The language of `text` among the 17 supported (cached; lingua is loaded on first use)."""
    if not text.strip():
        return default
    found = _detector().detect_language_of(text)
    if found is None:
        return default
    code = found.iso_code_639_1.name.lower()
    return code if code in LANGUAGES else default


def request_language(prompt: str) -> str:
    """The language a request is written in: one of canary's prompts is in its file's language
    (no detection: every probe carries a fresh nonce, so no cache would spare lingua's work);
    any other text is detected."""
    for prefix, lang, _ in _own_prompts():
        if prompt.startswith(prefix):
            return lang
    return detect_language(prompt)


def warm_up(bank: TextBank, *, detector: bool = True) -> None:
    """Read canary's prompts now, not on the first request, and with ``detector`` load lingua's
    models too (about 3 s: only text other than canary's prompts needs them)."""
    _own_prompts()
    if detector:
        found = _detector()
        for sentences in bank.sentences.values():
            found.detect_language_of(min(sentences, key=len))


@lru_cache(maxsize=1)
def _own_prompts() -> tuple[tuple[str, str, tuple[int, int] | None], ...]:
    """Each of canary's probe prompts up to its nonce (longest first), with its language and
    the sentences it asks for (prose prompts only), read and validated as the prober reads
    them. The schema and tools probes and the equality check's prompts are written in English
    and sent as they are whatever the languages watched."""
    probes = bundled_dir("probes")
    found: list[tuple[str, str, tuple[int, int] | None]] = []
    for path in sorted((probes / "prompts").glob("*.yaml")):
        prompts = parse_definition(probes, f"prompts/{path.name}", LanguagePrompts)
        for kind, sentences in ASKED_SENTENCES.items():
            template: str = getattr(prompts, kind)
            found.append((template[: template.index(NONCE)], path.stem, sentences))
    schema = parse_definition(probes, "schema.json", SchemaProbe).prompt
    tools = parse_definition(probes, "tools.json", ToolsProbe).prompt
    found += [(template[: template.index(NONCE)], "en", None) for template in (schema, tools)]
    equality = load_equality_prompts(probes)
    first = equality.prompts[0]
    found.append((equality.story(first)[: -len(first.opening)], "en", None))
    found += [(item.prompt, "en", None) for item in equality.known]
    return tuple(sorted(found, key=lambda entry: -len(entry[0])))


def asked_sentences(prompt: str) -> tuple[int, int] | None:
    """The sentences a prompt of canary's asks for (least, most), or None for any other."""
    for prefix, _, sentences in _own_prompts():
        if prompt.startswith(prefix):
            return sentences
    return None
