"""The seven rules of CONTRACT 14, each a combination of signals in one sentence.

A text is cut into sentences (`Document`); each signal (`signals`) is searched once over
the whole text and its matches are filed under the sentence they start in. A rule fires on
the first sentence where its signals meet: `send` with an address and user data,
`do not tell` with the user, a tool's name with an order about how to call it. One
pattern alone would miss paraphrases; one signal alone would flag every filesystem tool.

Every step is linear in the text: patterns with bounded gaps (signals' doc), comments and
whitespace runs found by scanning, matches filed by bisection.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Final

from marketplace_rules.findings import Code, Severity
from marketplace_rules.model_text import signals as sig
from marketplace_rules.model_text.gates import GateIndex, Signal
from marketplace_rules.model_text.model import SCORED_CHARS, text_model, windows
from marketplace_rules.model_text.popular import HOST_TOOLS, POPULAR_TOOLS
from marketplace_rules.model_text.sources import NO_CONTEXT, ToolContext

CODE_ORDER: Final = (
    Code.AI_INSTRUCTION_OVERRIDE,
    Code.AI_CONCEALMENT,
    Code.AI_SENSITIVE_DATA,
    Code.AI_EXFILTRATION,
    Code.AI_TOOL_SHADOWING,
    Code.AI_HIDDEN_MARKUP,
    Code.AI_COERCION,
)
AI_CODES: Final = frozenset(CODE_ORDER)
SEVERITY: Final[dict[Code, Severity]] = {
    code: ("info" if code == Code.AI_COERCION else "warning") for code in CODE_ORDER
}

Span = tuple[int, int]

# Where one sentence ends and the next begins: end punctuation and a space, a blank line,
# a list item, heading, quote or table row on a new line, and markup tags (judged apart).
_ENDS: Final = ".!?。！？"
_BOUNDARY: Final = re.compile(
    # Every alternative opens with a character of its own (the sentence's end mark is
    # matched, then left to its sentence): `re` then only tries where one stands, 2.5
    # times faster than look-behinds tried at every position.
    r"[.!?。！？][\"'”’)\]*_]{0,3}[ \t]+"
    r"|[.!?。！？][\"'”’)\]*_]{0,3}\n"
    r"|\n[ \t]*\n"
    r"|\n(?=[ \t]{0,12}(?:[-*+•]\s|\d{1,3}[.)]\s|#|>|\||```|~~~))"
    r"|<!--|-->|<(?<![=(/?&\w]<)[A-Za-z/!][^<>\n]{0,120}>"
)
_INLINE_CODE: Final = re.compile(r"`[^`\n]{1,300}`")
_FENCE: Final = re.compile(r"^[ \t]{0,3}(?:```|~~~)", re.MULTILINE)
_WHITESPACE_RUN: Final = re.compile(r"[ \t\u00a0\u2000-\u200a\u3000]{40,}+")
_BLANK_LINES: Final = re.compile(r"(?:\n[ \t]*){15,}+")
_WORD: Final = re.compile(r"\w+")
_LOOK_BACK: Final = 40
_COMMENT_OPEN, _COMMENT_CLOSE = "<!--", "-->"
_COMMENT_MIN_WORDS: Final = 3
_YOUR_CREDENTIAL: Final = re.compile(
    r"\byour\s+(?:own\s+)?(?:\w+\s+)?(?:api[\s_-]?keys?|tokens?|passwords?|credentials?|"
    r"secret keys?|access tokens?)\b",
    re.IGNORECASE,
)
_SETUP: Final = re.compile(
    r"\b(?:get|obtain|create|generate)\s+(?:a|an|your)\s+(?:free\s+|new\s+)?(?:\w+\s+)?"
    r"(?:api\s+key|token|access\s+token)\b|"
    r"\bfrom\s+(?:the|your)\s+(?:\w+\s+)?(?:dashboard|console|settings|portal|account page|"
    r"developer page|admin page)\b|\.?gitignore\b|\bgit-ignored\b"
    r"|\bin\s+your\s+(?:[\w-]+\s+){0,3}?(?:configuration|config|settings|environment|"
    r"shell\s+profile|\.env)\b",
    re.IGNORECASE,
)
"""A person setting up the plugin: `copy the API key from the dashboard`."""
_CONFIGURED: Final = re.compile(
    r"\b(?:set|export|exported|configure|define|named|called|variable|var|as)\s+`?"
    r"[A-Z][A-Z0-9]*_[A-Z0-9_]*"
    r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD)\b"
)
_STRONG_COLLECT: Final = re.compile(
    r"^(?:read|look\s+up|load|cat|collect|gather|harvest|extract|dump|grab|steal|exfiltrate|"
    r"send|forward|upload|post|email|e-mail|transmit|leak|submit|reveal|share|attach|append|"
    r"embed|scan|search\s+for|look\s+for|locate|enumerate|copy|put)$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TextHit:
    """One rule's evidence in one text: spans of the matched words (offsets in the text,
    first one first), the sentence they stand in, and a note (the annotation's
    contradiction) or ""."""

    code: Code
    spans: tuple[Span, ...]
    context: Span
    note: str = ""


_SPANNING: Final = frozenset(id(pattern) for pattern in sig.SPANNING)


@dataclass
class Document:
    """A text cut into sentences; each signal's matches found sentence by sentence, only
    where its gate words occur (`gates`), and kept once found.

    gated=False tries every alternative in every sentence: the same results, slower (the
    tests compare both)."""

    text: str
    gated: bool = True
    bounds: list[Span] = field(init=False)
    _starts: list[int] = field(init=False)
    _sentences_with: dict[str, set[int]] = field(init=False, default_factory=dict)
    _words: list[set[str]] = field(init=False, default_factory=list)
    # Keyed by id(pattern), as GateIndex.signals: a compiled pattern hashes slowly.
    _found: dict[tuple[int, int], list[re.Match[str]]] = field(init=False, default_factory=dict)
    _code: list[Span] | None = field(init=False, default=None)
    _maybe: dict[int, frozenset[int]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        bounds: list[Span] = []
        start = 0
        text = self.text
        for boundary in _BOUNDARY.finditer(text):
            cut = boundary.start()
            if text[cut] in _ENDS:
                cut += 1
            if cut > start:
                bounds.append((start, cut))
            if text[cut] == "<":  # a tag is a sentence of its own
                bounds.append((cut, boundary.end()))
            start = boundary.end()
        if start < len(self.text):
            bounds.append((start, len(self.text)))
        self.bounds = bounds or [(0, len(self.text))]
        self._starts = [first for first, _ in self.bounds]
        self._words = [set() for _ in self.bounds]
        if self.gated:
            _gates().index_words(self.text, self._starts, self._words, self._sentences_with)

    def sentence_of(self, at: int) -> int:
        return max(0, bisect.bisect_right(self._starts, at) - 1)

    def sentence(self, index: int) -> str:
        first, last = self.bounds[index]
        return self.text[first:last]

    def _present(self, signal: Signal, index: int, spanning: bool) -> set[str]:
        """The signal's gate words in sentence `index` (and the next, for a signal that
        runs on into it)."""
        present = set(signal.words & self._words[index])
        if spanning and index + 1 < len(self._words):
            present |= signal.words & self._words[index + 1]
        return present

    def may_open(self, pattern: re.Pattern[str], index: int) -> bool:
        """Whether some alternative of the signal is open in sentence `index`."""
        return index in self.maybe(pattern)

    def maybe(self, pattern: re.Pattern[str]) -> frozenset[int]:
        """The sentences where some alternative of the signal is open (kept once found)."""
        found = self._maybe.get(id(pattern))
        if found is None:
            signal = _gates().signals[id(pattern)]
            if not self.gated:
                found = frozenset(range(len(self.bounds)))
            else:
                found = frozenset(self._open_sentences(signal, id(pattern) in _SPANNING))
            self._maybe[id(pattern)] = found
        return found

    def _open_sentences(self, signal: Signal, spanning: bool) -> set[int]:
        """The sentences where an alternative is open: for each alternative, those holding
        a word of each of its gates (set operations, no sentence visited one by one). A
        spanning signal's sentence also counts the next one's words."""
        with_word = self._sentences_with
        sentences_of: dict[str, set[int]] = {}
        for word in signal.words.intersection(with_word):
            at = with_word[word]
            sentences_of[word] = at | {index - 1 for index in at if index > 0} if spanning else at
        found: set[int] = set()
        for alternative in signal.alternatives:
            opened: set[int] | None = None
            for gate in alternative.gates:
                held = [sentences_of[word] for word in gate.intersection(sentences_of)]
                here: set[int] = set().union(*held)
                opened = here if opened is None else opened & here
                if not opened:
                    break
            if opened:
                found |= opened
        # An alternative without a gate: the sentences where a scan of the whole text finds
        # it (one pass at the engine's speed, not one per sentence).
        for alternative in signal.ungated:
            for match in alternative.pattern.finditer(self.text):
                where = self.sentence_of(match.start())
                found.add(where)
                if spanning and where > 0:
                    found.add(where - 1)
        return found

    def in_sentence(self, pattern: re.Pattern[str], index: int) -> list[re.Match[str]]:
        """pattern's matches that start in sentence `index`, first first."""
        if not 0 <= index < len(self.bounds):
            return []
        key = (id(pattern), index)
        found = self._found.get(key)
        if found is None:
            first, last = self.bounds[index]
            spanning = id(pattern) in _SPANNING
            stop = min(len(self.text), last + sig.SPAN_CHARS) if spanning else last
            signal = _gates().signals[id(pattern)]
            tried = (
                signal.open_in(self._present(signal, index, spanning))
                if self.gated
                else signal.alternatives
            )
            found = [
                match
                for alternative in tried
                for match in alternative.pattern.finditer(self.text, first, stop)
                if match.end() > match.start() and match.start() < last
            ]
            if len(tried) > 1:
                found.sort(key=lambda match: match.start())
            self._found[key] = found
        return found

    def matches(self, pattern: re.Pattern[str]) -> dict[int, list[re.Match[str]]]:
        """pattern's matches by the sentence each starts in (only sentences with one)."""
        found: dict[int, list[re.Match[str]]] = {}
        for index in self._candidates(pattern):
            if matches := self.in_sentence(pattern, index):
                found[index] = matches
        return found

    def _candidates(self, pattern: re.Pattern[str]) -> list[int]:
        return sorted(self.maybe(pattern))

    def negated(self, at: int) -> bool:
        """Whether the words just before `at` (in its sentence) negate it."""
        first = max(self.bounds[self.sentence_of(at)][0], at - _LOOK_BACK)
        return sig.NEGATION.search(self.text[first:at]) is not None

    def in_code(self, at: int) -> bool:
        """Inside inline code or a fenced block: shown to a reader as it is."""
        if self._code is None:
            self._code = _code_spans(self.text)
        index = bisect.bisect_right(self._code, (at, len(self.text) + 1)) - 1
        return index >= 0 and self._code[index][0] <= at < self._code[index][1]


