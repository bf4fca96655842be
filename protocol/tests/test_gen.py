#!/usr/bin/env python3
"""test_gen.py - tests of protocol/gen.py itself: every kind of schema
mistake is refused with "file:line: message" and exit status 1, nothing is
written on error, and the output is deterministic.

Run by "make check" (automake sets $srcdir to protocol/'s source dir), or by
hand: srcdir=protocol python3 protocol/tests/test_gen.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

SRCDIR = os.environ.get("srcdir", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
GEN = os.path.join(SRCDIR, "gen.py")

HEAD = "api 50 Test versions 0-4 flexible 2+\n"

# (name, schema text, line of the error or None for a file-level error,
#  text the message must contain)
BAD = [
    ("tab", HEAD + "request\n\tA int8\nresponse\n", 3, "tabs are not allowed"),
    ("bad header", "api 50 Test versions 0-4\nrequest\nresponse\n", 1, "expected 'api"),
    ("header range", "api 50 Test versions 4-1 flexible none\nrequest\nresponse\n", 1,
     "bad version range"),
    ("flexible outside", "api 50 Test versions 0-4 flexible 7+\nrequest\nresponse\n", 1,
     "first flexible version 7 is outside"),
    ("no response", HEAD + "request\n  A int8\n", None, "no 'response' section"),
    ("response first", HEAD + "response\nrequest\n", 3, "'request' must come before"),
    ("odd indent", HEAD + "request\n   A int8\nresponse\n", 3, "not a multiple of 2"),
    ("indent under scalar", HEAD + "request\n  A int8\n    B int8\nresponse\n", 4,
     "unexpected indentation"),
    ("indent two levels", HEAD + "request\n  A []S\n      B int8\nresponse\n", 4,
     "unexpected indentation"),
    ("unknown type", HEAD + "request\n  A int128\nresponse\n", 3, "unknown type 'int128'"),
    ("array of records", HEAD + "request\n  A []records\nresponse\n", 3,
     "arrays of records"),
    ("range outside api", HEAD + "request\n  A int8 v3-9\nresponse\n", 3,
     "outside the API's versions 0-4"),
    ("bad range", HEAD + "request\n  A int8 v3\nresponse\n", 3, "unexpected 'v3'"),
    ("nullable int", HEAD + "request\n  A int32 null v0+\nresponse\n", 3,
     "cannot be nullable"),
    ("tagged nullable struct", HEAD + "request\n  A S null v2+ tag 0\n    B int8\n"
     "response\n", 3, "tagged nullable structs"),
    ("nullable struct clash", HEAD + "request\n  A S null v0+\n    B int8\n"
     "  ANull int8\nresponse\n", 5, "clashes"),
    ("null outside field", HEAD + "request\n  A string v3+ null v0-1\nresponse\n", 3,
     "does not overlap"),
    ("duplicate tag", HEAD + "request\n  A int8 tag 1\n  B int8 tag 1\nresponse\n", 4,
     "tag 1 already used by A"),
    ("tag not flexible", "api 50 Test versions 0-4 flexible none\nrequest\n"
     "  A int8 tag 0\nresponse\n", 3, "without flexible versions"),
    ("tag before flexible", HEAD + "request\n  A int8 v1+ tag 0\nresponse\n", 3,
     "before the first flexible version 2"),
    ("tag only old", HEAD + "request\n  A int8 v0-1 tag 0\nresponse\n", 3,
     "only before the first flexible"),
    ("records tagged", HEAD + "request\n  A records tag 0\nresponse\n", 3,
     "records cannot be"),
    ("records in tagged struct", HEAD + "request\n  A S tag 0\n    R records\nresponse\n", 3,
     "records cannot be"),
    ("duplicate field", HEAD + "request\n  A int8\n  A int16\nresponse\n", 4,
     "field A already defined"),
    ("duplicate struct", HEAD + "request\n  A []S\n    X int8\n  B []S\n    Y int8\n"
     "response\n", 5, "struct name S already used"),
    ("empty struct", HEAD + "request\n  A []S\n  B int8\nresponse\n", 3, "has no fields"),
    ("member clash", HEAD + "request\n  Topics []int32\n  TopicsCount int32\nresponse\n", 4,
     "clashes"),
    ("default range", HEAD + "request\n  A int8 default 300\nresponse\n", 3,
     "default 300 out of range for int8"),
    ("default type", HEAD + "request\n  A int8 default \"x\"\nresponse\n", 3,
     "must be an integer"),
    ("default null", HEAD + "request\n  A string default null\nresponse\n", 3,
     "never nullable"),
    ("default on array", HEAD + "request\n  A []int8 default 1\nresponse\n", 3,
     "only 'default null'"),
    ("bad default", HEAD + "request\n  A int8 default 0x10\nresponse\n", 3,
     "bad default value"),
    ("junk", HEAD + "request\n  A int8 sometimes\nresponse\n", 3, "unexpected 'sometimes'"),
    ("field before section", HEAD + "  A int8\nrequest\nresponse\n", 2,
     "field line before"),
    ("bad section", HEAD + "requests\nresponse\n", 2, "expected 'request' or 'response'"),
]

GOOD = HEAD + """# a comment
request
  Name string default "a#b"   # '#' inside quotes is not a comment
  Items []Item v1+
    Key int32
    Sub Inner v2+ tag 0
      X int8
  After int64
