"""A regular expression that runs only on text where it can match.

Most lines of a paste or a document are short and lack what a given pattern cannot
match without: a dot for a version, a slash for a path, a digit for a number. A
substring test costs a fraction of the scan it spares, and a pattern that cannot
match would change nothing, so skipping it leaves every output as it was. The
normalisers of messages (`fingerprint`) and of words (`terms`) both gate their
patterns this way, through this one definition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Needs = tuple[str | tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class GatedPattern:
    """`pattern`, with what it cannot match without.

    `digit`: the text must hold a digit. `needs`: each string must be in the text, and
    of each tuple one will do. `fold_case`: for a case-blind pattern, the needs are
    looked for in the casefolded text (casefold, not lower: a case-blind match also
    takes "ſ" for "s").
    """

    pattern: re.Pattern[str]
    digit: bool = False
    needs: Needs = ()
    fold_case: bool = False

    def may_match(self, text: str, has_digit: bool) -> bool:
        """False only where the pattern cannot match `text`; `has_digit` is whether it
        holds a digit, which callers work out once for several patterns."""
        if self.digit and not has_digit:
            return False
        if not self.needs:
            return True
        haystack = text.casefold() if self.fold_case else text
        # Plain loops, no generator: this runs for every pattern on every line.
        for need in self.needs:
            if isinstance(need, str):
                if need not in haystack:
                    return False
                continue
            for one in need:
                if one in haystack:
                    break
            else:
                return False
        return True

    def sub(
        self, replacement: str | Callable[[re.Match[str]], str], text: str, has_digit: bool
    ) -> str:
        return self.pattern.sub(replacement, text) if self.may_match(text, has_digit) else text

    def finditer(self, text: str, has_digit: bool) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self.may_match(text, has_digit) else iter(())
