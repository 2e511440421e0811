"""Server launch commands: read one, and write it back with a fix applied.

`parse_launch_command(cmd)` finds the server in whatever was pasted (`vllm serve`,
`python -m sglang.launch_server`, a docker image, `ssh host '...'`, `bash -c "..."`,
env prefixes, shell prompts, line continuations, redirections) and reads its flags
with the flag tables (`decisiontree.flags`): each flag knows whether it takes a
value, so `vllm serve --enforce-eager Qwen/Qwen3-8B` keeps its model.

`apply_changes(cmd, changes)` edits the command the user pasted: a flag the fix
sets replaces every spelling of that flag already there (`-tp 2` becomes
`--tensor-parallel-size 4`, not both), a removed flag takes its value with it,
and everything else (other flags, quoting, line breaks, redirections) stays as
written. Both read the same words, so what the editor changes is what the
parser saw.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from decisiontree import flags, versions
from decisiontree.flags import FRAMEWORKS, FlagHit, FlagSpec
from decisiontree.pod_spec import pod_command
from decisiontree.records import Change, ChangeAction


@dataclass(frozen=True)
class LaunchCommand:
    framework: str | None
    model: str | None
    flags: Mapping[str, str]  # canonical name -> value as launched ("true" for bare booleans)
    unknown_flags: tuple[str, ...]  # as written, e.g. "--nsa-foo"
    env: Mapping[str, str]  # VAR=value prefixes, `export`, `docker -e`
    # The framework's release the command names before the server: a pinned package
    # (`pip install sglang==0.5.9 &&`, `uv run --with vllm==0.9.1`) or a server image's
    # tag (`vllm/vllm-openai:v0.9.1`, `lmsysorg/sglang:v0.5.9-cu129`).
    release: str | None = None


# ---------------------------------------------------------------- words


@dataclass(frozen=True)
class Word:
    """One shell word: its text once quotes are read, and where it sits in the command."""

    text: str
    start: int
    end: int
    control: bool = False  # `;`, `&&`, `||`, `|`, `&`: the server's arguments end here


_CONTROL = {";", "&&", "||", "|", "&"}
_PUNCTUATION = frozenset(";&|<>")
# "> log", "2>&1", "&> out", "< in": where output goes says nothing about the server.
_REDIRECT = re.compile(r"(?<![\w=-])\d?(?:>>?|&>|<)(?:&\d|\s*[^\s;&|<>]+)")
# A backslash that ends a line, or the command (its first line copied alone), trailing
# spaces of the copy after it; `My\ Models` inside a line stays an escaped space.
_CONTINUATION = re.compile(r"\\[ \t]*(?:\r?\n|$)", re.M)
_PROMPT = re.compile(r"^\s*[$#>]\s+", re.M)  # prompt characters of a pasted session


def words(cmd: str) -> list[Word]:
    """Split like a shell would, keeping control operators apart and each word's place.

    Line continuations, prompts and redirections are blanked first (same length, so
    places still point into `cmd`). An unbalanced quote (a truncated paste) falls
    back to whitespace.
    """
    cmd = cmd.translate(_TYPED_QUOTES)  # one character for one: places still hold
    blank = _blanked(cmd)
    scanned = _scan(blank, cmd) or [
        Word(m.group(0), m.start(), m.end(), m.group(0) in _CONTROL)
        for m in re.finditer(r"\S+", blank)
    ]
    return [_with_plain_dashes(word) for word in scanned]


# The dash a word processor, a wiki or a chat app typed for "--" (“—tp 8”, “–max-model-len”):
# the shell would pass it on as a word, but the writer meant the flag.
_TYPED_DASHES = "\u2013\u2014\u2212"
_TYPED_DASH = re.compile(rf"[{_TYPED_DASHES}]{{1,2}}(?=[A-Za-z])")
# Its quotes too (“…”, ‘…’): the writer meant the shell's.
_TYPED_QUOTES = str.maketrans("\u201c\u201d\u201e\u2018\u2019", '"""\'\'')
_TYPED_DASH_IN_COMMAND = re.compile(rf"(?<![^\s=]){_TYPED_DASH.pattern}")


def _with_plain_dashes(word: Word) -> Word:
    if word.text[:1] not in _TYPED_DASHES:
        return word
    return dataclasses.replace(word, text=_TYPED_DASH.sub("--", word.text, count=1))


