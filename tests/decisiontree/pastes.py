"""The traceback fixtures: real-looking pastes, read exactly as a user pasted them."""

from pathlib import Path

TRACEBACKS = Path(__file__).parent / "fixtures" / "tracebacks"


def pasted(name: str) -> str:
    # newline="" keeps \r\n so the parser sees what the user pasted.
    with open(TRACEBACKS / f"{name}.txt", encoding="utf-8", newline="") as file:
        return file.read()