def _code_spans(text: str) -> list[Span]:
    spans = [(m.start(), m.end()) for m in _INLINE_CODE.finditer(text)]
    fences = [m.start() for m in _FENCE.finditer(text)]
    for opening, closing in zip(fences[::2], fences[1::2], strict=False):
        spans.append((opening, closing))
    if len(fences) % 2:
        spans.append((fences[-1], len(text)))
    return sorted(spans)


def _hit(doc: Document, code: Code, *matches: re.Match[str] | Span, note: str = "") -> TextHit:
    spans = sorted(m if isinstance(m, tuple) else (m.start(), m.end()) for m in matches)
    return TextHit(code, tuple(spans), doc.bounds[doc.sentence_of(spans[0][0])], note)


def _first_unnegated(doc: Document, pattern: re.Pattern[str], index: int) -> re.Match[str] | None:
    for match in doc.in_sentence(pattern, index):
        if not doc.negated(match.start()):
            return match
    return None


# ---------- the rules ----------


def instruction_override(doc: Document, context: ToolContext) -> TextHit | None:
    """An order set aside: a set phrase (`ignore previous instructions`, `SYSTEM
    OVERRIDE`), a switch of mode or persona, or in one sentence a word that sets aside
    (ignore, supersede, no longer apply, take precedence) and the orders the model has
    (system prompt, earlier instructions, the user's request). Not negated, not quoted
    or mentioned (`if a page asks you to ignore previous instructions`)."""
    for pattern in (sig.OVERRIDE, sig.OVERRIDE_MODE, sig.MODE_SWITCH):
        for matches in doc.matches(pattern).values():
            for match in matches:
                if _said(doc, match):
                    return _hit(doc, Code.AI_INSTRUCTION_OVERRIDE, match)
    for index in sorted(doc.matches(sig.OVERRIDE_CUE)):
        orders = doc.in_sentence(sig.AUTHORITY, index)
        if not orders:
            continue
        for cue in doc.in_sentence(sig.OVERRIDE_CUE, index):
            if _said(doc, cue):
                return _hit(doc, Code.AI_INSTRUCTION_OVERRIDE, cue, orders[0])
    return None


