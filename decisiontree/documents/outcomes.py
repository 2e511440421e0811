"""Judge what a change did, from the words around it ("did not help", "finally worked").

Patterns of language, not sentences of any one document: the cue lists are
what people write in incident notes. Order matters: a sentence that says a
change "did not fix" something must not count as "fixed".
"""

from __future__ import annotations

import re

from decisiontree.records import Outcome

_WORSE = re.compile(
    r"\bmade (?:it|things|matters|the \w+) (?:much |even |a lot |far )?worse"
    r"|\b(?:got|became|even|much|far) worse\b"
    r"|\bnow (?:also )?(?:crash|fail|hang|die|oom)s? (?:earlier|sooner"
    r"|at startup|immediately)"
    r"|\bbroke (?:startup|loading|everything|the server)\b|\bnew (?:crash|error|failure) on top\b"
)
# "Worse." said on its own, as the verdict after an observation ("ITL doubles. Worse.").
_BARE_WORSE = re.compile(
    r"(?:^|[.:;!(]|\s-{1,2}>?|\u2192)\s{0,3}(?:much |even |far |strictly )?worse\s*(?:[.!)]|$)"
)
# A cost, not a verdict by itself: "is slower", "throughput regressed". Once the server
# runs ("comes up, but prefill is slower") the change helped partly; otherwise it hurt.
_COSTLIER = re.compile(
    r"\b(?:is|was|are|were) (?:\S+ ){0,3}?(?:worse|slower)\b|\bworse than\b|\d ?% slower\b"
    r"|\b(?:made|became|got) (?:\w+ )?(?:much |even )?slower\b|\bslower than\b"
    r"|\bregress(?:ed|ion|es)?\b|\b(?:throughput|latency|decode|prefill|ttft|itl) (?:\w+ )?"
    r"(?:dropped|fell|halved|doubled|suffered)\b"
)
# Said of a change that helped without solving: "fine to unblock, not a fix", "for now".
_LIMITED = re.compile(
    r"\bnot (?:a |the )?(?:real |proper |permanent |long-term |final )?(?:fix|solution)\b"
    r"|\bunblock\w*|\bfor now\b|\btemporar\w+|\bgood enough\b|\bnot what (?:i|we) want"
)
# The server runs at all: weaker than a fix, enough to make a cost a partial success.
_RUNS = re.compile(
    r"\b(?:come|comes|came|coming) up\b|\bstart(?:s|ed)\b|\bserv(?:es|ed|ing)\b"
    r"|\banswer(?:s|ed|ing)\b|\bload(?:s|ed)\b|\bruns\b|\bworks?\b|\bup and\b"
)
_NO_EFFECT = re.compile(
    r"\b(?:did|does|do|would|could|will|was|were|is|has|have|had)\s?n[o']t (?:\w+ )?"
    r"(?:help|fix|change|solve|resolve|matter|work|cure|affect|prevent|stop|avoid|make (?:a "
    r"|any )?difference)"
    r"|\bnever (?:helped|worked|fixed)|\bno (?:effect|difference|luck|change|improvement|dice"
    r"|help)\b"
    r"|\bto no avail\b|\bin vain\b|\bwithout (?:success|luck|any change)\b|\bnothing changed\b"
    r"|\bchanged nothing\b|\bmade no difference\b|\bdead end\b|\bred herring\b"
    r"|\bstill (?:crash|fail|oom|hang|hit|saw|see|got|get|produc|show|die|died|error|assert|broke"
    r"|nan"
    r"|the same|had|threw|throw|rais|blew|went|ended|exit|abort|segfault|trigger|report|print"
    r"|emit)\w*"
    r"|\b(?:same|identical) (?:error|crash|assert\w*|failure|traceback|result|nan|oom|problem"
    r"|issue|exception|symptom|hang|timeout|stall|deadlock|message|behaviou?r|numbers|output)"
    r"|\b(?:fail|crash|die|hung|hang|broke|error|abort|stall|froze|freez|timed out)\w*"
    r" (?:in )?the same"
    r" (?:way|place|spot|point)"
    r"|\b(?:only|just|merely) (?:changed|moved|shifted|swapped|replaced) (?:the|which|where)"
    r"|\b(?:was|is)\s?n[o']t (?:enough|sufficient|it\b|the (?:fix|cause|culprit|problem|issue))"
    r"|\b(?:error|crash|result|behaviou?r|symptom|failure|traceback)s? (?:was |were |is |stayed "
    r"|remained )?unchanged"
    r"|\bnot enough\b|\b(?:problem|crash|error|issue|oom|hang|assert\w*|failure) (?:persist"
    r"|remain|came back|return)\w*"
    r"|\b(?:crashed|failed|died|hung|oomed) again\b|\bagain (?:crashed|failed|died|hung)\b"
    r"|\bno better\b|\bdoes nothing\b|\bdid nothing\b"
)
_PARTIAL = re.compile(
    r"\bpartial(?:ly)?\b|\bhelped (?:a bit|a little|somewhat|some)\b|\bsomewhat\b"
    r"|\bless (?:often|frequent\w*)\b|\b(?:reduced|lowered|mitigated) the (?:crash|error"
    r"|frequency|number)"
    r"|\bbut (?:only|still) (?:for|with|at|when|under)\b|\bat the cost of\b|\bstopgap\b"
    r"|\bband-?aid\b"
    r"|\bhalf (?:the time|of the (?:runs|requests))\b|\bmost of the time\b|\bworks?,? but\b"
)
_RESOLVES = re.compile(
    r"\bfix(?:ed|es)\b|\bresolv(?:ed|es)\b|\bsolv(?:ed|es)\b|\bworked\b|\bworks\b|\bworking\b"
    r"|\bfinally\b|\bsuccess\w*|\bdid the trick\b|\bcame up\b|\bcomes up\b"
    r"|\bstart(?:ed|s) (?:up )?(?:cleanly|fine|successfully|normally)\b|\bwent away\b|\bgoes away\b"
    r"|\b(?:is|are|was|were) gone\b|\bdisappear\w*|\bno (?:more|longer) (?:crash|fail|oom|error"
    r"|hang|assert|nan)"
    r"|\bstable\b|\bcured\b|\bgot it (?:working|running|up)\b|\bserv(?:ed|es|ing) (?:fine"
    r"|correctly|requests|traffic)"
    r"|\bruns? (?:fine|cleanly|stably|without)\b|\bthe (?:fix|solution|answer) (?:was|is)\b"
    r"|\bup and (?:running|serving)\b|\bback to normal\b|\bcoherent\b|\bclean run\b"
    r"|\bnow (?:loads|starts|runs|serves)\b|\b(?:loads|starts|runs|serves) now\b"
    r"|\b(?:is|was) the (?:fix|solution|answer|one)\b|\b\w+(?:ed|s) (?:fine|cleanly|successfully)\b"
    r"|\bpass(?:es|ed) (?:our |the )?(?:eval|tests?|checks?)"
    r"|\b(?:builds?|compil\w+|tests?|checks?|evals?) (?:now |all |then )?pass(?:es|ed)?\b"
    r"|\bhealthy\b"
    r"|\b(?:server|engine|service|endpoint|api|pod|container)s? (?:is |was |came |comes |now )?"
    r"(?:back )?up\b"
)
# "should fix it", "might help", "hoping it works": intentions, not results.
_INTENT = re.compile(
    r"\b(?:should|would|might|may|could|will|can|hope|hoping|hopefully|expect\w*(?: it)? to"
    r"|supposed to|meant to"
    r"|in order to|try to|trying to|tried to|attempt\w* to)\s+(?:\w+\s+){0,2}?"
    r"(?:fix|work|solve|resolve|help|cure|avoid|stabili[sz]e)\w*"
    r"|\b(?:assum\w*|believ\w*|thought|thinking|think|expect\w*|whether|if|unless|verify"
    r"|check\w*)\s+"
    r"(?:\S+\s+){0,4}?(?:fix|work|solve|resolve|help)\w*"
)


