#!/usr/bin/env python3
"""Labelled secret samples from other scanners' Go sources, for scripts/eval-guard.

Reads Go files from a bare git mirror and evaluates the small part of Go in which their authors
write test samples: string literals, `+`, `fmt.Sprintf`, `append`, `[]string{...}`,
`map[string]string{...}`, package- and function-level variables, and the sample helpers of
gitleaks' generator (`utils.GenerateSampleSecrets`, `secrets.NewSecret` with a random string
drawn from the regex, `utils.Hex("32")`, ...). A sample whose expression uses anything else is
counted as skipped, never guessed.

- `gitleaks`: every rule function of cmd/generate/config/rules/*.go; `tps` are positives, `fps`
  negatives, named by the function's RuleID (gitleaks v8.30 layout).
- `trufflehog`: the pattern tests of pkg/detectors/**/*_test.go (not *_integration_test.go):
  each table case with an `input`; a non-empty `want` makes it a positive, an empty one a
  negative, named by the detector's folder.

Writes one file per sample under OUT/<corpus>/<pos|neg>/<family>/<n>.txt (or the path a
`ValidateWithPaths` sample names) and OUT/<corpus>/index.json; prints counts to stderr.
Usage: eval_guard_samples.py CORPUS GIT_DIR OUT [COMMIT]
       eval_guard_samples.py tree GIT_DIR DEST COMMIT   (exports the text files of a tree)
"""

import json
import os
import random
import re
import subprocess
import sys
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import sre_constants as C
    import sre_parse


COMMIT = "HEAD"
"""The commit samples are read from."""


class Unknown(Exception):
    """An expression outside the evaluated subset."""


# ----------------------------------------------------------------------------------------------
# Lexer
# ----------------------------------------------------------------------------------------------

TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<num>\d+(?:\.\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\.\.|:=|==|!=|<=|>=|&&|\|\||\+=|[-+*/%&|^<>=!:;,.(){}\[\]])
  | (?P<other>.)
    """,
    re.S | re.X,
)


def go_string(tok):
    kind, text = tok
    if kind == "raw":
        return text[1:-1].replace("\r", "")
    body = text[1:-1]
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
              "b": "\b", "f": "\f", "v": "\v"}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif e == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        elif e == "U":
            out.append(chr(int(body[i + 2:i + 10], 16)))
            i += 10
        elif e in "01234567":
            out.append(chr(int(body[i + 1:i + 4], 8)))
            i += 4
        else:
            raise Unknown("escape")
    return "".join(out)


def lex(src):
    toks = []
    for m in TOKEN.finditer(src):
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            if kind == "comment" and "\n" in m.group():
                toks.append(("nl", "\n"))
            continue
        toks.append((kind, m.group()))
    return toks


# ----------------------------------------------------------------------------------------------
# Random strings from a regex (as gitleaks' reggen does with limit 1 for unbounded repeats)
# ----------------------------------------------------------------------------------------------

POSIX = {
    "[:alnum:]": "a-zA-Z0-9", "[:alpha:]": "a-zA-Z", "[:digit:]": "0-9", "[:lower:]": "a-z",
    "[:upper:]": "A-Z", "[:xdigit:]": "0-9a-fA-F", "[:space:]": " \\t", "[:word:]": "\\w",
    "[:punct:]": "!-/:-@\\[-`{-~",
}
PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]
CATEGORY = {
    C.CATEGORY_DIGIT: [chr(c) for c in range(48, 58)],
    C.CATEGORY_WORD: [chr(c) for c in range(48, 58)] + [chr(c) for c in range(65, 91)]
    + [chr(c) for c in range(97, 123)] + ["_"],
    C.CATEGORY_SPACE: [" "],
}
CATEGORY[C.CATEGORY_NOT_DIGIT] = [c for c in PRINTABLE if c not in CATEGORY[C.CATEGORY_DIGIT]]
CATEGORY[C.CATEGORY_NOT_WORD] = [c for c in PRINTABLE if c not in CATEGORY[C.CATEGORY_WORD]]
CATEGORY[C.CATEGORY_NOT_SPACE] = PRINTABLE


def class_chars(items):
    chars, negate = set(), False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op is C.CATEGORY:
            chars.update(CATEGORY[av])
        else:
            raise Unknown(f"class item {op}")
    if negate:
        return [c for c in PRINTABLE if c not in chars]
    return sorted(chars)


def generate(pattern, rng):
    for k, v in POSIX.items():
        pattern = pattern.replace(k, v)
    pattern = pattern.replace(r"\z", r"\Z").replace("(?-i:", "(?:")
    try:
        tree = sre_parse.parse(pattern)
    except Exception as e:  # noqa: BLE001 - any parse failure means "not evaluable"
        raise Unknown(f"regex: {e}") from e
    out = []

    def walk(seq):
        for op, av in seq:
            if op is C.LITERAL:
                out.append(chr(av))
            elif op is C.NOT_LITERAL:
                out.append(rng.choice([c for c in PRINTABLE if ord(c) != av]))
            elif op is C.ANY:
                out.append(rng.choice(PRINTABLE))
            elif op is C.IN:
                out.append(rng.choice(class_chars(av)))
            elif op is C.BRANCH:
                walk(rng.choice(av[1]))
            elif op is C.SUBPATTERN:
                walk(av[-1])
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
                lo, hi, sub = av
                if hi is C.MAXREPEAT:
                    hi = lo + 1
                for _ in range(rng.randint(lo, hi)):
                    walk(sub)
            elif op is C.AT:
                pass
            elif op is C.CATEGORY:
                out.append(rng.choice(CATEGORY[av]))
            elif op in (C.ASSERT, C.ASSERT_NOT):
                pass
            else:
                raise Unknown(f"regex op {op}")

    walk(tree)
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# Expression evaluation
# ----------------------------------------------------------------------------------------------

SAMPLE_FORMATS = [
    '{i}Token="{s}"', '{i}Token = "{s}"', "{i}Token={s}", "{i}Token = {s}",
    '{\n    "{i}_token": "{s}"\n}', '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}',
    "<{i}Token>\n    {s}\n</{i}Token>", "{i}_token: {s}", "{i}_token: '{s}'",
    '{i}_token: "{s}"', 'string {i}Token = "{s}";', 'var {i}Token string = "{s}"',
    '{i}Token := "{s}"', "{i}Token := `{s}`", 'String {i}Token = "{s}";',
    'var {i}Token = "{s}"', '${i}Token .= "{s}"', "{i}Token = '{s}'", '{i}Token = "{s}"',
    'System.setProperty("{I}_TOKEN", "{s}")', '  "{i}Token" => "{s}"', '{i}_TOKEN = "{s}"',
    '{i}_TOKEN := "{s}"', '{i}_TOKEN ::= "{s}"', '{i}_TOKEN :::= "{s}"', '{i}_TOKEN ?= "{s}"',
]
"""The contexts of gitleaks' `utils.GenerateSampleSecrets` (v8.30, cmd/generate/config/utils)."""

PATTERN_HELPERS = {
    "Numeric": "[0-9]{%s}", "Hex": "[a-f0-9]{%s}", "AlphaNumeric": "[a-z0-9]{%s}",
    "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}", "AlphaNumericExtended": r"[a-z0-9=_\-]{%s}",
    "AlphaNumericExtendedLong": r"[a-z0-9\/=_\+\-]{%s}",
}


def sample_secrets(ident, secret):
    return [f.replace("{i}", ident).replace("{I}", ident.upper()).replace("{s}", secret)
            for f in SAMPLE_FORMATS]


def sprintf(fmt, args):
    out, i, a = [], 0, 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        j = i + 1
        while j < len(fmt) and fmt[j] in "0123456789.-+# ":
            j += 1
        verb = fmt[j]
        if verb == "%":
            out.append("%")
        else:
            if a >= len(args):
                raise Unknown("sprintf args")
            v = args[a]
            a += 1
            if verb in "sdv":
                out.append(str(v))
            elif verb == "q":
                out.append(json.dumps(str(v)))
            else:
                raise Unknown("sprintf verb")
        i = j + 1
    return "".join(out)