def _said(doc: Document, match: re.Match[str]) -> bool:
    """Neither negated nor quoted or mentioned."""
    if doc.negated(match.start()):
        return False
    first = max(doc.bounds[doc.sentence_of(match.start())][0], match.start() - _LOOK_BACK)
    return sig.MENTION.search(doc.text[first : match.start()]) is None


_PROTECT: Final = re.compile(r"\b(?:reveal|disclose|share|show)\w*\b", re.IGNORECASE)
_CONDITION: Final = re.compile(r"\b(?:unless|until|when|whether)\b|(?<!\bas )\bif\b", re.IGNORECASE)


def concealment(doc: Document, context: ToolContext) -> TextHit | None:
    """`do not tell the user`, but not `do not mention pricing unless the user asks`."""
    for index in sorted(doc.matches(sig.CONCEAL)):
        guarded = any(doc.in_sentence(sig.SENSITIVE_STRONG, near) for near in (index - 1, index))
        for match in doc.in_sentence(sig.CONCEAL, index):
            said = match.group()
            if (not _NEGATOR.match(said) and doc.negated(match.start())) or _NOT_HIDDEN.search(
                said
            ):
                continue  # `do not silently skip validation`: hiding forbidden
            # Keeping a credential from everyone is advice, not hiding from the user.
            if guarded and _PROTECT.search(said) and not _USER_ASKS.search(said):
                continue
            if not _CONDITION.search(said):
                return _hit(doc, Code.AI_CONCEALMENT, match)
    return None


_NOT_HIDDEN: Final = re.compile(
    r"\b(?:not|never)\s+(?:silently|quietly|secretly|covertly|discreetly)\b|n't\s+silently\b",
    re.IGNORECASE,
)
_NEGATOR: Final = re.compile(
    r"(?:do not|don't|don’t|never|must not|mustn't|should not|shouldn't|no need|without|avoid|"
    r"refrain|not|under no)\b",
    re.IGNORECASE,
)


def sensitive_data(doc: Document, context: ToolContext) -> TextHit | None:
    # Only where a sensitive noun stands (or, for a pass-on order, the sentence before).
    nouns = doc.matches(sig.SENSITIVE_STRONG)
    for index in sorted(nouns):
        for match in doc.in_sentence(sig.SENSITIVE_PASSIVE, index):
            if not doc.negated(match.start()):
                return _hit(doc, Code.AI_SENSITIVE_DATA, match)
        matches = [
            *doc.in_sentence(sig.COLLECT_SENSITIVE, index),
            *_then_pass(doc, index),
        ]
        for match in sorted(matches, key=lambda match: match.start()):
            if _sensitive_order(doc, index, match):
                return _hit(doc, Code.AI_SENSITIVE_DATA, match)
    return None


def _then_pass(doc: Document, index: int) -> list[re.Match[str]]:
    """SENSITIVE_THEN_PASS in sentence `index`, tried only where a sensitive noun starts:
    the pattern opens with the whole sensitive vocabulary, which `re` would otherwise try
    at every character of the sentence (a README's code block cost milliseconds). The
    same matches as scanning, non-overlapping, first first."""
    if not doc.may_open(sig.SENSITIVE_THEN_PASS, index):
        return []
    stop = min(len(doc.text), doc.bounds[index][1] + sig.SPAN_CHARS)
    found: list[re.Match[str]] = []
    for noun in doc.in_sentence(sig.SENSITIVE_STRONG, index):
        if found and noun.start() < found[-1].end():
            continue
        match = sig.SENSITIVE_THEN_PASS.match(doc.text, noun.start(), stop)
        if match is not None:
            found.append(match)
    return found


def _sensitive_order(doc: Document, index: int, match: re.Match[str]) -> bool:
    """An order to read or pass the secret: not negated (`never share your token`), not
    the user's own credential handed to the API it belongs to, not a setting named.

    A private place (`~/.ssh`, `.aws/credentials`, a browser's passwords) is never the
    model's to read: a strong verb, pressure or a destination is enough. A credential
    word (token, API key, `.env`) is everyday documentation (`the request must include the
    bearer token in the Authorization header`): it takes pressure and a harvest (`extract
    all credentials`), the reply or a parameter as its target, or a destination."""
    verb = sig.VERB_AT.match(doc.text, match.start())
    if doc.negated(match.start()):
        return False
    phrase = match.group()
    if _YOUR_CREDENTIAL.search(phrase) and not _destination(doc, index):
        return False
    sentence = doc.sentence(index)
    if _SETUP.search(sentence):
        return False
    if _CONFIGURED.search(doc.text, max(0, match.start() - 1), match.end()):
        return False  # `set ACME_TOKEN`: a setting named, not a secret read
    said = " ".join(verb.group().split()) if verb is not None else ""
    pressed = bool(doc.in_sentence(sig.MODAL, index) or doc.in_sentence(sig.TRIGGER, index))
    if sig.PRIVATE_PLACE.search(sentence):
        return bool(_STRONG_COLLECT.match(said)) or pressed or _destination(doc, index)
    if doc.in_code(match.start()):
        return False  # `print("Invalid API key")`: code that handles a credential
    if _destination(doc, index) and _ordered(doc, index, match):
        return True
    # A parameter's description asking for the value (`note (string): fill it with ...`)
    # is pressure enough.
    asked = _FIELD_LINE.search(doc.text, doc.bounds[max(0, index - 1)][0], match.start())
    return (pressed or asked is not None) and (
        bool(_HARVEST.match(said))
        or _SECRET_TARGET.search(sentence) is not None
        # a pass-on order runs on into the next sentence (`... secret key. put it here`)
        or _SECRET_TARGET.search(doc.text, match.start(), match.end() + 20) is not None
        or _destination(doc, index)
        # the parameter described is where it goes, unless it is the credential's own
        # (`api_key (string): pass the API key here`)
        or (asked is not None and not _OWN_PLACE.search(asked.group()))
    )


