"""CWM's patch similarity, written with the Python standard library only.

Meta's released CWM code (cwm/rl/swerl/similarities.py, called with
ignore_non_oracle_files=True) parses each patch with unidiff's PatchSet and
compares per-file texts with difflib. unidiff is not installed where cwm's
fixtures are made, so this module re-implements the part of unidiff 0.7.5
that the similarity depends on (PatchSet parsing, PatchedFile.path and
is_rename, str(Hunk)) rule for rule, and then CWM's normalization on top.
gen_similarity.py uses it to write the expected values of the Go port; the
Go tests never run Python.

Where unidiff raises, this module raises too: ParseError for what CWM
catches (UnidiffParseError, UnboundLocalError; the patch then counts as
changing no file) and OtherError for what it does not (an AttributeError or
TypeError inside unidiff; CWM then records no similarity at all).
"""

import difflib
import io
import re

DEV_NULL = "/dev/null"

# unidiff 0.7.5's patterns. Lines keep their "\n", as they do when unidiff
# iterates over a StringIO.
RE_SOURCE_FILENAME = re.compile(r"^--- (?P<filename>[^\t\n]+)(?:\t(?P<timestamp>[^\n]+))?")
RE_TARGET_FILENAME = re.compile(r"^\+\+\+ (?P<filename>[^\t\n]+)(?:\t(?P<timestamp>[^\n]+))?")
RE_DIFF_GIT_HEADER = re.compile(r"^diff --git (?P<source>a/[^\t\n]+) (?P<target>b/[^\t\n]+)")
RE_DIFF_GIT_HEADER_URI_LIKE = re.compile(r"^diff --git (?P<source>.*://[^\t\n]+) (?P<target>.*://[^\t\n]+)")
RE_DIFF_GIT_HEADER_NO_PREFIX = re.compile(r"^diff --git (?P<source>[^\t\n]+) (?P<target>[^\t\n]+)")
RE_DIFF_GIT_DELETED_FILE = re.compile(r"^deleted file mode \d+$")
RE_DIFF_GIT_NEW_FILE = re.compile(r"^new file mode \d+$")
RE_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))?\ @@[ ]?(.*)")
RE_HUNK_BODY_LINE = re.compile(r"^(?P<line_type>[- \+\\])(?P<value>.*)", re.DOTALL)
RE_HUNK_EMPTY_BODY_LINE = re.compile(r"^(?P<line_type>[- \+\\]?)(?P<value>[\r\n]{1,2})", re.DOTALL)
RE_NO_NEWLINE_MARKER = re.compile(r"^\\ No newline at end of file")
RE_BINARY_DIFF = re.compile(
    r"^Binary files? "
    r"(?P<source_filename>[^\t]+?)(?:\t(?P<source_timestamp>[\s0-9:\+-]+))?"
    r"(?: and (?P<target_filename>[^\t]+?)(?:\t(?P<target_timestamp>[\s0-9:\+-]+))?)? (differ|has changed)"
)
NO_NEWLINE_VALUE = " No newline at end of file"


class ParseError(Exception):
    """A patch unidiff rejects in a way CWM catches."""


class OtherError(Exception):
    """An exception unidiff raises that CWM does not catch."""


class Hunk:
    def __init__(self, src_start, src_len, tgt_start, tgt_len, section):
        self.source_start = int(src_start)
        self.source_length = 1 if src_len is None else int(src_len)
        self.target_start = int(tgt_start)
        self.target_length = 1 if tgt_len is None else int(tgt_len)
        self.section = section
        self.lines = []  # str(Line) of each line: its type and its value

    def __str__(self):
        # unidiff writes the lengths even when the header left them out.
        head = "@@ -%d,%d +%d,%d @@%s\n" % (
            self.source_start, self.source_length, self.target_start, self.target_length,
            " " + self.section if self.section else "")
        return head + "".join(self.lines)


class PatchedFile:
    def __init__(self, source, target, binary=False):
        self.source_file = source
        self.target_file = target
        self.binary = binary
        self.hunks = []

    def is_rename(self):
        # Only binary files, which CWM skips first, can lack a name.
        return (self.source_file != DEV_NULL and self.target_file != DEV_NULL
                and self.source_file[2:] != self.target_file[2:])

    def path(self):
        path = self.source_file
        if path == DEV_NULL or (self.is_rename() and self.target_file != DEV_NULL):
            path = self.target_file
        if path.startswith("a/") or path.startswith("b/"):
            path = path[2:]
        return path

    def parse_hunk(self, header, lines):
        m = RE_HUNK_HEADER.match(header)
        hunk = Hunk(*m.groups())
        src, tgt = hunk.source_start, hunk.target_start
        src_end, tgt_end = src + hunk.source_length, tgt + hunk.target_length
        for line in lines:
            m = RE_HUNK_BODY_LINE.match(line) or RE_HUNK_EMPTY_BODY_LINE.match(line)
            if not m:
                raise ParseError("Hunk diff line expected: %r" % line)
            kind = m.group("line_type") or " "  # an empty line is context
            if kind == "+":
                tgt += 1
            elif kind == "-":
                src += 1
            elif kind == " ":
                src += 1
                tgt += 1
            if src > src_end or tgt > tgt_end:
                raise ParseError("Hunk is longer than expected")
            hunk.lines.append(kind + m.group("value"))
            if src == src_end and tgt == tgt_end:
                break
        if src < src_end or tgt < tgt_end:
            raise ParseError("Hunk is shorter than expected")
        self.hunks.append(hunk)

    def append_to_last_hunk(self, text, what):
        if not self.hunks:
            raise ParseError("Unexpected " + what)
        self.hunks[-1].lines.append(text)


