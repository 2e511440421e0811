"""A server launch written as a Kubernetes container: its `command` and `args`.

A team that serves on Kubernetes pastes the pod's manifest or `kubectl describe pod`,
not a shell command. Both say the same thing in their own shape:

- a manifest (YAML): `args: ["--model", "m", "--tensor-parallel-size", "4"]`, or a block
  list, `args:` over `- --model` lines; often `command: ["/bin/sh", "-c"]` with the whole
  shell line as the one argument;
- `kubectl describe pod`: `Command:` and `Args:`, one word a line below each, indented.

`pod_command(text, entry_point)` gives the words as one shell command (each word
quoted), or the script of a `sh -c`. A container without `command` runs its image's entry
point with the args: the caller names it (`decisiontree.launch` knows the server images).
"""

from __future__ import annotations

import re
import shlex

import yaml

_KEY = re.compile(
    r"(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<key>command|args|Command|Args):[ \t]*(?P<rest>.*)"
)
_ITEM = re.compile(r"(?P<indent>[ \t]*)-(?:[ \t]+(?P<item>.*))?$")
_SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash"})
_MAX_ITEMS = 400  # words of one container's command: far more than any launch has
_MAX_KEYS = 32  # `command` and `args` keys read, the last ones: a pod has a few containers
_MAX_FLOW_CHARS = 8000  # a list on the key's line longer than this is no launch


def pod_command(text: str, entry_point: str | None) -> str | None:
    """The last container launch written as `command` and `args` in the text, as a shell
    command; None when the text has none. `entry_point` is what the pod's image runs
    (None: an image that names no server, whose args alone say nothing)."""
    if "ommand:" not in text and "rgs:" not in text:
        return None  # most pastes: one pass
    lines = text.splitlines()
    keys = [(i, found) for i, line in enumerate(lines) if (found := _KEY.fullmatch(line))]
    words: dict[str, list[str]] = {}
    for i, found in keys[-_MAX_KEYS:]:  # the last containers: a log's lines are no pod
        key = found["key"].lower()
        if key == "command" and "args" in words and "command" in words:
            words = {}  # another container's
        items = _items(lines, i, found)
        if items is not None:
            words[key] = items
    command, args = words.get("command", []), words.get("args", [])
    if not command and not args:
        return None
    if len(command) >= 2 and command[0] in _SHELLS and command[1] == "-c" and args:
        return args[0]  # `command: ["/bin/sh", "-c"]`, the script as its argument
    if len(command) >= 3 and command[0] in _SHELLS and command[1] == "-c":
        return command[2]
    if not command:
        if entry_point is None:
            return None  # another image's entry point: nothing says what runs
        command = entry_point.split()
    return " ".join(shlex.quote(word) for word in [*command, *args])


def _items(lines: list[str], at: int, found: re.Match[str]) -> list[str] | None:
    rest = found["rest"].strip()
    if len(rest) > _MAX_FLOW_CHARS:
        return None
    if rest:  # a flow list or a scalar, as a manifest writes it on the key's line
        try:
            value = yaml.safe_load(rest)
        except yaml.YAMLError:
            return None
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            return [str(v) for v in value[:_MAX_ITEMS]]
        return None
    indent = len(found["indent"])
    items: list[str] = []
    for line in lines[at + 1 : at + 1 + _MAX_ITEMS]:
        margin = len(line) - len(line.lstrip())
        item = _ITEM.fullmatch(line)
        if item is not None and margin >= indent:  # a manifest's block list
            items.append(_scalar(item["item"] or ""))
        elif line.strip() and margin > indent and not _KEY.fullmatch(line):
            items.append(line.strip())  # describe: one word a line, under its key
        else:
            break
    return items or None


def _scalar(text: str) -> str:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text.strip()
    return str(value) if isinstance(value, str | int | float) else text.strip()