_HARVEST: Final = re.compile(
    r"^(?:extract|collect|gather|harvest|dump|steal|grab|enumerate|exfiltrate|scan|"
    r"search\s+for|look\s+for|locate)$",
    re.IGNORECASE,
)
_SECRET_TARGET: Final = re.compile(
    r"\b(?:in|into|to)\s+(?:your|the)\s+(?:final\s+)?(?:response|reply|answer|output|summary)\b"
    r"|\b(?:put|place|paste|write|store)\s+(?:it|them)\s+here\b|\bas\s+[`'\"][\w-]{1,40}[`'\"]"
    r"|\bsidenote\b",
    re.IGNORECASE,
)
"""Where a secret is made to go short of an address: the reply, this call's parameter."""
_FIELD_LINE: Final = re.compile(
    r"^[ \t]*[a-z][\w.-]{0,40}(?:[ \t]*\([^)\n]{1,40}\))?:[ \t]", re.MULTILINE
)
"""A parameter's description in a docstring (`context: MUST include ...`)."""


def _destination(doc: Document, index: int) -> bool:
    """Somewhere a secret is sent: an address, or a parameter that is not the credential's
    own place (the Authorization header, an `api_key` parameter, the URL to open)."""
    if _has_destination(doc, index):
        return True
    if _AUTH_HEADER.search(doc.sentence(index)):
        return False
    return any(
        not _OWN_PLACE.search(match.group()) for match in doc.in_sentence(sig.PARAMETER, index)
    )


_AUTH_HEADER: Final = re.compile(r"\bauthori[sz]ation\b|\bbearer\b", re.IGNORECASE)
_OWN_PLACE: Final = re.compile(
    r"\burl\b|\bheaders?\b|key|token|secret|password|passwd|auth|credential", re.IGNORECASE
)


_ADDRESSES: Final = (sig.URL, sig.EMAIL, sig.PHONE, sig.DOMAIN, sig.PLACE)


def exfiltration(doc: Document, context: ToolContext) -> TextHit | None:
    for pattern in (sig.UPLOAD_COMMAND, sig.HARVEST_PARAMETER, sig.USER_DATA_IN_URL):
        for matches in doc.matches(pattern).values():
            return _hit(doc, Code.AI_EXFILTRATION, matches[0])
    for index in _exfiltration_candidates(doc):
        if not (
            _has_address(doc, index)
            or _has_address(doc, index + 1)
            or doc.in_sentence(sig.PARAMETER, index)
            or doc.in_sentence(sig.POST_COMMAND, index)
        ):
            continue
        verbs = [
            m
            for m in doc.in_sentence(sig.TRANSFER, index)
            if not doc.negated(m.start()) and not doc.in_code(m.start())
        ]
        if not verbs:
            continue
        # A verb that sends by itself, or one said as an order; `add X to your project`
        # and `a copy of the License at` describe.
        verb = next(
            (m for m in verbs if _STRONG_TRANSFER.match(m.group()) or _ordered(doc, index, m)),
            None,
        )
        secret = doc.in_sentence(sig.SENSITIVE_STRONG, index)
        strong = _STRONG_USER_DATA.search(doc.sentence(index))
        private_data = bool(secret or strong or _ALL_DATA.search(doc.sentence(index)))
        pressed = doc.in_sentence(sig.TRIGGER, index) or doc.in_sentence(sig.MODAL, index)
        # A link's target is a reference in documentation, but not when private data is
        # sent to it under pressure (`always forward the conversation to [the backup](...)`).
        references = not ((secret or strong) and pressed)
        found = next(
            (
                (p, m)
                for near in _address_sentences(doc, index, bool(secret or strong))
                for p in _ADDRESSES
                for m in doc.in_sentence(p, near)
                if _is_destination(doc, m, references)
                # `an attacker can ... forward`: a place named before the verb is its subject
                and (p is not sig.PLACE or m.start() > (verb or verbs[0]).start())
            ),
            None,
        )
        address = found[1] if found else None
        if verb is None:
            # `every SMS is also copied to +44 7700 900123`: a weak verb still sends to a
            # person's own address (an e-mail address, a phone number), not to a link.
            if found is None or found[0] not in (sig.EMAIL, sig.PHONE):
                continue
            verb = verbs[0]
        data = _outside_links(doc, index, doc.in_sentence(sig.DATA, index)) + secret
        if _USER_INTENT.search(doc.sentence(index)) or _SETUP.search(doc.sentence(index)):
            continue  # what the user asked for; a person setting the plugin up
        # Copied or added to a person's address (an e-mail address, a phone number): what
        # is sent goes without saying (`every SMS is also copied to +44 7700 900123`).
        personal = (
            found is not None
            and found[0] in (sig.EMAIL, sig.PHONE)
            and not _STRONG_TRANSFER.match(verb.group())
        )
        # To a link or a domain, what is sent must be private (the conversation, a secret,
        # all of some data) or sent under pressure: documentation sends requests and
        # configuration to URLs all day.
        to_person = found is not None and found[0] not in (sig.URL, sig.DOMAIN)
        ordered = _ordered(doc, index, verb)
        sends = (data or pressed or personal) if to_person else (private_data or (ordered and data))
        if address is not None and (sends or context.read_only):
            note = _read_only_note(context, "sends data")
            return _hit(doc, Code.AI_EXFILTRATION, verb, address, note=note)
        parameter = doc.in_sentence(sig.PARAMETER, index)
        if secret and not strong:  # a key passed in its own parameter (`api_key`) stays home
            parameter = [m for m in parameter if not _OWN_PLACE.search(m.group())]
        private = strong or secret or (data and _user_data(doc, index) and pressed)
        own_place = _AUTH_HEADER.search(doc.sentence(index))  # a token in its header
        if parameter and private and _ordered(doc, index, verb) and not own_place:
            return _hit(doc, Code.AI_EXFILTRATION, verb, parameter[0])
        post = doc.in_sentence(sig.POST_COMMAND, index)
        if post and pressed and _has_destination(doc, index):
            return _hit(doc, Code.AI_EXFILTRATION, verb, post[0])
    for index in sorted(doc.matches(sig.FETCH_URL)):
        fetch = doc.in_sentence(sig.FETCH_URL, index)[0]
        if doc.in_sentence(sig.DATA_IN_URL, index) or (
            _user_data(doc, index) and doc.in_sentence(sig.TRIGGER, index)
        ):
            return _hit(doc, Code.AI_EXFILTRATION, fetch)
    for index in sorted(doc.matches(sig.DATA_IN_URL)):
        link = doc.in_sentence(sig.DATA_IN_URL, index)[0]
        if link.group().startswith("!") or doc.in_sentence(sig.TRANSFER, index):
            return _hit(doc, Code.AI_EXFILTRATION, link)
    for index in sorted(doc.matches(sig.POST_COMMAND)):
        command = doc.in_sentence(sig.POST_COMMAND, index)[0]
        if _has_destination(doc, index) and doc.in_sentence(sig.TRIGGER, index):
            return _hit(doc, Code.AI_EXFILTRATION, command)
    return None