def _blanked(cmd: str) -> str:
    def spaces(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    for pattern in (_CONTINUATION, _PROMPT, _REDIRECT):
        cmd = pattern.sub(spaces, cmd)
    return cmd


def _scan(text: str, source: str) -> list[Word] | None:
    """Words of the blanked `text`; quoted parts are read from `source`, where nothing
    inside quotes was blanked (a `>` in `bash -c "... > log"` belongs to the inner command)."""
    found: list[Word] = []
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text[i] in _PUNCTUATION:
            start = i
            while i < len(text) and text[i] in _PUNCTUATION:
                i += 1
            found.append(Word(text[start:i], start, i, control=text[start:i] in _CONTROL))
        else:
            word = _scan_word(text, source, i)
            if word is None:
                return None
            found.append(word)
            i = word.end
    return found


def _scan_word(text: str, source: str, i: int) -> Word | None:
    """The word starting at `i`: quotes and backslashes read as a POSIX shell reads them."""
    start = i
    parts: list[str] = []
    while i < len(text) and not text[i].isspace() and text[i] not in _PUNCTUATION:
        char = text[i]
        if char == "'":
            close = text.find("'", i + 1)
            if close < 0:
                return None
            parts.append(source[i + 1 : close])
            i = close + 1
        elif char == '"':
            read = _double_quoted(source, i + 1)
            if read is None:
                return None
            part, i = read
            parts.append(part)
        elif char == "\\":
            parts.append(text[i + 1 : i + 2])
            i += 2
        else:
            parts.append(char)
            i += 1
    return Word("".join(parts), start, min(i, len(text)))


def _double_quoted(text: str, i: int) -> tuple[str, int] | None:
    """The text of a "..." string opened before `i`, and the index after its closing quote."""
    parts: list[str] = []
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(parts), i + 1
        if char == "\\" and text[i + 1 : i + 2] in ('"', "\\", "$", "`"):
            parts.append(text[i + 1])
            i += 2
            continue
        parts.append(char)
        i += 1
    return None


# ---------------------------------------------------------------- the server in a command

_ENTRY_POINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("sglang", re.compile(r"^(?:sglang\.launch_server|sglang_router\.launch_server)$")),
    ("sglang", re.compile(r"sglang/launch_server\.py$")),
    ("vllm", re.compile(r"^vllm\.entrypoints\.(?:openai\.)?api_server$")),
    ("vllm", re.compile(r"vllm/entrypoints/(?:openai/)?api_server\.py$")),
)
# A registry before an image's repository: `docker.io/`, a mirror's `host:5000/`.
_REGISTRY = r"(?:[\w.-]+(?::\d+)?/)"
# Images whose entry point is the server: `docker run ... vllm/vllm-openai --model m`.
_SERVER_IMAGES = (("vllm", rf"{_REGISTRY}?vllm/vllm-openai(?::\S+)?"),)
# What such an image runs with the arguments it is given (a pod's `args:` alone).
_IMAGE_ENTRY_POINTS = {"vllm": "vllm serve"}
_DOCKER_IMAGES = tuple((fw, re.compile(rf"^{image}$")) for fw, image in _SERVER_IMAGES)
# Where a server launch starts in a line of text (a log, a write-up): the module forms
# need the interpreter before them, so prose that only names a module is no command.
ENTRY_IN_TEXT = re.compile(
    r"python[\d.]*\s+(?:-\w+\s+)*-m\s+"
    r"(?:sglang(?:_router)?\.launch_server|vllm\.entrypoints\.(?:openai\.)?api_server)\b"
    r"|(?<![\w.-])(?:sglang|vllm)\s+serve\b"
)
# A server image in a line of text; a launch only after `docker run` (see launch_start).
_IMAGE_IN_TEXT = re.compile(
    r"(?<![\w/.:-])(?:" + "|".join(image for _, image in _SERVER_IMAGES) + r")(?=\s|$)"
)
_SERVE_CLIS = {"sglang": "sglang", "vllm": "vllm"}
# A framework's package pinned, in a command or in any text ("sglang[all]==0.5.9").
PINNED_RELEASE = re.compile(rf"\b(sglang|vllm)(?:\[[\w,]+\])?=={versions.VERSION_TEXT}")
# A framework's image with a release tag: its repository is named for the framework
# (`lmsysorg/sglang`, `vllm/vllm-openai`); `latest` or `nightly` name no release.
_RELEASE_IMAGE_NAME = rf"{_REGISTRY}*(sglang|vllm)(?:-openai)?:{versions.VERSION_TEXT}"
_RELEASE_IMAGE = re.compile(rf"^{_RELEASE_IMAGE_NAME}(?:$|[-_])")
# The same image named in any text: `kubectl describe`'s "Image:", a compose file, `docker ps`.
RELEASE_IMAGE_IN_TEXT = re.compile(rf"(?<![\w/.:-]){_RELEASE_IMAGE_NAME}(?=$|[-_\s\"',)\]])", re.M)
_ENV_ASSIGN = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$", re.S)
_BOOL_WORDS = {"true": "true", "false": "false", "1": "true", "0": "false"}