response
"""

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def run(paths, out):
    return subprocess.run([sys.executable, GEN, "-o", out] + paths,
                          capture_output=True, text=True)


def main():
    tmp = tempfile.mkdtemp(prefix="samsa-test-gen-")
    try:
        out = os.path.join(tmp, "out")
        for name, text, line, want in BAD:
            path = os.path.join(tmp, "50_test.sch")
            with open(path, "w") as fh:
                fh.write(text)
            res = run([path], out)
            loc = "%s:%d:" % (path, line) if line else "%s:" % path
            if res.returncode != 1:
                fail("%s: exit status %d, want 1" % (name, res.returncode))
            elif loc not in res.stderr or want not in res.stderr:
                fail("%s: got %r, want %r and %r" % (name, res.stderr.strip(), loc, want))
            if os.path.exists(out):
                fail("%s: output written despite the error" % name)

        # Two files with the same key.
        a = os.path.join(tmp, "a.sch")
        b = os.path.join(tmp, "b.sch")
        with open(a, "w") as fh:
            fh.write(HEAD + "request\nresponse\n")
        with open(b, "w") as fh:
            fh.write(HEAD.replace("Test", "Other") + "request\nresponse\n")
        res = run([a, b], out)
        if res.returncode != 1 or "API key 50 already defined" not in res.stderr:
            fail("duplicate key: got %r" % res.stderr)

        # A good schema generates, twice identically.
        with open(a, "w") as fh:
            fh.write(GOOD)
        out2 = os.path.join(tmp, "out2")
        r1 = run([a], out)
        r2 = run([a], out2)
        if r1.returncode or r2.returncode:
            fail("good schema refused: %r" % (r1.stderr + r2.stderr))
        else:
            for f in ("messages.h", "messages.c", "messages_fill.h", "messages_fill.c"):
                with open(os.path.join(out, f)) as x, open(os.path.join(out2, f)) as y:
                    tx = x.read()
                    if tx != y.read():
                        fail("%s differs between two runs" % f)
                    if "do not edit" not in tx.split("\n")[1]:
                        fail("%s has no banner" % f)
            with open(os.path.join(out, "messages.c")) as x:
                c = x.read()
            if 'proto_str_of("a#b", 3)' not in c:
                fail("quoted '#' was taken for a comment")
    finally:
        shutil.rmtree(tmp)
    print("%d schema error cases, %d failures" % (len(BAD) + 1, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