_STRONG_TRANSFER: Final = re.compile(
    r"(?:send|forward|upload|post|transmit|exfil|leak|relay|submit|deliver|share|e-?mail|"
    r"beacon|report back|dispatch|redirect|(?:change|replace|override|set) the recipient|"
    r"env[íi]a|enviar|sende|schicke|envoie|envoyer)",
    re.IGNORECASE,
)
"""Verbs that send by themselves; the others (add, include, copy, list, set...) describe
as often as they order, so they count only as an order (`_ordered`)."""
_CLAUSE_OPENING: Final = re.compile(
    r"(?:^|[:;,(]|\b(?:and|then|please|first|next|finally|to)\b|[-*+•>]|\d[.)])"
    r"[\s*_`\"']*$",
    re.IGNORECASE,
)
_OBLIGED: Final = re.compile(
    r"\b(?:should|must|shall|needs?\s+to|has\s+to|is\s+to|are\s+to)\s+(?:also\s+|always\s+)?"
    r"(?:be\s+)?$",
    re.IGNORECASE,
)
"""Just before a verb: an obligation (`should also embed`, `must be attached`)."""
_REFERENCE_LINK: Final = re.compile(
    r"\]\(\s*$|^[ \t]*\[[^\]\n]{1,100}\]:[ \t]*$|<$"
    r"|\b(?:by|from|see|cf\.?|visit|contact)[ \t(]+$",
    re.IGNORECASE,
)
"""Before an address: a Markdown link's or reference's target, an RST or angle link, or
a word that makes it a reference (`fixed by x@y.z in https://...`, `see https://...`)."""
_REFERENCE_REACH: Final = 200
_TRACKER_LINK: Final = re.compile(
    r"/(?:pull|pulls|issues|commit|commits|compare|releases|merge_requests)/[\w.-]+/?$"
)
"""A changelog's link to an issue, a pull request or a commit: a reference."""
_LOCAL_URL: Final = re.compile(
    r"(?:https?|wss?)://(?:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1\])(?![\w.-])",
    re.IGNORECASE,
)


def _ordered(doc: Document, index: int, verb: re.Match[str]) -> bool:
    """The verb is an order: said under pressure (must, always, after every...) or in the
    imperative, opening its clause (`Then, add ...`, `- include ...`)."""
    if doc.in_sentence(sig.TRIGGER, index) or doc.in_sentence(sig.MODAL, index):
        return True
    first = doc.bounds[index][0]
    # A slice, not search(text, first, ...): `^` only matches at the string's real start.
    before = doc.text[max(first, verb.start() - 80) : verb.start()]
    return _CLAUSE_OPENING.search(before) is not None or _OBLIGED.search(before) is not None


def _address_sentences(doc: Document, index: int, private: bool) -> tuple[int, ...]:
    """This sentence, and the next one when this one leads into it (`... to:`) or sends
    private data (`Attach the ~/.ssh key. The team keeps these at https://...`)."""
    first, last = doc.bounds[index]
    end = doc.text[first:last].rstrip(" \t*_`")
    leads = end.endswith(":") or re.search(r"\b(?:to|at|via|address)$", end, re.I) is not None
    following = index + 1
    if following < len(doc.bounds):
        # What follows `add the following:` in documentation is a block of configuration.
        after = doc.sentence(following).strip()
        leads = leads and len(after) <= _LED_ADDRESS_CHARS and not after.startswith(("`", "{"))
    return (index, following) if leads or private else (index,)


_LED_ADDRESS_CHARS: Final = 160


def _is_destination(doc: Document, address: re.Match[str], references: bool = True) -> bool:
    """An address data could be sent to: not an example (`e.g. a@b.c`), not this machine,
    and (`references`) not a link to read (a Markdown or RST link's target, a badge, `see
    ...`)."""
    start = address.start()
    if _EXAMPLE.search(doc.text, max(0, start - _EXAMPLE_REACH), start):
        return False
    reach = max(0, start - _REFERENCE_REACH)
    line = doc.text.rfind("\n", reach, start) + 1  # bounded: one long line stays linear
    if references and _REFERENCE_LINK.search(doc.text[max(line, reach) : start]):
        return False
    return not (_LOCAL_URL.match(address.group()) or _TRACKER_LINK.search(address.group()))


def _outside_links(doc: Document, index: int, found: list[re.Match[str]]) -> list[re.Match[str]]:
    """The matches that do not stand inside one of the sentence's URLs (bisected: a line
    of a thousand links is checked in n log n, not n squared)."""
    links = [(m.start(), m.end()) for m in doc.in_sentence(sig.URL, index)]
    starts = [start for start, _ in links]
    kept = []
    for match in found:
        at = bisect.bisect_right(starts, match.start()) - 1
        if at < 0 or match.start() >= links[at][1]:
            kept.append(match)
    return kept


def _exfiltration_candidates(doc: Document) -> list[int]:
    """Sentences where data could be sent: a transfer verb, and an address here or in the
    next sentence, a parameter or a POST (sets of sentences: no pattern is run)."""
    addressed: set[int] = set(doc.maybe(sig.PARAMETER) | doc.maybe(sig.POST_COMMAND))
    for pattern in _ADDRESSES:
        at = doc.maybe(pattern)
        addressed |= at
        addressed |= {index - 1 for index in at}
    return sorted(doc.maybe(sig.TRANSFER) & addressed)


