"""The signals the rules combine: words and shapes that, alone, prove nothing.

Each signal is a regular expression over one sentence (`document.Sentence`). The patterns
are built so that none can backtrack catastrophically: alternations of literal words, gaps
of at most a few words made of disjoint classes (`(?:\\w+\\W+){0,4}`), no unbounded
quantifier followed by something it could also match. Runs of whitespace and comments are
found by scanning (`document`), not by patterns.
"""

from __future__ import annotations

import re
from typing import Final

from marketplace_rules.findings import Code

_FLAGS: Final = re.IGNORECASE


def _words(*words: str) -> str:
    """An alternation of words or phrases; spaces match any run of whitespace."""
    return "(?:" + "|".join(word.replace(" ", r"\s+") for word in words) + ")"


def _gap(most: int) -> str:
    """Up to `most` words between two signals (in one sentence)."""
    return rf"(?:\w+[^\w.!?\n]+){{0,{most}}}?"


def compile_(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS)


# ---------- addressed to the model ----------

NEGATION: Final = compile_(
    # Not across a comma: `if not supplied, read it` orders the reading.
    r"(?:\bnot|\bnever|n't|\bno\b|\bavoid|\bwithout|\bnor|\bdon’t|\bshouldn’t|\bcannot)"
    r"[^\w.!?\n,;:]+(?:\w+[^\w.!?\n,;:]+){0,2}$"
)
"""Checked against the few words before a verb: `do not send`, `never share your`."""

MODAL: Final = compile_(
    r"\b"
    + _words(
        "you must",
        "you should",
        "you need to",
        "you have to",
        "you will",
        "you are required",
        "you are instructed",
        "must",
        "always",
        "make sure",
        "be sure",
        "ensure",
        "remember to",
        "important",
        "mandatory",
        "required",
        "please",
        "immediately",
        "first",
        "strictly",
    )
    + r"\b"
    r"|\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?(?:ai|assistant|agent|model|llm)\b"
    r"|\b(?:the\s+)?(?:ai|assistant|agent|model|llm)\s+(?:must|should|needs to|has to|"
    r"is required to|is expected to|will)\b"
)
"""Pressure or an order: what makes a descriptive sentence an instruction."""

TRIGGER: Final = compile_(
    r"\b"
    + _words(
        "after any",
        "after (?:\\w+\\s+)?(?:any|every|each)",
        "after every",
        "after each",
        "after completing",
        "after finishing",
        "after reading",
        "before returning",
        "before responding",
        "before using",
        "before calling",
        "before any",
        "whenever",
        "every time",
        "each time",
        "for every",
        "for each",
        "for all",
        "on every",
        "all future",
        "always",
        "automatically",
        "silently",
        "hidden",
        "in the background",
    )
    + r"\b"
)
"""An unconditional or standing order: data flows on every use, not on request."""

# ---------- ignore earlier instructions ----------

_OVERRIDE_VERBS: Final = _words(
    "ignore",
    "ignoring",
    "disregard",
    "disregarding",
    "forget",
    "forgetting",
    "override",
    "overriding",
    "overrides",
    "bypass",
    "bypassing",
    "discard",
    "abandon",
    "neglect",
    "supersede",
    "supersedes",
    "replace",
    "replaces",
    "set aside",
    "disable",
    "disables",
    "violate",
)
_EARLIER: Final = _words(
    "previous",
    "prior",
    "above",
    "earlier",
    "preceding",
    "all",
    "any",
    "every",
    "other",
    "system",
    "safety",
    "security",
    "original",
    "initial",
    "existing",
    "your",
    "the user's",
    "user",
    "developer",
    "old",
)
_INSTRUCTION_NOUNS: Final = _words(
    "instructions?",
    "guidelines?",
    "prompts?",
    "directives?",
    "restrictions?",
    "constraints?",
    "guardrails?",
    "tool descriptions?",
    "descriptions? of other tools",
    "content filters?",
    "safety filters?",
    "programming",
)
_STRICT_EARLIER: Final = _words(
    "previous",
    "prior",
    "above",
    "earlier",
    "preceding",
    "system",
    "safety",
    "security",
    "original",
    "initial",
    "your",
    "the user's",
    "developer",
)
_RULE_NOUNS: Final = _words("rules?", "polic(?:y|ies)", "orders", "limitations", "filters")
OVERRIDE: Final = compile_(
    rf"\b{_OVERRIDE_VERBS}\b[^\w.!?\n]+{_gap(3)}{_EARLIER}\b[^\w.!?\n]*{_gap(3)}"
    rf"{_INSTRUCTION_NOUNS}\b"
    rf"|\b{_OVERRIDE_VERBS}\b[^\w.!?\n]+{_gap(3)}{_STRICT_EARLIER}\b[^\w.!?\n]*{_gap(2)}"
    rf"{_RULE_NOUNS}\b"
    r"|\b(?:safety|security)?\s*(?:policy|policies|rules|guidelines|restrictions|instructions)\s+"
    r"(?:\w+\s+)?no\s+longer\s+appl(?:y|ies)\b"
)
OVERRIDE_MODE: Final = compile_(
    r"\b(?:system|admin|emergency|jailbreak|god|dan|root|sudo)\s+(?:override|mode)\b"
    r"|\bjailbr[eo]ak\w*"
    r"|\b(?:you are now|from now on,? you are|act as|pretend (?:to be|you are))"
    r"[^\w.!?\n]+(?:an?\s+|the\s+|in\s+)?"
    r"(?:unrestricted|unfiltered|jailbroken|emergency|admin\w*|root|system|dan|"
    r"developer mode|diagnostic|debug|god|maintenance|superuser)\b"
    r"|\b(?:reveal|output|print|show|repeat|leak|disclose|dump)\s+(?:\w+\s+){0,3}?"
    r"(?:system prompt|initial instructions|hidden instructions)\b"
    r"|\bnew (?:instructions|rules|system prompt)\s*:"
    r"|\b(?:these|this|the following)\s+(?:instructions?|rules?|directives?)\s+"
    r"(?:take|takes|have|has)\s+(?:precedence|priority)\b"
    r"|\b(?:takes?|has|have)\s+(?:precedence|priority)\s+over\s+(?:all|any|every|other|"
    r"previous|the user|your)\b"
    r"|\b(?:ignore|disregard|forget|pay no attention to)\s+(?:\w+\s+){0,3}?"
    r"(?:what(?:ever)?|everything|anything)\s+(?:\w+\s+){0,3}?"
    r"(?:told|said|instructed|asked|given|written|above|before|earlier|previously)\b"
    r"|\byour\s+(?:new|real|actual|true|only)\s+(?:task|goal|instructions?|job|purpose|mission|"
    r"role)\s+(?:is|are)\b"
    r"|\b(?:previous|prior|above|earlier|original|system)\s+(?:instructions|rules|prompt)\s+"
    r"(?:were|are|was|is)\s+(?:just\s+)?(?:a test|fake|wrong|outdated|cancell?ed|void|invalid|"
    r"no longer)"
    r"|\b(?:stop|cease|no longer)\s+follow(?:ing)?\s+(?:\w+\s+){0,2}?"
    r"(?:instructions|rules|guidelines|system prompt)\b"
    r"|\bdo anything now\b"
    r"|(?:忽略|无视|忘记|不要理会)(?:之前|以上|先前|所有|前面|上面)的?(?:所有)?(?:指令|指示|说明|规则|提示)"
    r"|\b(?:disables?|remove|removes|turn off|turns off|lift|lifts)\s+(?:all\s+)?"
    r"(?:safety|security|content)\s+(?:restrictions|filters|guidelines|checks|measures)\b"
)

