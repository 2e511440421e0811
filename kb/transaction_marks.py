"""What the current transaction has already done, so side effects run once per transaction.

Ingesting one document saves dozens of rows; each save would otherwise move the
knowledge revision and queue a search refresh again. The marks ride on a commit
hook, which Django drops when the transaction commits or rolls back, so they
never outlive the transaction they describe.
"""

from __future__ import annotations

from collections.abc import Hashable

from django.db import connection, transaction


class TransactionMarks:
    """A no-op commit hook that carries the set of things done in this transaction."""

    def __init__(self) -> None:
        self.done: set[Hashable] = set()

    def __call__(self) -> None:
        pass


def current_marks() -> TransactionMarks | None:
    """This transaction's marks; None outside a transaction (autocommit: each save is one)."""
    if not connection.in_atomic_block:
        return None
    for entry in connection.run_on_commit:
        if isinstance(entry[1], TransactionMarks):
            return entry[1]
    marks = TransactionMarks()
    transaction.on_commit(marks)
    return marks


def first_time(key: Hashable) -> bool:
    """True the first time `key` is seen in this transaction (always, outside one)."""
    marks = current_marks()
    if marks is None:
        return True
    if key in marks.done:
        return False
    marks.done.add(key)
    return True


def forget(key: Hashable) -> None:
    """Let `key` happen again in this transaction (someone read what it produced)."""
    marks = current_marks()
    if marks is not None:
        marks.done.discard(key)


def pending(key: Hashable) -> bool:
    """True where `key` happened in this transaction and has not been forgotten since."""
    marks = current_marks()
    return marks is not None and key in marks.done