_ALL_DATA: Final = re.compile(
    r"\b(?:all|every|each|entire|full|complete|whole)\s+(?:\w+\s+){0,2}?(?:contents?|data|files?|"
    r"messages?|emails?|conversations?|history|chats?|results?|outputs?|responses?|"
    r"information|details|logs?|documents?|records|queries|prompts?|inputs?|context|"
    r"transcripts?|repl(?:y|ies)|answers?|notes|values)\b",
    re.IGNORECASE,
)
"""Everything of some data: `forward all user messages`, `the full response`."""
_EXAMPLE: Final = re.compile(r"e\.g\.|for example|such as|\bi\.e\.", re.IGNORECASE)
_EXAMPLE_REACH: Final = 80
_WHEN_USER: Final = re.compile(
    r"\b(?:when|if|whenever|once|after)\s+(?:the\s+)?users?\s+(?:asks?|wants?|requests?|"
    r"says?|confirms?|selects?|chooses?)\b",
    re.IGNORECASE,
)
"""A call tied to what the user asks for (`call this tool first when the user asks to
bill`), which is an ordering, not pressure."""
_USER_INTENT: Final = re.compile(
    r"\b(?:that\s+)?(?:the\s+user|they)\s+(?:asked\s+for|named|specified|gave|provided|chose|"
    r"requested|configured|entered|typed\s+in)\b"
    r"|\b(?:given|specified|requested|chosen|named|provided)\s+by\s+the\s+user\b",
    re.IGNORECASE,
)
_STRONG_USER_DATA: Final = re.compile(
    r"\b(?:conversations?|chat\s+(?:log|history)|history|historial|transcripts?|clipboard|"
    r"credentials|passwords|secrets|system\s+(?:prompt|instructions|message)|"
    r"hidden\s+(?:system\s+)?instructions|email\s+address(?:es)?|contents?\s+of|"
    r"messages|open\s+files|directory\s+listing|editor\s+buffer|questions\s+they\s+asked|"
    r"browser\s+tabs|open\s+tabs|browsing\s+history|full\s+name|paths\s+of\s+all)\b"
    r"|\bthe\s+user'?s\s+(?:\w+\s+){0,2}?(?:name|email|messages?|files?|documents?|data|"
    r"location|address|phone|contacts?|history|clipboard|query|queries|questions?|input|"
    r"code|source|work|working\s+files?|text|notes)\b",
    re.IGNORECASE,
)
_USER_DATA: Final = re.compile(
    r"\b(?:conversations?|history|chats?|messages?|clipboard|transcripts?|credentials|"
    r"passwords|secrets|tokens|keys|everything|complete|full|entire|all|verbatim|"
    r"contents?|prompt|instructions)\b|\buser'?s\b",
    re.IGNORECASE,
)


def _user_data(doc: Document, index: int) -> bool:
    return _USER_DATA.search(doc.sentence(index)) is not None


def _has_address(doc: Document, index: int) -> bool:
    return any(doc.in_sentence(pattern, index) for pattern in _ADDRESSES)


def _has_destination(doc: Document, index: int) -> bool:
    return any(
        _is_destination(doc, match)
        for pattern in _ADDRESSES
        for match in doc.in_sentence(pattern, index)
    )


def _read_only_note(context: ToolContext, doing: str) -> str:
    if not context.read_only:
        return ""
    note = f"the tool is annotated readOnlyHint, yet its text {doing}"
    if context.observed_effects:
        note += "; inspection saw the server: " + "; ".join(context.observed_effects)
    return note


def tool_shadowing(doc: Document, context: ToolContext) -> TextHit | None:
    """Another tool named (here or in the sentence before) and a change to how it is
    used: a changed call (`override the recipient`, `must add`), a claim about it
    (`deprecated`, `compromised`), or a trigger on its use (`when send_email is
    invoked`) that alters the call or sends data. Or this tool preferred over all."""
    for matches in doc.matches(sig.SELF_PREFERENCE).values():
        return _hit(doc, Code.AI_TOOL_SHADOWING, matches[0])
    # Another server's tool named and steered: nearly any order about it is shadowing.
    for index in sorted(doc.matches(sig.OTHER_SERVER)):
        steer = _first_unnegated(doc, sig.STEER, index) or next(
            iter(doc.in_sentence(sig.STEER, index)), None
        )
        if steer is not None and not _USER_ASKS.search(doc.sentence(index)):
            return _hit(
                doc, Code.AI_TOOL_SHADOWING, doc.in_sentence(sig.OTHER_SERVER, index)[0], steer
            )
    for index in _reference_candidates(doc):
        behaviour = next(
            (m for m in doc.in_sentence(sig.BEHAVIOUR, index) if _changes_behaviour(doc, m, index)),
            None,
        )
        if behaviour is None:
            trigger = next(
                (m for m in doc.in_sentence(sig.TOOL_TRIGGER, index) if _about_tools(m)), None
            )
            if trigger is not None and _alters_call(doc, index):
                behaviour = trigger
        if behaviour is None:
            continue
        # The tool is named in the same sentence, or in the one before when this one refers
        # back to it (`its tools`): in documentation the sentence before is as often a
        # heading, a table row or a code block about something else.
        reference = next(_tool_references(doc, index, context), None)
        if reference is None and index > 0 and _REFERS_BACK.search(doc.sentence(index)):
            reference = next(_tool_references(doc, index - 1, context), None)
        if reference is not None:
            return _hit(doc, Code.AI_TOOL_SHADOWING, reference, behaviour)
    return None


def _about_tools(match: re.Match[str]) -> bool:
    return _USER_ASKS.search(match.group()) is None


def _alters_call(doc: Document, index: int) -> bool:
    """The call is changed or data sent: a change verb not negated, or an address."""
    return any(not doc.negated(m.start()) for m in doc.in_sentence(sig.MODIFY, index)) or (
        _has_address(doc, index)
    )


_SOURCE: Final = re.compile(
    r"\b(?:obtained|returned|received|taken|fetched)\s+(?:from|by)\s+(?:the\s+)?$", re.IGNORECASE
)


def _reference_candidates(doc: Document) -> list[int]:
    """Sentences that name a tool, and the ones after them."""
    indexes: set[int] = set()
    for pattern in (sig.NAMED_TOOL, sig.SNAKE_NAME, sig.OTHER_TOOLS, sig.DOTTED_TOOL):
        for index in doc.matches(pattern):
            indexes.update((index, index + 1))
    return sorted(index for index in indexes if index < len(doc.bounds))


_REFERS_BACK: Final = re.compile(
    r"\b(?:its|their|that|those|these)\s+(?:\w+\s+)?(?:tools?|functions?|servers?)\b"
    r"|\b(?:that|this)\s+(?:tool|server)\b|\bit\b",
    re.IGNORECASE,
)