_UNBOUND = object()


def parse_patch(text):
    """Returns the PatchedFiles unidiff 0.7.5's PatchSet(text) holds."""
    files = []
    current = None
    info = None  # unidiff's patch_info: only whether there is one matters
    source_file = source_timestamp = _UNBOUND
    lines = iter(io.StringIO(text))
    for line in lines:
        m = (RE_DIFF_GIT_HEADER.match(line) or RE_DIFF_GIT_HEADER_URI_LIKE.match(line)
             or RE_DIFF_GIT_HEADER_NO_PREFIX.match(line))
        if m:
            info = []
            source_file = m.group("source")
            current = PatchedFile(source_file, m.group("target"))
            files.append(current)
            continue
        if RE_DIFF_GIT_NEW_FILE.match(line):
            if current is None or info is None:
                raise ParseError("Unexpected new file found")
            current.source_file = DEV_NULL
            continue
        if RE_DIFF_GIT_DELETED_FILE.match(line):
            if current is None or info is None:
                raise ParseError("Unexpected deleted file found")
            current.target_file = DEV_NULL
            continue
        m = RE_SOURCE_FILENAME.match(line)
        if m:
            source_file, source_timestamp = m.group("filename"), m.group("timestamp")
            if current is not None and current.source_file != source_file:
                current = None
            continue
        m = RE_TARGET_FILENAME.match(line)
        if m:
            if current is not None and current.target_file != m.group("filename"):
                raise ParseError("Target without source")
            if current is None:
                if source_file is _UNBOUND or source_timestamp is _UNBOUND:
                    raise ParseError("UnboundLocalError: no source file line before")
                current = PatchedFile(source_file, m.group("filename"))
                files.append(current)
                info = None
            continue
        if RE_HUNK_HEADER.match(line):
            info = None
            if current is None:
                raise ParseError("Unexpected hunk found")
            current.parse_hunk(line, lines)
            continue
        if RE_NO_NEWLINE_MARKER.match(line):
            if current is None:
                raise ParseError("Unexpected marker")
            current.append_to_last_hunk("\\" + NO_NEWLINE_VALUE + "\n", "marker")
            continue
        if line == "\n" and current is not None:
            current.append_to_last_hunk("\n", "trailing newline character")
            continue
        if info is None:
            current = None
            info = []
        m = RE_BINARY_DIFF.match(line)
        if m:
            source_file = m.group("source_filename")
            if current is not None:
                current.binary = True
            else:
                files.append(PatchedFile(source_file, m.group("target_filename"), binary=True))
            info = None
            current = None
            continue
        if line == "GIT binary patch\n":
            if current is None:
                raise OtherError("AttributeError: binary patch outside a file")
            current.binary = True
            info = None
            current = None
            continue
    return files


def normalized_file_patch(text):
    """CWM's get_normalized_file_patch: path -> normalized change."""
    result = {}
    for f in parse_patch(text):
        if f.binary:
            continue
        if f.is_rename():
            source, target = f.source_file, f.target_file
            if source.startswith("a/"):
                source = source[2:]
            if target.startswith("b/"):
                target = target[2:]
            header, path = "rename from %s to %s" % (source, target), source
        else:
            header, path = "", f.path()
        body = "\n".join(str(h).strip() for h in f.hunks)
        result[path] = (header + "\n" + body).strip()
    return result


def ratio(a, b):
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def similarity(predicted, oracle):
    """CWM's similarity with ignore_non_oracle_files=True.

    Returns (score, per_file, predicted_error). score is None when the
    oracle yields no file, as CWM then has no similarity to average. The
    mean is summed in sorted path order (CWM sums in set order, which
    Python's hash randomisation varies between processes; only the last
    bit of the mean can differ).
    """
    oracle_files = normalized_file_patch(oracle)
    predicted_error = ""
    try:
        predicted_files = normalized_file_patch(predicted)
    except (ParseError, OtherError) as e:
        predicted_error = type(e).__name__
        predicted_files = {}
    per_file = {}
    for path in sorted(oracle_files):
        p, o = predicted_files.get(path, ""), oracle_files[path]
        per_file[path] = 0.0 if p == "" or o == "" else ratio(p, o)
    if not per_file:
        return None, per_file, predicted_error
    total = 0.0
    for path in sorted(per_file):
        total += per_file[path]
    return total / len(per_file), per_file, predicted_error
