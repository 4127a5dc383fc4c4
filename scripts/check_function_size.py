#!/usr/bin/env python3
"""Fails when a function in the given source trees is longer than --max_lines lines.

Functions are found with Universal Ctags (C++ in .cc/.h/.cu/.cuh files, Python), which gives each
definition's first and last line. Functions named in the allow-list file (one
"<path> <qualified name>" per line, '#' comments; anonymous namespaces written "(anonymous)") are
reported but do not fail the check; an entry whose function is no longer too long fails it, so
the list only shrinks.

  scripts/check_function_size.py --allow scripts/function_size_allowlist.txt server client
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

EXTENSIONS = (".cc", ".h", ".cu", ".cuh", ".py")


def functions(ctags, roots):
    """Yields (path, line, qualified name, length) for every function definition under roots."""
    cmd = [ctags, "--output-format=json", "--fields=+neKl", "--langmap=C++:+.cu.cuh",
           "--languages=C++,Python", "-R", "-o", "-"]
    out = subprocess.run(cmd + list(roots), check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag or not tag["path"].endswith(EXTENSIONS):
            continue
        python = tag.get("language") == "Python"
        # C++ "member" tags are data members; Python's are methods.
        if tag.get("kind") not in (("function", "member") if python else ("function",)):
            continue
        scope = re.sub(r"__anon[0-9a-f]+", "(anonymous)", tag.get("scope", ""))
        name = f"{scope}{'.' if python else '::'}{tag['name']}" if scope else tag["name"]
        yield os.path.normpath(tag["path"]), tag["line"], name, tag["end"] - tag["line"] + 1


def read_allow_list(path):
    allowed = set()
    if not path:
        return allowed
    with open(path) as f:
        for raw in f:
            entry = raw.split("#", 1)[0].split()
            if entry:
                if len(entry) != 2:
                    sys.exit(f"{path}: expected '<path> <qualified name>', got {raw.strip()!r}")
                allowed.add((os.path.normpath(entry[0]), entry[1]))
    return allowed


def find_ctags(given):
    ctags = given or shutil.which("ctags-universal") or shutil.which("universal-ctags") or \
        shutil.which("ctags")
    version = ""
    if ctags:
        version = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        sys.exit("check_function_size: needs Universal Ctags (Debian package universal-ctags)")
    return ctags


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", help="directories or files to check")
    parser.add_argument("--max_lines", type=int, default=120)
    parser.add_argument("--allow", help="allow-list file of functions still too long")
    parser.add_argument("--ctags", help="the Universal Ctags binary (default: from PATH)")
    parser.add_argument("--chdir", help="run from this directory (paths are relative to it)")
    args = parser.parse_args()
    if args.chdir:
        os.chdir(args.chdir)
    ctags = find_ctags(args.ctags)
    allowed = read_allow_list(args.allow)
    failures, still_long = [], set()
    for path, line, name, length in sorted(functions(ctags, args.roots)):
        if length <= args.max_lines:
            continue
        message = f"{path}:{line}: {name} is {length} lines (at most {args.max_lines})"
        if (path, name) in allowed:
            still_long.add((path, name))
            print(f"{message} [allow-listed]")
        else:
            failures.append(message)
    for path, name in sorted(allowed - still_long):
        failures.append(f"{args.allow}: {path} {name} is no longer too long: remove the entry")
    for message in failures:
        print(message)
    print(f"check_function_size: {len(failures)} failure(s), {len(still_long)} allow-listed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