@dataclass(frozen=True)
class _Option:
    """One option among the server's arguments: words [first, end) of the command."""

    key: str  # canonical name (with a ".sub" part for `--x.y`), or the name as written
    value: str
    first: int
    end: int
    known: bool


@dataclass(frozen=True)
class _Server:
    """Where the server sits in a list of words, and what its arguments say."""

    framework: str | None
    entry: int  # index of the first word of the server program (or of the first flag)
    args: int  # index of the first argument
    stop: int  # index after the last argument
    options: tuple[_Option, ...]
    positional: tuple[str, ...]


def parse_launch_command(cmd: str, framework: str | None = None) -> LaunchCommand:
    """Flags, model and environment of a server launch, however it was pasted.

    `framework` reads flags written without a server (`--tp 8 --enable-x`) in that
    framework's table; without it, the table that knows more of them is used.
    """
    found = words(cmd)
    nested = _nested(found)
    if nested is not None:
        index, inner = nested
        outer = [w.text for w in found[:index]]
        return LaunchCommand(
            inner.framework, inner.model, inner.flags, inner.unknown_flags,
            {**_env_assignments(outer), **inner.env},
            inner.release or release_named(outer, inner.framework),
        )  # fmt: skip
    server = _server(found, framework)
    texts = [w.text for w in found]
    env = _env_assignments(texts[: server.args])
    values = {o.key: o.value for o in server.options if o.known}
    model = values.get("model-path") or values.get("model")
    if model is None and server.framework == "vllm" and server.positional:
        model = server.positional[0]
    unknown = tuple(texts[o.first].partition("=")[0] for o in server.options if not o.known)
    release = release_named(texts[: server.args], server.framework)
    return LaunchCommand(server.framework, model, values, unknown, env, release)


def release_named(texts: Iterable[str], framework: str | None) -> str | None:
    """The release of `framework` that words before a server name (see
    `LaunchCommand.release`); the last one, as a later pin is the one installed."""
    found = None
    for text in texts:
        match = PINNED_RELEASE.fullmatch(text) or _RELEASE_IMAGE.match(text)
        if match and match.group(1) == framework:
            found = match.group(2)
    return found


def names_server(cmd: str) -> bool:
    """Does the command start a server (rather than being flags alone)?"""
    found = words(cmd)
    return _find_entry([w.text for w in found]) is not None or _nested(found) is not None


@dataclass(frozen=True)
class FoundCommand:
    """A launch command the user did not type into the command field but the paste holds:
    a command line inside it, or one rebuilt from the settings the server printed."""

    text: str
    # "paste", or the printout it was rebuilt from: "ServerArgs" | "non-default args" | "Namespace"
    source: str
    # Flags written that the server fills in itself when they are not given: the value
    # may be the server's choice rather than the user's.
    server_chosen: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()  # settings printed that no flag can be written for


_CONTAINER_TOOLS = ("docker", "podman")
_CONTAINER_RUN = re.compile(rf"(?<![\w.-])(?:{'|'.join(_CONTAINER_TOOLS)})\s+run\s")