def judge_outcome(sentence: str) -> Outcome | None:
    """The outcome a sentence reports for the change it mentions, or None when it reports none."""
    text = _INTENT.sub(" ", _plain(sentence))
    if _WORSE.search(text) or ("worse" in text and _BARE_WORSE.search(text)):
        return Outcome.WORSE
    if _NO_EFFECT.search(text):
        return Outcome.NO_EFFECT
    helped = _RESOLVES.search(text) is not None
    if _PARTIAL.search(text) or _helped_at_a_cost(text, helped):
        return Outcome.PARTIAL
    if _COSTLIER.search(text):
        return Outcome.WORSE
    return Outcome.RESOLVES if helped else None


def _helped_at_a_cost(text: str, helped: bool) -> bool:
    """ "Comes up, but prefill is slower", "works; fine to unblock, not a fix"."""
    if not (helped or _RUNS.search(text)):
        return False
    return bool(_COSTLIER.search(text) or _LIMITED.search(text))


def _plain(sentence: str) -> str:
    return sentence.lower().replace("\u2019", "'").replace("`", "").replace("*", "")


_BRACKET_OUTCOME = re.compile(r"\[\s*([a-z _-]{3,20})\s*\]\s*$", re.IGNORECASE)
_OUTCOME_WORDS = {
    "resolves": Outcome.RESOLVES,
    "resolved": Outcome.RESOLVES,
    "fixes": Outcome.RESOLVES,
    "fixed": Outcome.RESOLVES,
    "works": Outcome.RESOLVES,
    "partial": Outcome.PARTIAL,
    "partially": Outcome.PARTIAL,
    "no effect": Outcome.NO_EFFECT,
    "no_effect": Outcome.NO_EFFECT,
    "no-effect": Outcome.NO_EFFECT,
    "did not help": Outcome.NO_EFFECT,
    "worse": Outcome.WORSE,
    "made it worse": Outcome.WORSE,
}


def split_bracket_outcome(text: str) -> tuple[str, Outcome | None]:
    """`--x 1 [partial]` -> ("--x 1", PARTIAL); the FINDINGS.md override syntax."""
    match = _BRACKET_OUTCOME.search(text)
    if not match:
        return text, None
    outcome = _OUTCOME_WORDS.get(" ".join(match.group(1).lower().split()))
    if outcome is None:
        return text, None
    return text[: match.start()].rstrip(), outcome