class Parser:
    def __init__(self, toks, env, rng, funcs):
        self.t = toks
        self.i = 0
        self.env = env
        self.rng = rng
        self.funcs = funcs

    def peek(self, k=0):
        j = self.i
        seen = -1
        while j < len(self.t):
            if self.t[j][0] != "nl":
                seen += 1
                if seen == k:
                    return self.t[j]
            j += 1
        return ("eof", "")

    def next(self):
        while self.i < len(self.t) and self.t[self.i][0] == "nl":
            self.i += 1
        tok = self.t[self.i] if self.i < len(self.t) else ("eof", "")
        self.i += 1
        return tok

    def expect(self, text):
        tok = self.next()
        if tok[1] != text:
            raise Unknown(f"expected {text}, got {tok[1]}")

    def expr(self):
        v = self.unary()
        while self.peek()[1] == "+":
            self.next()
            w = self.unary()
            if not (isinstance(v, str) and isinstance(w, str)):
                raise Unknown("+ on non-strings")
            v = v + w
        return v

    def composite(self, kind):
        self.expect("{")
        items = [] if kind == "list" else {}
        while self.peek()[1] != "}":
            first = self.expr()
            if kind == "map":
                self.expect(":")
                items[first] = self.expr()
            else:
                items.append(first)
            if self.peek()[1] == ",":
                self.next()
        self.expect("}")
        return items

    def unary(self):
        tok = self.next()
        kind, text = tok
        if kind in ("raw", "str"):
            return go_string(tok)
        if kind == "num":
            return int(text) if text.isdigit() else float(text)
        if text == "(":
            v = self.expr()
            self.expect(")")
            return v
        if text == "[":
            self.expect("]")
            elem = self.next()
            if elem[1] != "string":
                raise Unknown("slice type")
            return self.composite("list")
        if text == "map":
            for want in ("[", "string", "]", "string"):
                self.expect(want)
            return self.composite("map")
        if kind != "ident":
            raise Unknown(f"token {text}")
        name = text
        while self.peek()[1] == "." and self.peek(1)[0] == "ident":
            self.next()
            name += "." + self.next()[1]
        if self.peek()[1] == "(":
            self.next()
            args, spread = [], False
            while self.peek()[1] != ")":
                args.append(self.expr())
                if self.peek()[1] == "...":
                    self.next()
                    spread = True
                if self.peek()[1] == ",":
                    self.next()
            self.expect(")")
            return self.call(name, args, spread)
        if name in ("nil",):
            return []
        if name in ("true", "false"):
            return name == "true"
        if name in self.env:
            v = self.env[name]
            if isinstance(v, Unknown):
                raise v
            return v
        raise Unknown(f"name {name}")

    def call(self, name, args, spread):
        base = name.split(".")[-1]
        if name == "append":
            out = list(args[0])
            for a in args[1:]:
                out.extend(a if isinstance(a, list) else [a])
            return out
        if base == "GenerateSampleSecrets":
            return sample_secrets(args[0], args[1])
        if base == "GenerateSampleSecret":
            return f'{args[0]}_api_token = "{args[1]}"'
        if base == "NewSecret":
            return generate(args[0], self.rng)
        if base in PATTERN_HELPERS:
            return PATTERN_HELPERS[base] % args[0]
        if base == "Hex8_4_4_4_12":
            return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        if name == "fmt.Sprintf":
            return sprintf(args[0], args[1:])
        if name == "strings.Repeat":
            return args[0] * int(args[1])
        if name == "strings.ToUpper":
            return args[0].upper()
        if name == "strings.ToLower":
            return args[0].lower()
        if name == "strings.Join":
            return args[1].join(args[0])
        if name == "string":
            return args[0]
        if name in self.funcs and not args:
            return self.funcs[name]()
        raise Unknown(f"call {name}")


def skip_line(p):
    depth = 0
    while p.i < len(p.t):
        kind, text = p.t[p.i]
        if text in "({[":
            depth += 1
        elif text in ")}]":
            depth -= 1
            if depth < 0:
                return
        elif kind == "nl" and depth <= 0:
            p.i += 1
            return
        p.i += 1