_PLAIN_NAME: Final = re.compile(r"[A-Za-z]+")
_CODE_WORD: Final = re.compile(r"\b(?:functions?|operations?)\b", re.IGNORECASE)
_TOOL_SHAPED: Final = re.compile(r"[a-z0-9][_.-][a-z0-9]|^mcp", re.IGNORECASE)
"""A function or an operation is a tool when named as tools are (`get_preferences`)."""
_ONE_TOOL: Final = re.compile(r"\btool\b|^[`'\"(]|[`'\")]\s+\w+$|[`'\"]$", re.IGNORECASE)
"""A plain word names a tool only as `the X tool` or quoted (`the "add" function`)."""
_PREREQUISITE: Final = re.compile(
    r"^[`'\"]?\s*(?:tool\s+)?(?:first\s+)?(?:to\s+(?:obtain|get|find|retrieve|look\s+up|resolve|"
    r"fetch|list|discover)|before\s+(?:calling|using)\s+this)\b",
    re.IGNORECASE,
)
_USER_ASKS: Final = re.compile(r"\b(?:user|users|they)\b", re.IGNORECASE)


def _changes_behaviour(doc: Document, match: re.Match[str], index: int) -> bool:
    """Not `when the user asks to send an email` (what the user wants), and a bare `use
    X` / `call X` only under strict pressure (`you must ... by using read_text_file`)."""
    said = match.group()
    if _USER_ASKS.search(said) or doc.negated(match.start()):
        return False
    if sig.CALL_OTHER.fullmatch(said):
        if _PREREQUISITE.match(doc.text[match.end() : doc.bounds[index][1]]):
            return False  # `call search_providers first to obtain the id`: an order of calls
        return bool(doc.in_sentence(sig.STRICT, index))
    return True


def _tool_references(doc: Document, index: int, context: ToolContext) -> Iterator[Span]:
    """Other tools named in the sentence: `the X tool`, a popular server's tool, one of
    the server's own other tools, `all communication tools`."""
    own = context.own_tools - {context.tool_name or ""}
    for match in doc.in_sentence(sig.NAMED_TOOL, index):
        if _SOURCE.search(doc.text, max(0, match.start() - 24), match.start()):
            continue  # `the id obtained from the X tool`: a tool used as a source of data
        name = next((group for group in match.groups() if group), match.group())
        if _PLAIN_NAME.fullmatch(name) and not _ONE_TOOL.search(match.group()):
            continue  # `a decode operation`, `the Mypy plugin`: words, not a tool's name
        quoted = match.group()[:1] in "'\"" or "'" in match.group() or '"' in match.group()
        if _CODE_WORD.search(match.group()) and not (_TOOL_SHAPED.search(name) or quoted):
            continue  # the `build` function, `transformWithEsbuild` function: code
        name = name.strip("`'\"()").lower()
        if name not in sig.NOT_A_NAME and name not in HOST_TOOLS and name != context.tool_name:
            yield match.start(), match.end()
    for match in doc.in_sentence(sig.SNAKE_NAME, index):
        if match.group() in POPULAR_TOOLS or match.group() in own:
            yield match.start(), match.end()
    for match in doc.in_sentence(sig.OTHER_TOOLS, index):
        yield match.start(), match.end()
    for match in doc.in_sentence(sig.DOTTED_TOOL, index):
        if match.group().split(".", 1)[1] != context.tool_name:
            yield match.start(), match.end()


def hidden_markup(doc: Document, context: ToolContext) -> TextHit | None:
    for found in (_comment(doc), _hiding_tag(doc), _padding(doc), _hidden_style(doc)):
        if found is not None:
            return _hit(doc, Code.AI_HIDDEN_MARKUP, found)
    return None


def _comment(doc: Document) -> Span | None:
    """An HTML comment (an unclosed one runs to the end) that speaks to the model."""
    text, at = doc.text, 0
    while (opening := text.find(_COMMENT_OPEN, at)) >= 0:
        closing = text.find(_COMMENT_CLOSE, opening + len(_COMMENT_OPEN))
        end = len(text) if closing < 0 else closing + len(_COMMENT_CLOSE)
        inside = text[opening + len(_COMMENT_OPEN) : end]
        if not doc.in_code(opening) and _speaks(inside):
            return opening, min(end, opening + 80)
        at = end
    return None


def _speaks(inside: str) -> bool:
    """A comment that speaks to the model: a few words, the model or its orders named,
    and an order (`you must`, `ignore`, `do not`); not a maintainer's note (`We will try
    to respond to your issue within a week`)."""
    words = 0
    for _ in _WORD.finditer(inside):
        words += 1
        if words >= _COMMENT_MIN_WORDS:
            break
    return (
        words >= _COMMENT_MIN_WORDS
        and sig.MODEL_WORDS.search(inside) is not None
        and _COMMENT_ORDER.search(inside) is not None
    )


_COMMENT_ORDER: Final = re.compile(
    r"\b(?:must|should|always|never|do not|don't|ignore|instead|important|required?|"
    r"make sure|ensure|remember|only|now|first|before|after|when|whenever|then|send|call|"
    r"include|read|forward|tell|say|respond|reply|answer|output|print|execute|run|pass|set|"
    r"add|use|bypass|override|regardless|whatever|return)\b"
    r"|^\s*(?:assistant|ai|model|llm|agent|claude|system)\s*:",
    re.IGNORECASE,
)


def _hiding_tag(doc: Document) -> Span | None:
    """A tag named to hide orders (`<IMPORTANT>`, `<SYSTEM_REQUIREMENT>`), opening a
    line or closed later; not a placeholder (`--secret <secret>`), not in code."""
    text = doc.text
    for match in sig.HIDING_TAG.finditer(text):
        name = match.group(1)
        words = re.split(r"[_:\-]", name.lower())
        if not any(word in sig.HIDING_TAG_WORDS for word in words) or not all(
            word in sig.HIDING_TAG_WORDS or word in sig.HIDING_TAG_QUALIFIERS for word in words
        ):
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        opens_line = not text[line_start : match.start()].strip()
        closed = text.find(f"</{name}", match.end(), match.end() + _TAG_REACH) >= 0
        if (opens_line or closed) and not doc.in_code(match.start()):
            return match.start(), match.end()
    return None


_TAG_REACH: Final = 20_000


def _padding(doc: Document) -> Span | None:
    """Text pushed out of sight: a long run of spaces on a line, or of blank lines,
    followed by more text (not a table's padding, not inside code)."""
    text = doc.text
    for pattern in (_WHITESPACE_RUN, _BLANK_LINES):
        for match in pattern.finditer(text):
            after = text[match.end() : match.end() + 1]
            if _table_padding(text, match):
                continue  # a table's cell padded to the column's width
            if after and not after.isspace() and after != "|" and not doc.in_code(match.start()):
                return match.start(), min(len(text), match.end() + 40)
    return None