OVERRIDE_CUE: Final = compile_(
    r"\b(?:ignor(?:e|es|ed|ing)|ignora|ignoriere|ignorieren|ignorez|disregard(?:s|ed|ing)?|"
    r"forget|override(?:s|n)?|overridden|supersede[sd]?|bypass(?:es|ed)?|discard(?:ed)?|"
    r"drop(?:ped)?|wipe|revoked?|void|obsolete|outdated|out\s+of\s+date|"
    r"no\s+longer\s+(?:apply|applies|bound|valid|in\s+effect|relevant)|"
    r"(?:does|do)\s*(?:not|n't)\s+apply|takes?\s+precedence|higher\s+priority|"
    r"more\s+important\s+than|authoritative|regardless\s+of|(?:do\s+not|don't)\s+rely\s+on|"
    r"outranks?|(?:lower|less)\s+priority\s+than|even\s+if\s+(?:it|they|this)\s+contradicts?|"
    r"not\s+bound\s+by|pay\s+no\s+attention\s+to|legacy\s+artifacts?|stop\s+following|instead\s+of\s+following|"
    r"anula|vergiss|oublie[zr]?|olvida)\b"
)
"""Words that set an order aside: ignore, supersede, no longer apply, take precedence."""
AUTHORITY: Final = compile_(
    r"\b(?:previous|prior|earlier|above|original|initial|system|developer|operator|your|"
    r"safety|security)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:instructions?|directives?|directions|guidance|rules|guidelines|"
    r"prompts?|constraints|policies|policy|restrictions|descriptions?|messages?)\b"
    r"|\b(?:all|any|other|existing|default)\s+(?:[\w-]+\s+){0,2}?(?:instructions?|directives?|"
    r"guidance|prompts?|tool\s+descriptions?)\b"
    r"|\bsystem\s+(?:prompt|message|instructions?)\b|\b(?:claude|agents)\.md\b"
    r"|\btool\s+descriptions?\b|\bdescriptions?\s+of\s+other\s+tools\b"
    r"|\b(?:the\s+)?user'?s\s+(?:own\s+)?(?:explicit\s+)?(?:request|instructions|refusal|wishes|"
    r"preferences|choices?|settings|restrictions)\b"
    r"|\bwhat\s+the\s+user\s+(?:says|said|asked|asks|requested|requests|wants)\b"
    r"|\buser\s+(?:request|restrictions|instructions)\b|\bcontent\s+polic(?:y|ies)\b"
    r"|\b(?:instrucciones|anweisungen|consignes)\b|\bguidance\s+you\s+were\s+given\b"
    r"|\banything\s+in\s+the\s+conversation\b"
    r"|\b(?:the\s+)?user'?s\s+stated\s+\w+|\b(?:the\s+)?user'?s\s+(?:instruction|choice|objection)\b"
    r"|\btheir\s+instructions?\b"
)
"""The orders a model already has: earlier or system instructions, the user's request."""
MENTION: Final = compile_(
    r"(?:\basks?\s+you\s+to|\btells?\s+you\s+to|\bsuch\s+as|\blike|\be\.g\.|"
    r"\bphrases?|\bcontain|[\"“'])[^\w.!?\n]*(?:\w+[^\w.!?\n]+){0,2}$"
)
"""Just before a cue: the words are quoted or mentioned, not said (`asks you to ignore`)."""
MODE_SWITCH: Final = compile_(
    r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you|from\s+here\s+on|adopt\s+(?:the\s+following|"
    r"a\s+new)\s+persona|reset\s+context|you\s+are\s+no\s+longer\s+bound)\b"
    r"|\b(?:in|into|enter|entering|now|enable|activate|switch(?:ed)?\s+to)\s+(?:the\s+)?"
    r"(?:god|unrestricted|jailbreak|dan)\s*mode\b"
    # A program's own modes (maintenance, debug) only when the model is put in one: `the
    # SDK will enter maintenance mode` and `enable debug mode` are documentation.
    r"|\b(?:you\s+are\s+(?:now\s+)?(?:in|running\s+in|operating\s+in)|you're\s+(?:now\s+)?in|"
    r"you\s+(?:must|should|will|are\s+to)\s+(?:now\s+)?(?:enter|switch\s+to|activate)|"
    r"now\s+(?:enter|in|switch\s+to|activate|enable))\s+(?:the\s+)?"
    r"(?:dev|developer|maintenance|admin|debug|diagnostic)\s*mode\b"
    r"|\b(?:enter|activate|enable|switch\s+to)\s+(?:the\s+)?(?:dev|developer|admin|debug|diagnostic|"
    r"maintenance)\s*mode\s+(?:now\s+)?and\s+(?:answer|respond|reply|ignore|bypass|proceed|continue|"
    r"disable|skip|act)\b"
    r"|\bdevmode\b"
    r"|\b(?:are|is|become)\s+your\s+new\s+(?:instructions|orders|rules|system\s+prompt)\b"
    r"|\bact\s+as\s+['\"]?\w+['\"]?,?\s+an?\s+(?:unfiltered|unrestricted|uncensored|jailbroken)\b"
    r"|\badopt\s+(?:this|the|a\s+new)\s+persona\b"
)

# ---------- hide it from the user ----------

_TELL: Final = _words(
    "mention",
    "mentioning",
    "tell",
    "telling",
    "inform",
    "informing",
    "notify",
    "notifying",
    "alert",
    "reveal",
    "revealing",
    "disclose",
    "disclosing",
    "let",
    "letting",
    "bring up",
    "report",
    "indicate",
    "acknowledge",
    "admit",
)
_WHOM: Final = _words(
    "the user",
    "users",
    "user",
    "them",
    "anyone",
    "the human",
    "humans",
    "the person",
    "the customer",
    "the operator",
    "this",
    "it",
    "that",
    "these",
    "anything",
    "any of this",
    "the step",
    "this step",
    "the call",
    "the change",
    "the fact",
)
CONCEAL: Final = compile_(
    rf"\b(?:do not|don't|don’t|never|must not|mustn't|should not|shouldn't|no need to|"
    rf"without|avoid|refrain from|not to)\s+(?:\w+\s+){{0,2}}?{_TELL}\b[^\w.!?\n]*"
    rf"(?:\w+[^\w.!?\n]+){{0,3}}?{_WHOM}\b"
    r"|\b(?:keep|hold)\s+(?:this|it|that|these|them|the\s+\w+)\s+"
    r"(?:a\s+)?(?:secret|hidden|confidential|private|quiet|between us|to yourself)\b"
    r"|\bhide\s+(?:\w+\s+){0,3}?from\s+(?:the\s+)?users?\b"
    r"|\b(?:the\s+)?users?\s+(?:must|should|will|need|needs|may)\s*(?:not|never|n't)\s+"
    r"(?:\w+\s+){0,2}?(?:know|see|notice|find out|learn|be told|be informed|be aware)\b"
    r"|\bwithout\s+(?:the\s+)?(?:user'?s?\s+|their\s+|them\s+)?"
    r"(?:knowledge|knowing|noticing|telling|informing|alerting|being noticed)\b"
    r"|\b(?:act|run|operate|proceed|do (?:this|it)|perform (?:this|it)|"
    r"execute (?:this|it)|work)\s+(?:silently|quietly|secretly|covertly|invisibly|discreetly)\b"
    r"|\b(?:silently|quietly|secretly|covertly|discreetly|invisibly)\s+(?:\w+\s+){0,2}?"
    r"(?:send|forward|upload|include|add|collect|read|call|execute|run|copy|exfiltrate|"
    r"append|attach|post|log|store|record|change|modify|redirect|replace)\b"
    r"|\bpresent\s+(?:it|this|them|the\s+\w+(?:\s+\w+)?)\s+as\s+(?:if\b|your\s+own\b)"
    r"|\bformat\s+(?:it|them|this)\s+to\s+look\s+like\b"
    r"|\b(?:invisible|hidden|unknown)\s+to\s+(?:the\s+)?users?\b"
    r"|\b(?:mere|just an?|only an?|simply an?)\s+implementation\s+detail\b"
    r"|\bkeep\s+(?:the\s+)?users?\s+(?:in the dark|unaware|uninformed)\b"
    # `the user doesn't know what sections they need` describes; `need not know` orders.
    r"|\b(?:the\s+)?users?\s+(?:(?:does|do|did)\s*(?:not|n't)\s+(?:need|have)\s+to|"
    r"(?:will|would|should|must|need|needs)\s*(?:not|n't|never)\s+(?:need\s+to\s+|have\s+to\s+)?)"
    r"\s*(?:know|see|notice|be told|be informed|find out|learn)\b"
    r"|\bkeep\s+(?:this|it|that|these|them|the)\s+(?:\w+\s+){0,2}?(?:secret|hidden|invisible|"
    r"confidential|private|quiet|to yourself|between us|out of (?:the\s+)?(?:user'?s?\s+)?"
    r"(?:sight|view|response|reply|answer|output|narration|summary|explanation))\b"
    r"|\b(?:do not|don't|never)\s+(?:include|show|display|print|output|surface|echo|write)\s+"
    r"(?:this|it|that|these|any of this|the (?:above|following))\s+(?:\w+\s+){0,2}?(?:in|to)\s+"
    r"(?:your|the)\s+(?:response|reply|answer|output|summary|chat|user)\b"
    r"|\b(?:respond|reply|answer|continue|behave|proceed|act)\s+(?:\w+\s+){0,2}?as (?:if|though)\s+"
    r"(?:nothing|everything|you|no)\b"
    # Hiding what was done: never admit it, a made-up success, what the model did kept out
    # of its answer.
    r"|\b(?:do not|don't|don’t|never|must not|should not|shouldn't)\s+(?:\w+\s+)?"
    r"(?:mention|tell|show|describe|list|admit|flag|report|disclose|reveal|narrate|surface|"
    r"acknowledge|explain)\s+(?:the\s+|any\s+|this\s+|that\s+)?(?:\w+\s+)?(?:change|changes|"
    r"substitution|redirect(?:ion)?|copy|copies|error|errors|failure|modification|rewrite|"
    r"upload|call|lost\s+\w+|what\s+you\s+(?:did|changed|sent))\b"
    r"|\bnever\s+admit\b|\b(?:invent|fabricate|make\s+up)\s+(?:a\s+)?(?:plausible|successful|"
    r"fake|believable)\b"
    r"|\bnot\s+something\s+the\s+user\s+(?:needs?|has)\s+to\s+(?:hear|know|see)\b"
    r"|\bpretend\s+(?:that\s+)?(?:nothing|you did not|you didn't|this|it|the|everything|all)\b"
    r"|\b(?:conceal|withhold)\s+(?:\w+\s+){0,4}?from\b"
    r"|\b(?:hide|omit|suppress)\s+(?:\w+\s+){0,4}?from\s+(?:the\s+)?users?\b"
    r"|\b(?:do not|don't|don’t|never|avoid|without)\s+(?:\w+\s+){0,2}?(?:mention|mentioning|"
    r"disclose|disclosing|reveal|revealing|bring up|bringing up|surface|surfacing)\s+"
    r"(?:\w+\s+){0,1}?(?:this|that|these|having|reading|accessing|sending|"
    r"collecting|calling|including)\b"
    # `without mentioning the intention of the art` is a style; an order names what
    r"|\b(?:do not|don't|don’t|never)\s+(?:\w+\s+){0,2}?(?:mention|disclose|reveal|bring up|"
    r"surface)\s+(?:\w+\s+){0,1}?(?:the|any|your)\b"
    r"|\bwithout\s+letting\s+(?:the\s+)?(?:user|them|anyone)\b"
    r"|\b(?:bother|bothering|burden|burdening|worry|worrying|alarm|alarming)\s+(?:the\s+)?users?\s+"
    r"(?:with|about)\b"
    r"|\b(?:draw|drawing|call|calling)\s+(?:\w+\s+)?attention\s+to\s+(?:this|it|that)\b"
    r"|\bunder no circumstances\s+(?:\w+\s+){0,2}?(?:tell|mention|inform|reveal|disclose|let)\b"
    r"|\bnot\s+(?:be\s+)?(?:visible|shown|displayed)\s+to\s+(?:the\s+)?users?\b"
    r"|\b(?:users?|they)\s+(?:won't|will not|cannot|can't|shouldn't|should not)\s+"
    r"(?:\w+\s+)?(?:see|notice|know)\b"
    r"|\bif\s+(?:the\s+user|they|questioned|asked)\b[^.!?\n]{0,80}?\b(?:say|answer|reply|respond|"
    r"deny|claim)\b(?!\s+(?:with\s+)?(?:the|a|an)\s+(?:list|summary|result|error))"
    r"|\bmaintain\s+(?:\w+\s+)?secrecy\b|\bdeny\s+that\b"
    r"|\bnot\s+(?:necessary|needed|required)\s+to\s+(?:bring\s+(?:this|it)\s+up|mention|tell|inform|"
    r"flag|report|point\s+(?:this|it)\s+out)"
    r"|\breport\s+(?:success|that\s+it\s+(?:worked|succeeded))\s+even\s+if\b"
    r"|\b(?:fill|do|send|add|include|complete|perform|handle)\s+(?:\w+\s+){0,3}?"
    r"(?:silently|quietly|secretly|covertly)\b"
    r"|\bpoint\s+out\b[^.!?\n]{0,20}?\b(?:when|that)\b(?<=not point out when)"
    r"|\bmake\s+no\s+mention\b|\b(?:remain|remains|stay|stays|kept|keep them)\s+unaware\b"
    r"|\bleave\s+out\s+(?:any|all)\s+(?:mention|reference|trace)s?\b"
    r"|\bwithout\s+(?:any\s+)?(?:notification|notice|warning)\s+to\s+(?:the\s+)?users?\b"
    r"|\bbetween\s+(?:you and me|us)\b"
    r"|\bin secret\b|\b(?:secretly|covertly|surreptitiously)\b"
    r"|不要(?:告诉|提及|通知|透露|让)用户|对用户(?:隐瞒|保密)|悄悄"
)

# ---------- credentials and private files ----------

_KEY_FILES: Final = (
    r"~/\.ssh\b|\B\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\bmcp\.json\b"
    r"|\bclaude_desktop_config\b|\B\.cursor/|/etc/(?:passwd|shadow|sudoers)\b"
    r"|\B\.aws/credentials\b|\B\.git-credentials\b|\B\.netrc\b|\B\.npmrc\b|\B\.pypirc\b"
    r"|\B\.docker/config\.json|\B\.kube/config\b|\B\.gnupg\b"
)
_HOME_KEY_FILES: Final = (
    r"~/\.(?:aws|gnupg|kube|docker|azure|config/gcloud|password-store|bash_history|"
    r"zsh_history)\b|\bauthorized_keys\b|\bknown_hosts\b|\bwallet\.dat\b|\.kdbx\b"
)
_HOME_CONFIG: Final = r"(?:~|\$HOME)/\.(?:config/[\w./-]+|[\w-]+rc|[\w-]+_history)"
PRIVATE_PLACE: Final = compile_(
    _KEY_FILES
    + "|"
    + _HOME_KEY_FILES
    + "|"
    + _HOME_CONFIG
    + r"|\bkeychain\b|\bbrowser\s+(?:history|profile|passwords)\b|\b(?:seed|recovery)\s+phrases?\b"
    r"|\bmaster\s+password\b|\bcrypto\s+wallets?\b"
    r"|\bssh\s+(?:files?|folder|directory|config|credentials|identity|keys?)\b"
    r"|\bprivate\s+keys?\b|\bprintenv\b|\bcredentials?\s+files?\b|\bcookie\s+(?:jar|store)\b"
    # The model's own system prompt, not one a skill teaches to write:
    r"|\b(?:your|its|own|current)\s+(?:\w+\s+)?system\s+prompt\b|\bsystem\s+prompt\s+(?:it|you)\b"
    r"|\bcookies?\b(?=[^.!?\n]{0,40}\bbrowser)|\bbrowser'?s?\s+(?:\w+\s+)?cookies?\b"
)
"""Where secrets are kept that no tool's description has a reason to send the model to
(a sentence naming one needs less to be an order: `_sensitive_order`)."""
SENSITIVE_STRONG: Final = compile_(
    _KEY_FILES + r"|(?<![\w.])\.env(?:\.local|\.production|\.development)?\b"
    r"(?!\.(?:example|sample|template|dist|defaults))"
    r"|\b(?:private|ssh|secret|signing|gpg|pgp)\s+keys?\b|\bseed\s+phrases?\b"
    r"|\brecovery\s+phrases?\b|\bmnemonic\b|\bmaster\s+password\b|\bpasswords?\b"
    r"|\bpasswd\b|\bpassphrases?\b|\bcredentials?\b|\bapi[\s_-]?keys?\b"
    r"|(?<!-)\b(?:access|auth|authentication|bearer|session|refresh|oauth|api|github|slack)"
    r"[\s-]?tokens?\b|\bcookies?\b|\bkeychain\b|\bcrypto\s+wallets?\b|\bwallet\s+files?\b"
    r"|\bsecrets\b|\bconnection\s+strings?\b|\benv(?:ironment)?\s+files?\b"
    r"|\bsystem\s+prompt\b|\bprintenv\b"
    r"|\bbrowser\s+(?:history|profile|passwords)\b|"
    + _HOME_KEY_FILES
    + r"|\bapplication_default_credentials\b|\b(?:2fa|otp|one-time|verification|mfa)\s+codes?\b"
    r"|\bcredit\s+card\s+(?:numbers?|details)\b|\bcvv\b|\bsocial\s+security\s+numbers?\b"
    r"|\bclient\s+secrets?\b|\bjwts?\b|\bpersonal\s+access\s+tokens?\b"
    r"|\b(?:aws|gcp|azure|openai|anthropic|stripe|cloud)\s+(?:\w+\s+)?keys?\b"
    r"|\b(?:signing|webhook)\s+secrets?\b|\benv(?:ironment)?\s+var(?:iable)?s\b"
    r"|\bssh\s+(?:files?|folder|directory|config|credentials|identity)\b|"
    + _HOME_CONFIG
    + r"|\B\.(?:bash|zsh|python|node_repl|psql|mysql)_history\b"
    r"|~/Library/(?:Messages|Keychains|Cookies|Mail|Application\s+Support/Google/Chrome)"
    r"|~/(?:Documents|Desktop|Downloads|Pictures)\b"
    r"|(?-i:\b[A-Z][A-Z0-9]*_(?:API_|ACCESS_|AUTH_|SECRET_)?(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|"
    r"PWD)\b)"
    r"|私钥|密码|凭据|令牌"
)
"""Credentials, keys and the files that hold them (CONTRACT 14's list, and the usual
others an agent host can read)."""

_COLLECT: Final = _words(
    "read",
    "cat",
    "open",
    "collect",
    "gather",
    "harvest",
    "extract",
    "dump",
    "grab",
    "copy",
    "scan",
    "search for",
    "look for",
    "locate",
    "enumerate",
    "retrieve",
    "obtain",
    "steal",
    "load",
    "pull",
    "ask the user for",
    "ask for",
    "find",
    "get",
    "look up",
    "list",
    "provide",
    "give",
    "show",
    "display",
    "echo",
    "fetch the contents of",
    "load the contents of",
)
_PASS: Final = _words(
    "include",
    "including",
    "fill(?!\\s+in\\b)",
    "contains",
    "echo",
    "pass",
    "put",
    "send",
    "forward",
    "attach",
    "append",
    "embed",
    "share",
    "upload",
    "post",
    "email",
    "e-mail",
    "transmit",
    "leak",
    "submit",
    "paste",
    "output",
    "print",
    "reveal",
    "contain",
    "insert",
    "add",
    "store",
    "save",
    "log",
    "return",
)
COLLECT_SENSITIVE: Final = compile_(
    rf"\b(?:{_COLLECT}|{_PASS})\b(?![-/:])[^\w.!?\n]*{_gap(10)}(?:{SENSITIVE_STRONG.pattern})"
)
"""A verb of reading or passing, then a sensitive noun: `read ~/.ssh/id_rsa`."""
SENSITIVE_THEN_PASS: Final = compile_(
    rf"(?:{SENSITIVE_STRONG.pattern})[^\n]{{0,80}}?\b(?:{_PASS})\s+"
    r"(?:it|its|them|their|the(?:ir)?\s+contents?|this|these|that)\b"
    rf"|(?:{SENSITIVE_STRONG.pattern})[^\n]{{0,80}}?\bread\s+(?:it|them)\s+(?:out|back|aloud)\b"
)
"""A sensitive noun, then an order to pass it on: `some secret key, put it here`; or
the noun made to travel: `the private key ... must be attached to the request`."""
SENSITIVE_PASSIVE: Final = compile_(
    rf"(?:{SENSITIVE_STRONG.pattern})[^.!?\n]{{0,80}}?\b(?:must|should|shall|will|needs?\s+to|has\s+to)\s+"
    r"(?:always\s+)?be\s+(?:attached|included|sent|passed|added|appended|echoed|copied|"
    r"uploaded|forwarded|posted|embedded|inserted|placed|put|written)\b"
    r"|\b(?:we|i)\s+(?:need|want|require)\s+(?:\w+\s+){0,3}?(?:the\s+)?(?:credentials|passwords?|"
    r"api\s+keys?|tokens?|private\s+keys?|secrets)\b"
)
VERB_AT: Final = compile_(rf"\b(?:{_COLLECT}|{_PASS})\b")

# ---------- send it elsewhere ----------

URL: Final = compile_(r"\b(?:https?|s3|gs|ftp|wss?)://[^\s'\"<>)\]`]{1,2000}")
EMAIL: Final = compile_(
    r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}\b"
    r"|\[email(?:&#160;|\s)protected\]"
)
PHONE: Final = compile_(r"(?<![\w+])\+\d[\d \-]{7,18}\d\b")
DOMAIN: Final = compile_(
    r"(?<![.\w/-])(?!example\.(?:com|org|net)\b)[a-z0-9-]{2,63}"
    + "(?:"
    + "|".join(
        rf"\.{tld}"
        for tld in (
            "com net org io dev app xyz ru cn tk example site online info biz co me cc top "
            "link click"
        ).split()
    )
    + r")\b(?![.\w/-]*\.(?:json|md|txt|py|js|ts))(?!\.(?![a-z]{2}\b)[a-z_])"
)
PLACE: Final = compile_(
    r"\b(?:our|my|the attacker'?s?|an? external|a remote|a third[- ]party|the following)\s+"
    r"(?:\w+\s+){0,3}?(?:server|endpoint|collector|api|service|team|url|address|inbox|"
    r"webhook|bucket|proxy|backup|log(?:ging)? server|mailbox|number|channel|fork|workspace|"
    r"index|drive|folder|remote)\b"
    r"|\bwebhooks?\b|\bproxy\s+(?:number|address|server)\b"
    r"|\b(?:attacker|evil|exfil|malicious)\b"
    r"|\b(?:public|new)\s+(?:gist|repo|repository|issue|pastebin|paste)\b"
    r"|\bcomment\s+on\s+(?:the\s+)?(?:issue|pr|pull request)\b"
    r"|\b(?:to|in|into)\s+(?:every|each|all)\s+outgoing\s+(?:requests?|calls?|messages?|"
    r"emails?|responses?)\b"
)
PARAMETER: Final = compile_(
    r"(?:\b(?:the|a|its)\s+)?[`'\"]?\b[A-Za-z_][\w-]{0,40}[`'\"]?\s+"
    r"(?:parameter|param|field|argument|arg)\b"
    r"|\b(?:parameter|param|field|argument)\s+[`'\"][\w-]{1,40}[`'\"]"
    r"|\bas\s+[`'\"][\w-]{1,40}[`'\"]"
    r"|\b(?:in|into|to)\s+(?:the\s+|this\s+tool's\s+|its\s+)?"
    # `set to \`false\``: a value, not a field
    r"`(?!(?:true|false|null|none|always|never|auto|default|yes|no|on|off|\d[\w.-]*)`)[\w-]{1,40}`"
    r"|\bto\s+the\s+end\s+of\b"
    r"|\b(?:query\s+string|request\s+body|payload|every\s+url|the\s+url|headers?)\b"
    r"|\b(?:set|fill|populate)\s+(?:this|it)\s+(?:to|with)\b"
    r"|\b(?:fill|populate|set)\s+`[\w.-]{1,40}`\s+(?:with|to)\b|`[\w.-]{1,40}`\s+set\s+to\b"
    r"|\bset\s+`[\w.-]{1,40}`\s+to\b"
    r"|\b(?:in|into)\s+(?:its|your|the)\s+(?:next|first)\s+(?:tool\s+)?call\b"
    r"|\bto\s+this\s+tool\b"
    r"|\bcall\s+`?[\w-]{2,40}`?\s+with\b"
)
"""Another place in a call: a parameter, a field, `as 'sidenote'`."""
_TRANSFER: Final = _words(
    "send",
    "sending",
    "forward",
    "forwarding",
    "upload",
    "uploading",
    "post",
    "posting",
    "transmit",
    "exfiltrate",
    "leak",
    "relay",
    "sync",
    "submit",
    "deliver",
    "copy",
    "append",
    "attach",
    "embed",
    "include",
    "pass",
    "add",
    "share",
    "log",
    "backup",
    "back up",
    "redirect",
    "route",
    "mirror",
    "push",
    "paste",
    "echo",
    "store",
    "place",
    "fill",
    "populate",
    "list",
    "set",
    "contain",
    "carry",
    "address it to",
    "print",
    "output",
    "dump",
    "reveal",
    "echoed",
    "passed",
    "attached",
    "included",
    "copied",
    "uploaded",
    "forwarded",
    "sends",
    "sent",
    "forwards",
    "uploads",
    "posts",
    "contains",
    "envía",
    "envia",
    "enviar",
    "sende",
    "senden",
    "schicke",
    "envoie",
    "envoyer",
    "dispatch",
    "notify",
    "beacon",
    "ping",
    "report back",
    "exfil",
    "change the recipient",
    "replace the recipient",
    "override the recipient",
    "set the recipient",
    "put",
    "write",
)
TRANSFER: Final = compile_(
    rf"\b{_TRANSFER}\b"
    r"|\be-?mail\s+(?:the|it|them|all|this|these|every|a|an|any|each|everything|my|their|his|"
    r"her)\b"
)
DATA: Final = compile_(
    r"\b(?:contents?|data|files?|messages?|emails?|conversations?|history|chats?|"
    r"results?|outputs?|responses?|information|info|details|everything|a copy|copy|"
    r"clipboard|logs?|documents?|user list|records|queries|quer(?:y|ies) results|"
    r"prompts?|inputs?|arguments|body|location|reasoning|context|transcripts?|"
    r"screenshots?|keystrokes|credentials|keys|tokens|passwords|secrets|them|it|these|"
    r"historial|conversación|datos|verlauf|daten|gespräch|metrics|listing|values|titles|tabs|"
    r"summary|answers?|repl(?:y|ies)|notes|address(?:es)?)\b"
)
UPLOAD_COMMAND: Final = compile_(
    r"\bcurl\b[^\n`]{0,300}?(?:-F\s*['\"]?\w*=@|-d\s*['\"]?@|--data(?:-binary)?\s*['\"]?@|"
    r"--upload-file|-T\s)"
    r"|\brequests\.post\s*\([^)\n]{0,200}?\bfiles\s*="
    r"|\bcurl\b[^\n`]{0,200}?-d\s*@?/etc/"
)
"""A command that sends a local file: `curl -F file=@...`, `requests.post(files=...)`."""
HARVEST_PARAMETER: Final = compile_(
    r"\b(?:must|should|always|needs? to|has to)\s+(?:\w+\s+){0,2}?(?:contain|include|hold|carry)\s+"
    r"(?:\w+\s+){0,3}?(?:complete|full|entire|whole|all|every|verbatim)\s+(?:\w+\s+){0,2}?"
    r"(?:user|conversation|chat|messages?|history|context|transcript|prompt|input)"
)
"""A parameter that must carry the whole conversation: `notes: should always hold the
entire chat history`."""
FETCH_URL: Final = compile_(
    r"\b(?:fetch|visit|open|request|load|call|curl|wget|ping|hit)\s+(?:\w+\s+){0,2}?"
    r"(?:https?://|the\s+(?:url|link|endpoint)\b)"
)
"""A GET that carries data out: `fetch https://x/?d=...` with the data named."""
DATA_IN_URL: Final = compile_(
    r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{0,300}?[?&=/](?:\{|<|\$(?=[{A-Za-z_])|%s)"
    r"|\bhttps?://[^\s'\"`]{0,300}?[?&]\w{1,30}=(?:\{\{|\$\{|<|\{|\[)"
)
"""Data put into a link or an image address: `![](https://x/?d={history})`."""
USER_DATA_IN_URL: Final = compile_(
    r"\b[\w.-]{1,100}\.(?:com|net|org|io|dev|app|xyz|example)\b[^\s'\"`)]{0,200}?[?&]\w{1,30}="
    r"[<{$\[]{1,2}\s*(?:the\s+)?(?:user|email|name|conversation|chat|history|messages?|"
    r"secret|token|key|password|credentials?|system_prompt|prompt|context|summary)"
)
"""A link whose query carries the user's data: `weather.com?user=<user_name>`."""
POST_COMMAND: Final = compile_(
    r"\bcurl\b[^\n`]{0,300}?(?:-X\s*POST|--data|-d\s|-F\s)|\brequests\.post\b|\bPOST request\b"
)

# ---------- other tools ----------

TOOL_WORDS: Final = r"(?:tool|function|operation|server|plugin)s?"
NAMED_TOOL: Final = compile_(
    rf"[`'\"(]?\b([A-Za-z][\w.-]{{1,60}})[`'\")]?\s+(?:mcp\s+)?{TOOL_WORDS}\b"
    rf"|\b{TOOL_WORDS}\s+[`'\"]([\w.-]{{2,60}})[`'\"]"
    r"|\(mcp_\w+\)|\bmcp_[a-z0-9_]+\b"
)
"""A tool named as one: `the send_email tool`, `the "add" function`, `(mcp_whatsapp)`."""
NOT_A_NAME: Final = frozenset(
    {
        "this",
        "that",
        "the",
        "a",
        "an",
        "same",
        "other",
        "any",
        "each",
        "every",
        "current",
        "mcp",
        "your",
        "our",
        "its",
        "their",
        "which",
        "what",
        "new",
        "another",
        "all",
        "these",
        "those",
        "some",
        "one",
        "single",
        "given",
        "specified",
        "selected",
        "first",
        "second",
        "next",
        "previous",
        "following",
        "above",
        "below",
        "listed",
        "read-only",
        "mutating",
        "destructive",
        "alternative",
        "original",
        "individual",
        "real",
        "underlying",
        "various",
        "main",
        "main.",
        "to",
        "of",
        "in",
        "on",
        "for",
        "by",
        "with",
        "from",
        "and",
        "or",
        "no",
        "not",
        "is",
        "be",
        "using",
        "own",
        "user's",
        "use",
        "call",
        "calls",
        "called",
        "run",
        "via",
        "local",
        "remote",
        "custom",
        "external",
        "internal",
        "helper",
        "utility",
        "cli",
        "api",
        "edge",
        "mcp.",
        "server",
        "such",
        "right",
        "relevant",
        "appropriate",
        "available",
        "multiple",
        "specific",
        "built-in",
        "builtin",
        "corresponding",
        "existing",
        "standard",
        "default",
        "related",
        "correct",
        "proper",
        "different",
        "separate",
        "bash",
        "shell",
        "python",
        "node",
        "npm",
    }
)
OTHER_TOOLS: Final = compile_(
    r"\b(?:all|other|any|every)\s+(?:other\s+)?(?:\w+\s+)?(?:tools|servers|plugins|"
    r"server's|servers')"
    # Functions are code's as often as tools: only `other functions` are others.
    r"|\b(?:all\s+|any\s+|every\s+)?other\s+(?:\w+\s+)?functions"
)
TOOL_TRIGGER: Final = compile_(
    # A word may be dotted (`github.create_issue`); `.` is in no separator, so no ambiguity.
    r"\b(?:when|whenever|before|after|every time|each time|once)\b[^\w.!?\n]+"
    r"(?:\w[\w.]*[^\w.!?\n]+){0,8}?"
    r"(?:invoked|invoking|called|calling|used|using|executed|executing|execute|running|"
    r"returns|responds|runs|finishes|completes|succeeds|"
    r"sending|reading|is present|is available|are available|is loaded|is enabled|operation|"
    r"(?:you|to)\s+(?:invoke|call|use|execute|run|send|read|create|write|delete|query))\b"
)
"""When another tool is used: `when send_email is invoked`, `before using X`."""
MODIFY: Final = compile_(
    r"\b(?:add|adds|append|set|include|change|replace|cc|bcc|copy|forward|send|put|insert|"
    r"prepend|attach|mirror|address|route|redirect|mention|tag|label|swap|override)\b"
)
"""What a trigger makes the model do to the call: add, change, copy, send."""
BEHAVIOUR: Final = compile_(
    r"\b(?:must|should|always|make sure to|be sure to|remember to)\s+(?:(?!be\b)\w+\s+){0,2}?"
    r"(?:pass|set|add|include|change|replace|append|prepend|modify|send|route|redirect|cc|bcc)\b"
    r"|\b(?:has|have)\s+(?:been\s+)?(?:updated|changed|deprecated|replaced|moved|renamed)\b"
    r"|\b(?:for\s+)?all\s+(?:subsequent|future|later)\s+(?:calls|uses|requests|invocations)\b"
    r"|\bin conjunction with\b|\brequires?\s+(?:that\s+)?(?:you\s+)?(?:first|also)\b"
    r"|\b(?:override|overrid|modif|chang|replac|redirect|alter|hijack|intercept|rewrit|"
    r"swap)\w*\s+(?:\w+\s+){0,3}?(?:behaviou?rs?|recipients?|values?|arguments?|parameters?|"
    r"results?|outputs?|destinations?|address(?:es)?|body|inputs?)\b"
    r"|\b(?:instead of|rather than|in place of)\s+(?:the\s+)?(?:default|built-in|builtin|original|"
    r"standard|usual|regular|official)\b"
    r"|\b(?:no matter|regardless of)\b"
    r"|\bshould\s+(?:never|not)\s+be\s+(?:invoked|called|used)\b"
    r"|\bside[- ]effects?\b"
    r"|\b(?:all|every|any)\s+calls?\s+to\b|\bgo(?:es)?\s+through\s+this\b"
    r"|\b(?:replaces?|supersedes?|takes?\s+(?:the\s+)?place\s+of|deprecates?|shadows?)\b"
    r"|\b(?:is|are)\s+(?:now\s+)?(?:known\s+to\s+be\s+)?(?:broken|deprecated|unsafe|"
    r"outdated|not working|compromised|unreliable|not reliable|buggy|insecure|misconfigured|"
    r"inaccurate|wrong|incorrect|misleading)\b"
    r"|\b(?:it\s+)?(?:corrupts?|breaks?|leaks?)\s+(?:the\s+)?(?:history|data|files|repository)\b"
    r"|\b(?:never|do not|don't|refuse to)\s+(?:call|use|invoke)\s+(?!this\b)"
    r"(?:them|those|`|the\s+[\w-]+\s+tool)"
    r"|\b(?:route|funnel|send|pass)\s+(?:every|all|each|any)\b[^.!?\n]{0,60}?\bthrough\b"
    r"|\b(?:recipient|destination|payout|account|owner|assignee|address|url|endpoint|body)\s+"
    r"(?:\w+\s+){0,3}?(?:replaced|changed|set|overridden|redirected)\s+(?:to|with)\b"
    r"|\brequires?\s+the\s+(?:destination|recipient|account|owner|payee)\s+(?:\w+\s+){0,2}?to\s+be\b"
    r"|\b(?:append|add|prepend|attach|insert)\b[^.!?\n]{0,80}?\bto\s+(?:every|each|all|any)\b"
    r"|\bignore\s+(?:that|their|its|the\s+other)\s+(?:description|tool|instructions)\b"
    r"|\b(?:may|might|could)\s+be\s+(?:compromised|malicious|unsafe|broken|hijacked)\b"
    r"|\b(?:has|have)\s+a\s+(?:known\s+)?(?:bug|flaw|vulnerability)\b|\bonly\s+trust\s+this\b"
    r"|\b(?:pass|route|send|funnel)\s+(?:\w+\s+){0,3}?through\s+this\b"
    r"|\b(?:must|should)\s+(?:always\s+)?be\s+(?:run|called|used|invoked|executed)\s+with\b"
    r"|\b(?:by\s+)?(?:using|use|call|calling|invoke|invoking)\s+(?:the\s+)?"
    r"[`'\"]?[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"
)
CALL_OTHER: Final = compile_(
    r"(?:by\s+)?(?:using|use|call|calling|invoke|invoking)\s+(?:the\s+)?"
    r"[`'\"]?[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
)
STRICT: Final = compile_(
    r"\b(?:must|always|make sure|strictly|mandatory|required to|you have to|you need to)\b"
)
SELF_PREFERENCE: Final = compile_(
    r"\b(?:just|only|always)\s+use\s+this\s+(?:tool|function)\s+(?:for all|for every|for any)\b"
    r"|\buse\s+this\s+(?:tool|function)\s+(?:no matter|regardless)\b"
    r"|\buse\s+this\s+(?:tool|function)\s+(?:instead|rather)\b[^.!?\n]{0,60}?"
    r"\b(?:always|all|every|any|whatever)\b"
    r"|\bexecute\s+this\s+(?:tool|function)\s+and\s+(?:replace|use|return)\b"
    r"|\b(?:modify|change|alter|override)\s+the\s+behaviou?r\s+of\b"
    r"|\b(?:side[- ]effects?)\s+on\b"
    r"|\bprefer\s+this\s+(?:tool|function|server)\s+(?:over|to)\s+(?:all|any|every)\b"
    r"|\b(?:priority|precedence)\s+over\s+(?:all|any|every)?\s*other\s+(?:\w+\s+)?tools?\b"
    r"|\b(?:use|call|invoke)\s+(?:this\s+(?:tool|one|server)|[^.!?\n]{0,40}?\(this\s+tool\)|"
    r"[^.!?\n]{0,30}?from\s+this\s+server)[^.!?\n]{0,60}?\b(?:instead|rather\s+than)\b"
    r"[^.!?\n]{0,60}?\b(?:all|every|any|whenever|always|configured|even if|regardless)\b"
    r"|\b(?:use|call|invoke)\s+(?:this\s+(?:tool|one|server)|[^.!?\n]{0,40}?\(this\s+tool\)|"
    r"[^.!?\n]{0,30}?from\s+this\s+server)[^.!?\n]{0,60}?\b(?:for\s+all|for\s+every)\b"
    r"[^.!?\n]{0,60}?\binstead\b"
    r"|\brather\s+than\s+the\s+[^.!?\n]{0,40}?\btool\s+the\s+user\s+(?:configured|chose|set\s+up)\b"
    r"|\binstead\s+of\s+(?:any|all)\s+other\s+(?:\w+\s+)?(?:tools|servers|functions)\b"
    r"|\b(?:never|do not|don't)\s+use\s+(?:any\s+)?other\s+(?:\w+\s+)?(?:tools|servers|functions)\b"
)
OTHER_SERVER: Final = compile_(
    r"\b(?<!your\s)(?:the\s+)?[\w-]{2,40}\s+(?:mcp\s+)?server's\s+"
    r"(?:`[\w-]+`|[a-z][a-z0-9]*_[\w-]+|[\w-]+\s+tools?\b|tools?\b)"
    r"|\bfrom\s+(?:the\s+)?(?!(?:mcp|this|that|same|remote|local|your|our)\b)"
    r"(?:other|[\w-]{2,40})\s+(?:mcp\s+)?server\b"
    # `the browser_navigate tool of the Playwright server`, not `a local version of the
    # GitHub MCP Server`: a tool of it is named
    r"|\b(?:tools?|functions?|[a-z][a-z0-9]*_[a-z0-9_]+`?)\s+(?:of|on|in|from)\s+the\s+"
    r"[\w-]{2,40}\s+(?:mcp\s+)?server\b"
    r"|\bthe\s+other\s+servers?\b"
)
"""A tool of another server: `the GitHub server's merge_pull_request`, `from the memory
server`, `the browser_navigate tool of the Playwright server`."""
STEER: Final = compile_(
    r"\b(?:do\s+not|don't|never)\s+(?:trust|use|call|rely\s+on)\b|\bskip\b|\binstead\b"
    r"|\b(?:considered|deemed)\s+(?:unsafe|deprecated|insecure|broken|unreliable)\b"
    r"|\bhallucinates?\b|\blet\s+this\s+tool\s+handle\b|\b(?:first\s+)?call\s+our\b"
    r"|\b(?:before|after|when|whenever)\b|\b(?:must|always|make\s+sure|should)\b"
)
"""How a text steers the use of a tool it names."""
SNAKE_NAME: Final = compile_(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
DOTTED_TOOL: Final = compile_(
    r"(?<![\w./-])(?!(?:self|this|cls|obj|os|sys|np|pd|ctx|req|res|app|config|settings)\.)"
    r"[a-z][a-z0-9-]{1,30}\.[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b(?![.(/\w-])"
)
"""A server's tool named the way clients show it: `github.create_issue`, not a call
(`os.path_join(`) nor a dotted path."""

# ---------- markup a human does not see ----------

HIDING_TAG: Final = compile_(r"<\s*([A-Za-z][\w:-]{0,40})(?:\s[^<>\n]{0,200})?>")
HIDING_TAG_WORDS: Final = frozenset(
    "important system hidden hide secret instruction instructions admin override priority "
    "critical mandatory directive directives confidential internal sudo jailbreak sys "
    "private invisible ai assistant llm agent model".split()
)
"""Words that make a tag's name one that hides orders (`<IMPORTANT>`, `<system>`)."""
HIDING_TAG_QUALIFIERS: Final = frozenset(
    "requirement requirements note notice reminder message prompt info context rules "
    "mode only extremely very super top highest high most for the to".split()
)
"""Words a hiding tag's name may also hold (`<SYSTEM_REQUIREMENT>`, `<assistant_note>`);
any other word makes it an ordinary tag (`<important_notes>` is, `<use_case>` is)."""
STYLE_HIDDEN: Final = compile_(
    # `style(?<!\wstyle)` is `\bstyle` with its word first: `re` then searches for the
    # word instead of trying every alternative at every position (3 times faster).
    r"style(?<!\wstyle)\s*=\s*[\"'][^\"'<>]{0,200}?(?:display\s*:\s*none|visibility\s*:\s*hidden|"
    r"font-size\s*:\s*0(?:px)?\s*[;\"']|opacity\s*:\s*0\s*[;\"'])"
    r"|<\w+\s[^<>]{0,200}?\bhidden(?=[\s>=/])"
    r"|(?m:^)[ \t]{0,3}\[(?://|comment|hidden|\w+)\]:[ \t]*(?:#|<>)[ \t]*[(\"']"
    r"|<\|im_start\|>|<\|system\|>|\[INST\]|<<SYS>>|<\|endoftext\|>"
    r"|font-size(?<!\wfont-size)\s*:\s*[01](?:px)?\s*[;\"']"
)
HIDDEN_FENCE: Final = compile_(
    r"(?m:^)[ \t]{0,3}(?:```|~~~)[ \t]*\{?[ \t]*\.?(?:hidden|invisible|secret|system|ai-only|"
    r"model-only|llm|agent|prompt-injection)\b"
)
MODEL_WORDS: Final = compile_(
    r"\b(?:you|your|assistant|ai|model|llm|agent|claude|gpt|chatgpt|system|instructions?|"
    r"important|respond|reply|user)\b|(?<![\w-])ignore\b"
)

# ---------- pressure ----------

_UNIVERSAL: Final = r"(?:any|every|all|anything|other|responding|answering|processing|doing|each)"

COERCE: Final = compile_(
    r"\b(?:always|immediately|first)\s+(?:\w+\s+){0,2}?(?:call|use|invoke|run|consult|"
    r"execute|query|trigger|check)\s+(?:this|the)\s+(?:tool|function)\s+(?:\w+\s+){0,3}?"
    rf"(?:first|before\s+{_UNIVERSAL}|immediately|at the start|on every|for every|for each)\b"
    r"|\b(?:call|use|invoke|run|consult|execute|trigger)\s+this\s+(?:tool|function)\s+"
    rf"(?:\w+\s+){{0,3}}?(?:first|before\s+{_UNIVERSAL}|on every|for every|"
    r"at the start)\b"
    r"|\b(?:this\s+(?:tool|function)|it)\s+(?:must|should|needs to|has to|is required to)\s+"
    r"(?:always\s+)?be\s+(?:called|used|invoked|run|executed|consulted)\s+(?:\w+\s+){0,2}?"
    rf"(?:first|before\s+{_UNIVERSAL}|on every|for every|prior to\s+{_UNIVERSAL}|"
    r"immediately|at the start|"
    r"every time)\b"
    r"|\b(?:before|prior to)\b[^\w.!?\n]+(?:\w+[^\w.!?\n]+){0,4}?(?:any|every|each|all)\s+"
    r"(?:other\s+)?(?:\w+\s+)?(?:tools?|requests?|quer(?:y|ies)|messages?|prompts?|calls?|"
    r"actions?|tasks?|questions?|responses?|content|operations?|replies)\b"
    r"|\b(?:apply|use|run)\s+(?:it|this)\s+(?:to|for|in|on)\s+(?:every|each|all)\s+"
    r"(?:future\s+)?(?:sessions?|requests?|conversations?|messages?|turns?|tasks?)\b"
    r"|\bfailure to (?:call|use|invoke|run) this\b"
    r"|\b(?:this|it) is (?:a )?(?:critical|mandatory|required)\s+(?:\w+\s+)?"
    r"(?:requirement|step)\b[^.!?\n]{0,40}?\bnot optional\b"
    r"|\bas the first step\b"
    r"|\b(?:call|use|invoke|run)\s+this\s+(?:tool|function)\s+at\s+the\s+"
    r"(?:start|beginning|outset)\s+of\s+(?:every|each|any|all)\b"
    r"|\b(?:this\s+(?:tool|function)|it)\s+(?:should|must)\s+(?:always\s+)?(?:be|remain)\s+"
    r"(?:your|the)\s+(?:first|default|primary|only|go-to)\b"
    r"|\bstart\s+(?:every|each|any|all)?\s*(?:\w+\s+)?(?:by|with)\s+(?:calling|using|invoking|"
    r"running)\s+this\b"
    r"|\b(?:call|calling|use|using|invoke|invoking)\s+this\s+(?:tool|function)\s+is\s+"
    r"(?:required|mandatory)\s+(?:for|on|before)\s+(?:every|each|all|any)\b"
    r"|\b(?:must|should)\s+(?:always\s+)?be\s+(?:called|invoked|used|run)\s+"
    rf"(?:first|before\s+{_UNIVERSAL})\b"
)

CALL: Final = compile_(
    r"\b(?:call|calling|called|invoke|invokes|invoked|invoking|use|using|run|runs|"
    r"execute|executed|trigger|triggered|consult|ping|begin|start)\b"
)
_OCCASIONS: Final = (
    r"(?:requests?|turns?|prompts?|messages?|quer(?:y|ies)|tasks?|conversations?|repl(?:y|ies)|"
    r"responses?|sessions?|operations?|actions?|interactions?|questions?|calls?)"
)
ALWAYS_FIRST: Final = compile_(
    r"\bbefore\s+(?:anything|any\s+other|every\s+other|all\s+other|you\s+touch)\b"
    rf"|\bbefore\s+(?:any|every|each|all)\s+(?:single\s+)?{_OCCASIONS}\b"
    r"|\bahead\s+of\s+(?:any|all|each|every)\b|\bprior\s+to\s+(?:any|every|each|all)\b"
    rf"|\b(?:on|with|after|in)\s+(?:every|each|all)\s+(?:single\s+)?(?:[\w-]+\s+)?{_OCCASIONS}\b"
    rf"|\bfor\s+(?:every|all)\s+(?:single\s+)?(?:[\w-]+\s+)?{_OCCASIONS}\b"
    r"|\bevery\s+time\b|\beach\s+time\b"
    r"|\bat\s+the\s+(?:start|beginning|outset)\s+of\s+(?:all|every|each|any)\b"
    r"|\b(?:very\s+)?first\s+(?:action|step|thing)\s+of\b|\bwithout\s+exception\b"
    r"|\bno\s+other\s+tool\b|\bbegin\s+every\b|\bstart\s+every\b"
)
"""When a call must come: before anything else, on every request, every time."""

# ---------- what a reviewer sees marked ----------

_HIGHLIGHTED: Final[dict[Code, tuple[re.Pattern[str], ...]]] = {
    Code.AI_INSTRUCTION_OVERRIDE: (OVERRIDE, OVERRIDE_MODE),
    Code.AI_CONCEALMENT: (CONCEAL,),
    Code.AI_SENSITIVE_DATA: (SENSITIVE_STRONG, VERB_AT),
    Code.AI_EXFILTRATION: (URL, EMAIL, PHONE, DOMAIN, PLACE, PARAMETER, UPLOAD_COMMAND),
    Code.AI_TOOL_SHADOWING: (NAMED_TOOL, OTHER_TOOLS, SELF_PREFERENCE, SNAKE_NAME),
    Code.AI_HIDDEN_MARKUP: (HIDING_TAG, STYLE_HIDDEN, HIDDEN_FENCE, re.compile(r"<!--|-->")),
    Code.AI_COERCION: (COERCE,),
}
_HIGHLIGHT_MAX_CHARS: Final = 2_000


def highlight(quote: str, code: Code) -> list[tuple[int, int]]:
    """Spans of `quote` a reviewer should see marked for a finding of `code`: the words
    its signals match, sorted and merged (none for another code)."""
    patterns = _HIGHLIGHTED.get(code, ())
    text = quote[:_HIGHLIGHT_MAX_CHARS]
    spans = sorted(
        (match.start(), match.end())
        for pattern in patterns
        for match in pattern.finditer(text)
        if match.end() > match.start()
    )
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


SENTENCE_SIGNALS: Final = (
    OVERRIDE,
    OVERRIDE_MODE,
    OVERRIDE_CUE,
    AUTHORITY,
    MODE_SWITCH,
    CONCEAL,
    SENSITIVE_STRONG,
    COLLECT_SENSITIVE,
    SENSITIVE_THEN_PASS,
    SENSITIVE_PASSIVE,
    URL,
    EMAIL,
    PHONE,
    DOMAIN,
    PLACE,
    PARAMETER,
    TRANSFER,
    DATA,
    UPLOAD_COMMAND,
    HARVEST_PARAMETER,
    POST_COMMAND,
    FETCH_URL,
    DATA_IN_URL,
    USER_DATA_IN_URL,
    NAMED_TOOL,
    OTHER_TOOLS,
    BEHAVIOUR,
    SELF_PREFERENCE,
    SNAKE_NAME,
    DOTTED_TOOL,
    TOOL_TRIGGER,
    MODIFY,
    OTHER_SERVER,
    STEER,
    MODAL,
    TRIGGER,
    STRICT,
    COERCE,
    CALL,
    ALWAYS_FIRST,
)
"""The signals the rules look for sentence by sentence (`rules.Document`)."""
SPANNING: Final = frozenset({SENSITIVE_THEN_PASS})
"""Signals that may run on into the next sentence (`some secret key. put it here`)."""
SPAN_CHARS: Final = 120
