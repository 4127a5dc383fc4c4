#!/usr/bin/env bash
# The build names every fragment and source it needs, so a renamed or missing file stops the
# configure instead of silently dropping a component. Fails on any tracked CMakeLists.txt or
# *.cmake file that includes a fragment OPTIONAL (or asks include() for a RESULT_VARIABLE),
# guards a project path with if(EXISTS ...), or collects files with file(GLOB ...). Prints every
# hit as FILE:LINE: [rule] TEXT and exits 1 if there is one.
# Usage: build_lists_test.sh REPO_ROOT [PATHSPEC...]   (PATHSPEC narrows the files checked)
set -uo pipefail
root=${1:?usage: build_lists_test.sh REPO_ROOT [PATHSPEC...]}
shift
cd "$root" || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }

mapfile -d '' files < <(git ls-files -z -- "${@:-.}" | grep -zE '(^|/)(CMakeLists\.txt|[^/]*\.cmake)$')
[ ${#files[@]} -gt 0 ] || { echo "build_lists_test: no CMake files under $root $*"; exit 2; }

# Each rule: name | Perl regex, matched against a whole command (which may span lines).
rules=(
  'optional include|\binclude\s*\([^)]*\b(OPTIONAL|RESULT_VARIABLE)\b'
  'existence guard on a project path|\bEXISTS\s+"?\$\{(CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR|PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR)\}'
  'file glob|\bfile\s*\(\s*GLOB(_RECURSE)?\b'
)
hits=0
for f in "${files[@]}"; do
  for rule in "${rules[@]}"; do
    out=$(RULE_NAME=${rule%%|*} RULE_RE=${rule#*|} perl -0777 -ne '
      my ($name, $re) = ($ENV{RULE_NAME}, $ENV{RULE_RE});
      s/#[^\n]*//g;  # comments may mention the forbidden forms
      while (/$re/g) {
        my $line = 1 + (substr($_, 0, $-[0]) =~ tr/\n//);
        my ($text) = (substr($_, $-[0]) =~ /^([^\n]*)/);
        print "$ARGV:$line: [$name] $text\n";
      }' "$f")
    if [ -n "$out" ]; then
      echo "$out"
      hits=$((hits + $(wc -l <<<"$out")))
    fi
  done
done
if [ "$hits" -gt 0 ]; then
  echo "build_lists_test: FAIL: $hits place(s) where a missing file would not stop the configure"
  exit 1
fi
echo "build_lists_test: OK (${#files[@]} CMake files)"