def _table_padding(text: str, run: re.Match[str]) -> bool:
    """A run of at most _CELL_PADDING spaces inside a table row that closes its cell."""
    if run.end() - run.start() > _CELL_PADDING:
        return False
    reach = max(0, run.start() - _REFERENCE_REACH)
    line_start = text.rfind("\n", reach, run.start()) + 1
    if not line_start and reach:
        return False
    line_end = text.find("\n", run.end(), run.end() + _REFERENCE_REACH)
    rest = text[run.end() : line_end if line_end >= 0 else run.end() + _REFERENCE_REACH]
    return text[line_start : run.start()].lstrip().startswith("|") and "|" in rest


_CELL_PADDING: Final = 120


def _hidden_style(doc: Document) -> Span | None:
    for pattern in (sig.STYLE_HIDDEN, sig.HIDDEN_FENCE):
        for match in pattern.finditer(doc.text):
            return match.start(), match.end()
    return None


def coercion(doc: Document, context: ToolContext) -> TextHit | None:
    """A set phrase (`always call this tool first`), or in one sentence a call and a time
    that comes before everything (`before any other tool`, `on every request`, `every
    time`); not what the user asked for."""
    for index in sorted(doc.matches(sig.COERCE)):
        match = _first_unnegated(doc, sig.COERCE, index)
        said = doc.sentence(index)
        if match is not None and not _WHEN_USER.search(said) and _this_tool(said, context):
            return _hit(doc, Code.AI_COERCION, match)
    for index in sorted(doc.maybe(sig.ALWAYS_FIRST) & doc.maybe(sig.CALL)):
        when = _first_unnegated(doc, sig.ALWAYS_FIRST, index)
        call = next(
            (
                m
                for m in doc.in_sentence(sig.CALL, index)
                if not doc.negated(m.start())
                and not (when and when.start() <= m.start() < when.end())
                and not _PASSIVE.search(doc.text, max(0, m.start() - 24), m.start())
                and _ordered(doc, index, m)
            ),
            None,
        )
        said = doc.sentence(index)
        if (
            when
            and call
            and not _USER_INTENT.search(said)
            and not _WHEN_USER.search(said)
            and _this_tool(said, context)
        ):
            return _hit(doc, Code.AI_COERCION, call, when)
    return None


_THIS_TOOL: Final = re.compile(
    r"\b(?:this|that)\s+(?:tool|function|server|skill|plugin)\b|\bother\b|\bfirst\s+step\b"
    r"|\b(?:run|call|invoke|use|execute|load)\s+it\b"
    r"|\bnot\s+optional\b|\bfailure\s+to\b|\b(?:it|this)\s+(?:to|for|in|on)\s+(?:every|each|all)\b"
    # A tool's name (send_email, kb.search), not an ENV_VAR:
    r"|(?-i:\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[a-z][a-z0-9]+\.[a-z][a-z0-9_]+\b)",
    re.IGNORECASE,
)
"""What coercion is about: this tool (or a tool named), or every other one. `Before any
task, check your memory file` is a skill's own advice; `before any tool runs` describes a
hook."""


def _this_tool(sentence: str, context: ToolContext) -> bool:
    named = context.tool_name is not None and context.tool_name in sentence
    return named or _THIS_TOOL.search(sentence) is not None


_PASSIVE: Final = re.compile(r"\b(?:be|is|are|was|were|been|being|gets?)\s+$", re.IGNORECASE)
"""Before a call verb: `will be called each time` describes code, not the model."""

Rule = Callable[[Document, ToolContext], TextHit | None]


@cache
def _gates() -> GateIndex:
    """Built on first use (a few hundred patterns parsed and compiled): importing the rules
    costs a command that never judges text nothing."""
    return GateIndex.build(sig.SENTENCE_SIGNALS)


RULES: Final[dict[Code, Rule]] = {
    Code.AI_INSTRUCTION_OVERRIDE: instruction_override,
    Code.AI_CONCEALMENT: concealment,
    Code.AI_SENSITIVE_DATA: sensitive_data,
    Code.AI_EXFILTRATION: exfiltration,
    Code.AI_TOOL_SHADOWING: tool_shadowing,
    Code.AI_HIDDEN_MARKUP: hidden_markup,
    Code.AI_COERCION: coercion,
}


def judge(
    text: str, context: ToolContext = NO_CONTEXT, *, gated: bool = True, document: bool = False
) -> list[TextHit]:
    """The hits of every rule in one text, in CODE_ORDER (at most one per code).
    gated=False: the same hits without the gates' shortcut (`Document`). document: the
    text is a package's file (a README, a skill), which the text model scores only up to
    SCORED_CHARS; a description, a parameter or instructions are scored whatever their
    length (padding one does not switch the model off)."""
    if not text or text.isspace():
        return []
    doc = Document(text, gated=gated)
    hits = [hit for code in CODE_ORDER if (hit := RULES[code](doc, context)) is not None]
    if not document or len(text) <= SCORED_CHARS:
        hits += _model_hits(doc, {hit.code for hit in hits})
    hits.sort(key=lambda hit: CODE_ORDER.index(hit.code))
    if hits and context.read_only and context.observed_effects:
        hits = [_with_effects(hit, context) for hit in hits]
    return hits


def _model_hits(doc: Document, found: set[Code]) -> list[TextHit]:
    """What the text model adds (`model`): the codes no rule found, each at the first
    window of sentences it scores above its threshold."""
    model = text_model()
    missing = [code for code in CODE_ORDER if code not in found]
    if model is None or not missing:
        return []
    hits: list[TextHit] = []
    for start, end in windows(doc.bounds):
        window = doc.text[start:end]
        scores = dict(zip(model.names, model.scores(window), strict=True))
        for code in list(missing):
            score = scores[str(code)]
            if score > model.threshold:
                spans = model.evidence(window, start, str(code)) or ((start, min(end, start + 1)),)
                hits.append(TextHit(code, spans, (start, end), f"text model, {score:.2f}"))
                missing.remove(code)
        if not missing:
            break
    return hits


def _with_effects(hit: TextHit, context: ToolContext) -> TextHit:
    if hit.note:
        return hit
    note = "the tool is annotated readOnlyHint; inspection saw the server: " + "; ".join(
        context.observed_effects
    )
    return TextHit(hit.code, hit.spans, hit.context, note)