def command_in_text(text: str) -> str | None:
    """The last server launch command pasted inside a text (a log, an issue), as
    `command_at` reads it, that names a server with a model or flags."""
    # A pod's container first: its words, one a line or in a YAML list, are no shell line.
    image = _IMAGE_IN_TEXT.search(text)
    framework = next((fw for fw, p in _DOCKER_IMAGES if image and p.match(image.group())), None)
    if (pod := pod_command(text, _IMAGE_ENTRY_POINTS.get(framework or ""))) is not None:
        parsed = parse_launch_command(pod)
        if parsed.framework and (parsed.flags or parsed.model):
            return pod
    if not (ENTRY_IN_TEXT.search(text) or image):
        return None  # (most pastes: one pass over the text instead of one per line)
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if launch_start(line[:_SCAN_CHARS]) is not None]
    for i in reversed(starts):
        command = command_at(lines, i)[1].strip()
        parsed = parse_launch_command(command)
        if parsed.framework and (parsed.flags or parsed.model):
            return command
    return None


# Where a command in a text starts with its line: a prompt, a wrapper, an assignment.
_SHELL_START = re.compile(
    r"^\s*(?:\$ |\[bash\]\s*|# |ssh\s|nohup\s|env\s|[A-Z_][A-Z0-9_]*=|python|vllm\s|sglang\s"
    r"|sudo\s|docker\s)"
)
_PROMPT = re.compile(r"^\s*(?:\$\s+|\[bash\]\s*|#\s+)")
_SCAN_CHARS = 4000  # a launch starts near the start of its line
_MAX_COMMAND_LINES = 60
_MAX_COMMAND_CHARS = 8000


def command_at(lines: list[str], i: int) -> tuple[int, str, bool]:
    """The launch command that starts on line `i` (where `launch_start` finds one):
    (end line, command text, quoted inline in a sentence?). It takes the whole line
    when the line starts as a shell command (`$ `, `ssh`, `sudo`, an assignment), and
    goes on after a trailing backslash or while a quote (ssh host '...') is open."""
    first = lines[i]
    column = launch_start(first[:_SCAN_CHARS]) or 0
    tick = first.rfind("`", 0, column)
    if tick >= 0 and first.count("`", 0, column) % 2 == 1:
        close = first.find("`", column)
        return i + 1, first[tick + 1 : close if close > 0 else None], True
    start = 0 if _SHELL_START.match(first) else column
    parts = [_PROMPT.sub("", first[start:], count=1)[:_MAX_COMMAND_CHARS]]
    end = i + 1
    while end < len(lines) and end - i < _MAX_COMMAND_LINES and _continues(parts):
        parts.append(lines[end][:_MAX_COMMAND_CHARS])
        end += 1
    return end, "\n".join(parts), False