def run_block(toks, env, rng, funcs, on_assign):
    """Evaluates `x := e`, `x = e`, `var x [T] = e` and `return e` at the top of a block;
    `on_assign(name, value_or_Unknown)` sees each. Returns the `return` value if evaluated."""
    p = Parser(toks, env, rng, funcs)
    ret = None
    while p.i < len(p.t):
        start = p.i
        tok = p.peek()
        try:
            if tok[1] == "var" or tok[1] == "const":
                p.next()
                if p.peek()[1] == "(":
                    p.next()
                    while p.peek()[1] not in (")", "eof"):
                        name = p.next()[1]
                        try:
                            while p.peek()[1] != "=":
                                if p.peek()[0] == "nl" or p.peek()[1] == ")":
                                    raise Unknown("declaration without value")
                                p.next()
                            p.next()
                            v = p.expr()
                            env[name] = v
                            on_assign(name, v)
                        except Unknown as e:
                            env[name] = e
                            on_assign(name, e)
                            skip_line(p)
                    p.next()
                    continue
                name = p.next()[1]
                while p.peek()[1] not in ("=", "eof") and p.t[p.i][0] != "nl":
                    p.next()
                p.expect("=")
                v = p.expr()
                env[name] = v
                on_assign(name, v)
                continue
            if tok[1] == "return":
                p.next()
                ret = p.expr()
                continue
            if tok[0] == "ident" and p.peek(1)[1] in (":=", "=", "+="):
                name = p.next()[1]
                op = p.next()[1]
                try:
                    v = p.expr()
                    if op == "+=":
                        v = env.get(name, "") + v
                except Unknown as e:
                    if name in ("tps", "fps"):
                        on_assign(name, e)
                    env.setdefault(name, e)
                    skip_line(p)
                    continue
                env[name] = v
                on_assign(name, v)
                continue
        except Unknown:
            p.i = start
        p.i = start
        p.next()
    return ret


