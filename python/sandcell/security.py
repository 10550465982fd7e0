"""llm-sandbox's advisory code checks: regular expressions and restricted
modules looked for in the code (comments removed first), each with a
severity; code is unsafe when a violation's severity is at or above the
policy's threshold, and violations below it are reported but allowed.

This is advice for the caller, not the boundary: what code can do is decided
by the cell (namespaces, seccomp, limits, no network), whatever it imports."""

import io
import re
import tokenize
from dataclasses import dataclass, field
from enum import IntEnum
from typing import List, Optional


class SecurityIssueSeverity(IntEnum):
    SAFE = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3


@dataclass
class SecurityPattern:
    pattern: str
    description: str
    severity: SecurityIssueSeverity

    def __post_init__(self):
        re.compile(self.pattern)  # a bad pattern fails here, not at check time
        self.severity = SecurityIssueSeverity(self.severity)


@dataclass
class RestrictedModule:
    name: str
    description: str
    severity: SecurityIssueSeverity

    def __post_init__(self):
        self.severity = SecurityIssueSeverity(self.severity)


@dataclass
class SecurityPolicy:
    severity_threshold: SecurityIssueSeverity = SecurityIssueSeverity.SAFE
    patterns: Optional[List[SecurityPattern]] = None
    restricted_modules: Optional[List[RestrictedModule]] = None

    def add_pattern(self, pattern):
        if self.patterns is None:
            self.patterns = []
        self.patterns.append(pattern)

    def add_restricted_module(self, module):
        if self.restricted_modules is None:
            self.restricted_modules = []
        self.restricted_modules.append(module)


_HASH_COMMENT = {"python", "bash", "ruby", "r"}
_SLASH_COMMENT = {"javascript", "typescript", "java", "cpp", "c", "go", "rust"}


def _strip_python(code):
    # comment tokens blanked where they are (strings keep their '#')
    lines = code.splitlines(keepends=True)
    try:
        for t in tokenize.generate_tokens(io.StringIO(code).readline):
            if t.type == tokenize.COMMENT:
                (row, col), (_, end) = t.start, t.end
                ln = lines[row - 1]
                lines[row - 1] = ln[:col] + ln[end:]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.sub(r"(?m)#.*$", "", code)
    return "".join(lines)


def _strip_c_like(code):
    # comments outside string literals
    pat = re.compile(r'("(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`(?:\\.|[^`\\])*`)|//[^\n]*|/\*.*?\*/', re.S)
    return pat.sub(lambda m: m.group(1) or "", code)


def filter_comments(code, lang="python"):
    """The code without its comments."""
    if lang == "python":
        return _strip_python(code)
    if lang in _SLASH_COMMENT:
        return _strip_c_like(code)
    if lang in _HASH_COMMENT:
        return re.sub(r"(?m)(^|\s)#.*$", r"\1", code)
    return code


def import_pattern(module, lang="python"):
    """A regular expression matching an import of module in lang."""
    m = re.escape(module)
    if lang == "python":
        return (r"(?m)^\s*(?:import\s+(?:[\w.]+\s*(?:as\s+\w+)?\s*,\s*)*%s(?:\.\w+)*\b"
                r"|from\s+%s(?:\.[\w.]+)?\s+import\b)" % (m, m))
    if lang in ("javascript", "typescript"):
        return r"""(?:require\s*\(\s*['"]%s(?:/[^'"]*)?['"]\s*\)|\bfrom\s+['"]%s(?:/[^'"]*)?['"]|\bimport\s+['"]%s['"])""" % (m, m, m)
    if lang == "java":
        return r"(?m)^\s*import\s+(?:static\s+)?%s(?:\.[\w*]+)*\s*;" % m
    if lang in ("cpp", "c"):
        return r"(?m)^\s*#\s*include\s*[<\"]%s(?:\.h)?[>\"]" % m
    if lang == "go":
        return r'"%s"' % m
    if lang == "ruby":
        return r"""\brequire\s*\(?\s*['"]%s['"]""" % m
    if lang == "r":
        return r"""\b(?:library|require)\s*\(\s*['"]?%s['"]?\s*\)""" % m
    return r"\b%s\b" % m


def check(policy, code, lang="python"):
    """(is_safe, violations): violations are SecurityPattern objects, the
    restricted modules' as import patterns."""
    if policy is None:
        return True, []
    text = filter_comments(code, lang)
    violations = []
    for mod in policy.restricted_modules or []:
        pat = import_pattern(mod.name, lang)
        if re.search(pat, text):
            violations.append(SecurityPattern(pattern=pat, description=mod.description, severity=mod.severity))
    for p in policy.patterns or []:
        if p.pattern and re.search(p.pattern, text):
            violations.append(p)
    threshold = SecurityIssueSeverity(policy.severity_threshold)
    safe = not any(v.severity >= threshold for v in violations)
    return safe, violations