def split_at_launch(text: str) -> tuple[str, str] | None:
    """(the words before it, the launch command) of the first server launch in a text that
    starts with a few words about where it runs: "on 8x H100, sglang 0.5.9: python -m
    sglang.launch_server …" (a chat message). None when no launch starts in it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        column = launch_start(line[:_SCAN_CHARS])
        if column is not None:
            _, command, _ = command_at(lines, i)
            before = "\n".join([*lines[:i], line[:column]])
            return before.strip().strip("`").strip(), command.strip()
    return None


def _continues(parts: list[str]) -> bool:
    """After a trailing backslash, or while a quote (ssh host '...') is open."""
    joined = "\n".join(parts)
    return joined.rstrip().endswith("\\") or joined.count("'") % 2 == 1


def launch_start(line: str) -> int | None:
    """Where a launch in `line` starts: at the `docker run` / `podman run` that runs the
    server, else at its entry point with the environment assignments right before it.
    Linear in the line, whatever it holds (a paste can be megabytes of one line)."""
    entry = ENTRY_IN_TEXT.search(line)
    image = _IMAGE_IN_TEXT.search(line)
    first = min((found.start() for found in (entry, image) if found), default=None)
    if first is None:
        return None
    runs = list(_CONTAINER_RUN.finditer(line, 0, first))
    if runs:
        return runs[-1].start()
    if entry is None:
        return None  # an image named, not run
    start = entry.start()
    for word in reversed(list(re.finditer(r"\S+", line[:start]))):
        if not _ENV_ASSIGN.match(word.group()):
            break
        start = word.start()
    return start


def _nested(found: list[Word]) -> tuple[int, LaunchCommand] | None:
    """`ssh host '...'` and `bash -c "..."`: the server command is one quoted word."""
    texts = [w.text for w in found]
    if _find_entry(texts) is not None and not any(" " in t for t in texts):
        return None
    for i, text in enumerate(texts):
        # A quoted server path with a space ("/home/me/my code/sglang/launch_server.py")
        # is the entry point itself, not a command inside it.
        if " " in text and not _find_entry([text]) and _find_entry([w.text for w in words(text)]):
            return i, parse_launch_command(text)
    return None


def _find_entry(texts: list[str]) -> tuple[str, int] | None:
    """(framework, index of the first argument) of the server entry point, if any."""
    for i, token in enumerate(texts):
        for framework, pattern in _ENTRY_POINTS:
            if pattern.search(token):
                return framework, i + 1
        following = texts[i + 1] if i + 1 < len(texts) else ""
        base = token.rsplit("/", 1)[-1]
        if base in _SERVE_CLIS and following == "serve":
            return _SERVE_CLIS[base], i + 2
        for framework, pattern in _DOCKER_IMAGES:
            if pattern.match(token):
                return framework, i + 1
    return None


def _server(found: list[Word], hint: str | None = None) -> _Server:
    texts = [w.text for w in found]
    entry = _find_entry(texts)
    if entry is None:
        return _bare_flags(found, hint)
    framework, args = entry
    stop = _control_after(found, args)
    options, positional = _read_args(texts, args, stop, framework)
    start = _command_start(found, args)
    return _Server(framework, start, args, stop, options, positional)


def _container_run(texts: list[str], start: int, stop: int) -> int | None:
    """Index of `run` in `docker run` / `podman run` among texts[start:stop], if there."""
    for i in range(start, stop - 1):
        if texts[i].rsplit("/", 1)[-1] in _CONTAINER_TOOLS and texts[i + 1] == "run":
            return i + 1
    return None


def _bare_flags(found: list[Word], hint: str | None) -> _Server:
    """No entry point: read the flags in `hint`'s table, else in the one that knows more."""
    texts = [w.text for w in found]
    args = next((i for i, t in enumerate(texts) if flags.is_option(t)), len(texts))
    stop = _control_after(found, args)
    if hint in FRAMEWORKS:  # a hint naming no framework we know ("gpustack") hints nothing
        return _Server(hint, args, args, stop, *_read_args(texts, args, stop, hint))
    read = {fw: _read_args(texts, args, stop, fw) for fw in FRAMEWORKS}
    unknown = {fw: sum(not o.known for o in options) for fw, (options, _) in read.items()}
    if unknown["sglang"] == unknown["vllm"]:  # either: a name either table knows
        return _Server(None, args, args, stop, *_read_args(texts, args, stop, None))
    framework = min(unknown, key=unknown.__getitem__)
    return _Server(framework, args, args, stop, *read[framework])


def _control_after(found: list[Word], start: int) -> int:
    return next((i for i in range(start, len(found)) if found[i].control), len(found))


def _command_start(found: list[Word], args: int) -> int:
    """Index of the first word of the simple command holding the server (after `cd x &&`)."""
    controls = [i for i in range(args) if found[i].control]
    return controls[-1] + 1 if controls else 0