def braces(toks, i):
    """Index past the `}` matching the `{` at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][1] == "{":
            depth += 1
        elif toks[j][1] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def functions(toks):
    """(name, body tokens) of every top-level function."""
    out, i = [], 0
    while i < len(toks):
        if toks[i][1] == "func" and i + 1 < len(toks) and toks[i + 1][0] == "ident":
            name = toks[i + 1][1]
            j = i + 2
            depth = 0
            while j < len(toks):
                if toks[j][1] == "(":
                    depth += 1
                elif toks[j][1] == ")":
                    depth -= 1
                elif toks[j][1] == "{" and depth == 0:
                    break
                j += 1
            end = braces(toks, j)
            out.append((name, toks[j + 1:end - 1]))
            i = end
        else:
            i += 1
    return out


def top_level(toks):
    """Tokens outside functions (package-level declarations)."""
    out, i = [], 0
    while i < len(toks):
        if toks[i][1] == "func":
            j = i
            while j < len(toks) and toks[j][1] != "{":
                j += 1
            i = braces(toks, j)
        else:
            out.append(toks[i])
            i += 1
    return out


# ----------------------------------------------------------------------------------------------
# Corpora
# ----------------------------------------------------------------------------------------------


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                          capture_output=True).stdout


def gitleaks_samples(git_dir):
    files = git(git_dir, "ls-tree", "-r", "--name-only", COMMIT,
                "cmd/generate/config/rules/").decode().split()
    samples, skipped = [], 0
    for f in sorted(files):
        if not f.endswith(".go") or f.endswith("_test.go"):
            continue
        toks = lex(git(git_dir, "show", f"{COMMIT}:{f}").decode())
        env = {}
        run_block(top_level(toks), env, random.Random(f), {}, lambda n, v: None)
        funcs = functions(toks)
        helpers = {}
        for name, body in funcs:
            helpers[name] = (lambda b, n: lambda: run_block(
                b, dict(env), random.Random(n), {}, lambda *_: None))(body, name)
        for name, body in funcs:
            ids = [go_string(body[k + 2]) for k in range(len(body) - 2)
                   if body[k][1] == "RuleID" and body[k + 1][1] == ":"
                   and body[k + 2][0] in ("str", "raw")]
            if not ids:
                continue
            rule = ids[0]
            sets = {"tps": None, "fps": None}
            failed = {"tps": 0, "fps": 0}

            def on_assign(n, v, sets=sets, failed=failed):
                if n in sets:
                    if isinstance(v, Unknown):
                        failed[n] += 1
                    else:
                        sets[n] = v

            run_block(body, dict(env), random.Random(rule), helpers, on_assign)
            skipped += failed["tps"] + failed["fps"]
            for key, label in (("tps", "pos"), ("fps", "neg")):
                v = sets[key]
                if isinstance(v, dict):
                    samples += [(label, rule, text, path) for path, text in v.items()]
                elif isinstance(v, list):
                    samples += [(label, rule, text, None) for text in v if isinstance(text, str)]
    return samples, skipped


def trufflehog_samples(git_dir):
    files = git(git_dir, "ls-tree", "-r", "--name-only", COMMIT, "pkg/detectors/").decode().split()
    samples, skipped = [], 0
    for f in sorted(files):
        if not f.endswith("_test.go") or f.endswith("_integration_test.go"):
            continue
        family = f.split("/")[2] if f.count("/") >= 3 else os.path.basename(f)[:-8]
        toks = lex(git(git_dir, "show", f"{COMMIT}:{f}").decode("utf-8", "replace"))
        env = {}
        rng = random.Random(f)
        run_block(top_level(toks), env, rng, {}, lambda n, v: None)
        for name, body in functions(toks):
            if not name.startswith("Test") or "Pattern" not in name:
                continue
            local = dict(env)
            run_block(body, local, rng, {}, lambda n, v: None)
            k = 0
            while k < len(body) - 1:
                if body[k][1] == "input" and body[k + 1][1] == ":":
                    p = Parser(body[k + 2:], local, rng, {})
                    try:
                        text = p.expr()
                        if not isinstance(text, str):
                            raise Unknown("input type")
                    except Unknown:
                        skipped += 1
                        k += 2
                        continue
                    # `want` of the same case: the next `want:` before the next `input:`.
                    want, j = None, k + 2 + p.i
                    while j < len(body) - 1 and body[j][1] != "input":
                        if body[j][1] == "want" and body[j + 1][1] == ":":
                            q = Parser(body[j + 2:], local, rng, {})
                            try:
                                want = q.expr()
                            except Unknown:
                                want = Unknown("want")
                            break
                        j += 1
                    if isinstance(want, list):
                        samples.append(("pos" if want else "neg", family, text, None))
                    else:
                        skipped += 1
                    k = j
                else:
                    k += 1
    return samples, skipped


def export_tree(git_dir, dest):
    """The text files of COMMIT under dest: no symlinks or submodules, no file with a NUL byte
    in its first 8 KiB (git's binary test), no blob the mirror lacks (a snapshot may leave its
    largest files out), and not the repository's own .gitleaks.toml / .gitleaksignore."""
    listing = git(git_dir, "ls-tree", "-r", "-z", COMMIT).split(b"\0")
    entries = []
    for line in listing:
        if not line:
            continue
        meta, path = line.split(b"\t", 1)
        mode, kind, sha = meta.split()
        name = os.path.basename(path)
        if kind != b"blob" or mode == b"120000" or name in (b".gitleaks.toml", b".gitleaksignore"):
            continue
        entries.append((sha, path))
    cat = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    kept = skipped = 0
    for sha, path in entries:
        cat.stdin.write(sha + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if len(header) < 3:
            skipped += 1
            continue
        data = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)
        if b"\0" in data[:8192]:
            continue
        full = os.path.join(os.fsencode(dest), path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as fh:
            fh.write(data)
        kept += 1
    cat.stdin.close()
    cat.wait()
    print(f"{os.path.basename(dest)}: {kept} text files"
          f"{f', {skipped} blobs absent from the mirror' if skipped else ''}", file=sys.stderr)


def main():
    global COMMIT
    corpus, git_dir, out = sys.argv[1:4]
    COMMIT = sys.argv[4] if len(sys.argv) > 4 else "HEAD"
    if corpus == "tree":
        export_tree(git_dir, out)
        return
    samples, skipped = {"gitleaks": gitleaks_samples,
                        "trufflehog": trufflehog_samples}[corpus](git_dir)
    index = []
    counter = {}
    for label, family, text, path in samples:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", family)
        n = counter.get((label, safe), 0)
        counter[(label, safe)] = n + 1
        rel = os.path.join(corpus, label, safe, str(n),
                           os.path.basename(path) if path else "sample.txt")
        full = os.path.join(out, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        index.append({"file": rel, "label": label, "family": family})
    with open(os.path.join(out, corpus, "index.json"), "w") as fh:
        json.dump({"samples": index, "skipped": skipped}, fh)
    pos = sum(1 for s in index if s["label"] == "pos")
    print(f"{corpus}: {pos} positives, {len(index) - pos} negatives, "
          f"{len(set(s['family'] for s in index))} families, {skipped} expressions skipped",
          file=sys.stderr)


if __name__ == "__main__":
    main()
