#!/usr/bin/env python3
"""Tests of scripts/check_function_size.py on generated sources: a function of 121 lines fails
the check and one of 120 passes (free functions, methods defined in a class body, functions in an
anonymous namespace, Python methods); an allow-listed function passes, and an allow-list entry
whose function is short again fails.

  tests/lint/function_size_test.py --script scripts/check_function_size.py [--ctags PATH]
"""

import argparse
import os
import subprocess
import sys
import tempfile


def body(lines):
    """Statements filling a function to `lines` lines with its header and closing brace."""
    return "".join(f"  x += {i};\n" for i in range(lines - 3))


def cc_function(name, lines):
    return f"int {name}(int x) {{\n{body(lines)}  return x;\n}}\n"


SOURCES = {
    "a.cc": lambda n: cc_function("Free", n),
    "b.h": lambda n: "class C {\n public:\n  " + cc_function("Method", n).replace("\n", "\n  ")
    + "\n};\n",
    "c.cc": lambda n: "namespace ns {\nnamespace {\n" + cc_function("Hidden", n) + "}\n}\n",
    "d.py": lambda n: "class K:\n    def method(self):\n        x = 0\n"
    + "".join(f"        x += {i}\n" for i in range(n - 3)) + "        return x\n",
}


def run(script, ctags, root, allow=None):
    cmd = [sys.executable, script, "--chdir", root, "."]
    if ctags:
        cmd += ["--ctags", ctags]
    if allow:
        cmd += ["--allow", allow]
    out = subprocess.run(cmd, capture_output=True, text=True)
    print(out.stdout, out.stderr, sep="")
    return out.returncode, out.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--ctags")
    a = parser.parse_args()
    script = os.path.abspath(a.script)
    failures = []
    for name, make in SOURCES.items():
        for lines, want_rc in ((120, 0), (121, 1)):
            with tempfile.TemporaryDirectory() as root:
                with open(os.path.join(root, name), "w") as f:
                    f.write(make(lines))
                rc, _ = run(script, a.ctags, root)
                if rc != want_rc:
                    failures.append(f"{name} with {lines} lines: exit {rc}, expected {want_rc}")
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "c.cc"), "w") as f:
            f.write(SOURCES["c.cc"](130))
        allow = os.path.join(root, "allow.txt")
        with open(allow, "w") as f:
            f.write("# still too long\n./c.cc ns::(anonymous)::Hidden\n")
        rc, out = run(script, a.ctags, root, allow)
        if rc != 0 or "[allow-listed]" not in out:
            failures.append(f"allow-listed function: exit {rc}")
        with open(os.path.join(root, "c.cc"), "w") as f:
            f.write(SOURCES["c.cc"](20))
        rc, out = run(script, a.ctags, root, allow)
        if rc != 1 or "no longer too long" not in out:
            failures.append(f"stale allow-list entry: exit {rc}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