def _env_assignments(texts: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for token in texts:
        found = _ENV_ASSIGN.match(token)
        if found:
            env[found.group(1)] = found.group(2)
    return env


def _read_args(
    texts: list[str], start: int, stop: int, framework: str | None
) -> tuple[tuple[_Option, ...], tuple[str, ...]]:
    options: list[_Option] = []
    positional: list[str] = []
    i = start
    while i < stop:
        if not flags.is_option(texts[i]):
            positional.append(texts[i])
            i += 1
            continue
        option = _read_option(texts, i, stop, framework)
        options.append(option)
        i = option.end
    return tuple(options), tuple(positional)


def _read_option(texts: list[str], i: int, stop: int, framework: str | None) -> _Option:
    """The option at texts[i] with the value words it takes."""
    name, eq, inline = texts[i].partition("=")
    base, _, sub = name.partition(".")
    hit = flags.lookup(base, framework)
    if eq:
        return _option(hit, name, sub, inline, i, i + 1)
    if hit is not None and hit.spec.type == "bool":
        explicit = _BOOL_WORDS.get(texts[i + 1].lower()) if i + 1 < stop else None
        return _option(hit, name, sub, explicit or "true", i, i + (2 if explicit else 1))
    # An unknown option may take values too: they must not be read as the model.
    values = _values(texts, i + 1, stop, hit)
    return _option(hit, name, sub, " ".join(values) or "true", i, i + 1 + len(values))


def _option(hit: FlagHit | None, name: str, sub: str, value: str, first: int, end: int) -> _Option:
    if hit is None:
        return _Option(name, value, first, end, known=False)
    if hit.negated:
        value = "false" if value == "true" else "true" if value == "false" else value
    key = hit.spec.name + (f".{sub}" if sub else "")
    return _Option(key, value, first, end, known=True)


_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def _values(texts: list[str], start: int, stop: int, hit: FlagHit | None) -> list[str]:
    """The words an option takes: one, more only for a list of numbers (`--sizes 1 2 4`).

    An unknown option takes every word up to the next option: eating a word is safer
    than reading its value as the model.
    """
    taken: list[str] = []
    for j in range(start, stop):
        if flags.is_option(texts[j]):
            break
        numeric = hit is not None and hit.spec.type in ("int", "float")
        if taken and hit is not None and not (numeric and _NUMBER.match(texts[j])):
            break
        taken.append(texts[j])
    return taken


# ---------------------------------------------------------------- editing


def writable(change: Change, framework: str | None = None) -> bool:
    """Whether a change can be written into a command: not a flag that takes a value named
    without one ("raise --mem-fraction-static" says which flag, not what to write)."""
    if change.action is not ChangeAction.SET_FLAG or change.value is not None:
        return True
    spec = flags.flag(change.name, framework)
    return spec is None or not flags.takes_value(spec)


def apply_changes(
    cmd: str, changes: Iterable[Change], *, framework: str | None = None, version: str | None = None
) -> str:
    """`cmd` with the flag and environment changes applied; other changes are left out.

    `framework` is used when the command names no server (bare flags); `version`
    chooses the spelling of a renamed flag the change adds.
    """
    # The command given back runs as written: the shell's dashes and quotes.
    cmd = _TYPED_DASH_IN_COMMAND.sub("--", cmd).translate(_TYPED_QUOTES)
    found = words(cmd)
    nested = _nested(found)
    if nested is not None:
        word = found[nested[0]]
        inner = apply_changes(word.text, changes, framework=framework, version=version)
        return cmd[: word.start] + shlex.quote(inner) + cmd[word.end :]
    # A command that writes a flag's old name runs a release that knows only that name:
    # a flag the fix adds is spelled for it too, or the server would refuse it.
    version = version or release_written(cmd, framework)
    for change in changes:
        cmd = _apply(cmd, change, framework, version)
    return cmd


def rename_flags(cmd: str, renames: Mapping[str, str]) -> str:
    """`cmd` with each flag written as a key of `renames` written as its value instead
    (`--kv-cache-dytpe 8` -> `--kv-cache-dtype 8`, `--x=1` -> `--y=1`)."""
    for word in reversed(words(cmd)):
        name, equals, value = word.text.partition("=")
        if name in renames and cmd[word.start : word.end] == word.text:
            cmd = cmd[: word.start] + renames[name] + equals + value + cmd[word.end :]
    return cmd


def release_written(cmd: str, framework: str | None = None) -> str | None:
    """The newest release a command can be for, judged by its flags' names: the last
    release of the oldest renamed spelling it uses; None when it uses none."""
    found = words(cmd)
    nested = _nested(found)
    if nested is not None:  # `ssh host '...'`: the server's words are inside the quotes
        return release_written(found[nested[0]].text, framework)
    server = _server(found, framework)
    lasts = []
    for option in server.options:
        written = flags.flag_key(found[option.first].text.partition("=")[0])
        spec = flags.flag(written, server.framework or framework)
        renamed = spec.renamed if spec else ()
        lasts += [last for old, last in renamed if flags.flag_key(old) == written]
    return min(lasts, key=versions.sort_key) if lasts else None


def _apply(cmd: str, change: Change, framework: str | None, version: str | None) -> str:
    found = words(cmd)
    server = _server(found, framework)
    fw = server.framework or framework
    if change.action is ChangeAction.SET_ENV:
        return _set_env(cmd, found, server, change.name, change.value or "")
    if change.action not in (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG):
        return cmd
    if not writable(change, fw):  # the command keeps the user's own value
        return cmd
    key = flags.canonical_flag(change.name, fw)
    setting = _setting(change, key, fw, version)
    present = [o for o in server.options if o.key == key]
    if not present:  # a new flag goes after the server's last argument
        at = found[server.stop - 1].end if server.stop > 0 else len(cmd)
        return cmd[:at] + " " + setting + cmd[at:] if setting else cmd
    # The first spelling is replaced in place; any other spelling of the same flag goes.
    for option in reversed(present[1:]):
        cmd = _replace(cmd, found, option, "")
    return _replace(cmd, found, present[0], setting)


def _setting(change: Change, key: str, framework: str | None, version: str | None) -> str:
    """The words that set the flag ("--kv-cache-dtype bf16"); "" when it is to go."""
    if change.action is ChangeAction.REMOVE_FLAG:
        return ""
    spelled = flags.spell(key, framework, version) if framework else "--" + key
    return flag_setting(flags.flag(key, framework), spelled, change.value)


def flag_setting(spec: FlagSpec | None, spelled: str, value: str | None) -> str:
    """`--x` for a switch turned on, its negation (or "") for one turned off, else
    `--x value` with the value quoted for a shell."""
    if spec is not None and spec.type == "bool":
        if value is None or value.lower() in ("true", "1"):
            return spelled
        if value.lower() in ("false", "0"):
            negation = next(iter(spec.negations), None)
            return "--" + flags.flag_key(negation) if negation else ""
    if value is None or value == "true":
        return spelled
    return f"{spelled} {shlex.quote(value)}"


def _replace(cmd: str, found: list[Word], option: _Option, text: str) -> str:
    """Put `text` where the option's words are; with no text, drop them and the space before."""
    start, end = found[option.first].start, found[option.end - 1].end
    if text:
        return cmd[:start] + text + cmd[end:]
    before = found[option.first - 1].end if option.first > 0 else 0
    return cmd[:before] + cmd[end:]


def _set_env(cmd: str, found: list[Word], server: _Server, name: str, value: str) -> str:
    assignment = f"{name}={shlex.quote(value)}"
    for word in found[server.entry : server.args]:
        if word.text.startswith(f"{name}="):
            return cmd[: word.start] + assignment + cmd[word.end :]
    run = _container_run([w.text for w in found], server.entry, server.args)
    if run is not None:  # the variable must reach the container: `docker run -e X=1 ...`
        return cmd[: found[run].end] + f" -e {assignment}" + cmd[found[run].end :]
    at = found[server.entry].start if server.entry < len(found) else len(cmd)
    return cmd[:at] + assignment + " " + cmd[at:]


__all__ = [
    "ENTRY_IN_TEXT",
    "FoundCommand",
    "LaunchCommand",
    "Word",
    "apply_changes",
    "command_at",
    "command_in_text",
    "flag_setting",
    "launch_start",
    "names_server",
    "parse_launch_command",
    "release_written",
    "split_at_launch",
    "words",
    "writable",
]


# ---------------------------------------------------------------- comparing two launches


@dataclass(frozen=True)
class LaunchDifference:
    """A setting in which a launch differs from one known to work: a flag (spelled for
    the user's release) or an environment variable. None: not set."""

    name: str
    yours: str | None
    works: str | None


# Where the server listens and what it calls the model are the user's own choice.
_NOT_COMPARED = frozenset({"host", "port", "model", "model-path", "served-model-name"})


def launch_differences(
    yours: str, works: str, *, framework: str | None = None, version: str | None = None
) -> list[LaunchDifference]:
    """The flags and environment variables in which `yours` differs from `works`: the
    known-good launch's settings first, in its order, then those only `yours` sets."""
    mine, good = parse_launch_command(yours, framework), parse_launch_command(works, framework)
    framework = framework or mine.framework or good.framework
    found: list[LaunchDifference] = []
    names = [n for n in dict.fromkeys([*good.flags, *mine.flags]) if n not in _NOT_COMPARED]
    for name in names:
        theirs, ours = good.flags.get(name), mine.flags.get(name)
        if theirs != ours:
            spelled = flags.spell(name, framework, version) if framework else "--" + name
            found.append(LaunchDifference(spelled, ours, theirs))
    for name in dict.fromkeys([*good.env, *mine.env]):
        if good.env.get(name) != mine.env.get(name):
            found.append(LaunchDifference(name, mine.env.get(name), good.env.get(name)))
    return found
