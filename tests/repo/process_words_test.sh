#!/usr/bin/env bash
# The tracked tree talks about the product, not about how it was made: no words about work
# sittings, issue numbers, the people or tools that built it, experiment dates, commit hashes or
# experiment branches in any tracked text file (docs, comments, flag help, scripts, ignore files).
# Dates are allowed only in docs/PERF.md and its plots (each figure names its date) and in the
# results data under bench/results/. Prints every hit as FILE:LINE: [rule] TEXT and exits 1 if there is one.
# Usage: process_words_test.sh REPO_ROOT [PATHSPEC...]   (PATHSPEC narrows the files checked)
set -uo pipefail
root=${1:?usage: process_words_test.sh REPO_ROOT [PATHSPEC...]}
shift
cd "$root" || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
self=tests/repo/process_words_test.sh

# rule name | Perl regex (grep -P). Case-insensitive unless the rule says otherwise.
rules=(
  "work sitting|(?i)\bsession[-_ ]?[0-9]+|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|twenty-[a-z]+|[0-9]+(st|nd|rd|th)|this|previous|next|last|earlier|later) (work )?(sessions?|sittings?)\b|\bsittings?\b"
  "ordinal of a sitting|(?i)\btwenty-(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)\b"
  "issue number|(?i)\b(issues?|bugs?|tickets?|PRs?|pull requests?) #[0-9]+|\bissue [0-9]+\b|(^|[\s(\[])#[0-9]+(?=[\s).,:;\]]|$)"
  "person who built it|(?i)\bengineer('s|s)?\b|\bthe lead('s)?\b(?! (time|latency|of cuBLAS))|\bhelper (sessions?|agents?)\b"
  "tool that built it|(?i)\bclaude\b|\banthropic\b|\bchatgpt\b|\bcopilot\b|\bsub-?agents?\b|\bworktrees?\b|device[-_ ]bundle|\bdevice tool\b|\bdevice clock\b|\.carry-|\.\./shared/|\bseeds? 0[0-9]{2}\b|\bnvidia-h[12]00(-x[0-9])?\b (machine|kind|call)|\bnvidia-h[12]00-x[0-9]\b"
  "LLM|\bLLMs?\b"
  "commit hash|(?i)\bcommits? \`?[0-9a-f]{7,40}\b|\`(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}\`"
  "experiment branch or state|(?i)\bexp/[a-z0-9][a-z0-9-]*|\buncommitted\b"
)
# Dates and clock times of experiments: everywhere but docs/PERF.md, docs/img/*.svg and
# bench/results/.
dated_rule="experiment date|\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b|\b[0-2][0-9]:[0-5][0-9](-[0-2][0-9]:[0-5][0-9])? UTC\b"
# Lines that match a rule but say something about the product (a fixed constant of a test clock).
allowed='arbitrary fixed instant'

mapfile -d '' files < <(git ls-files -z -- "${@:-.}" ':!bench/results/**' ":!$self")
[ ${#files[@]} -gt 0 ] || { echo "process_words_test: no tracked files under $root"; exit 2; }
dated_files=()
for f in "${files[@]}"; do
  case $f in docs/PERF.md | docs/img/*.svg) ;; *) dated_files+=("$f") ;; esac
done

hits=0
check() {  # check RULE FILES...: print the rule's hits, count them
  local name=${1%%|*} regex=${1#*|} out
  shift
  out=$(printf '%s\0' "$@" | xargs -0 grep -PnIH -- "$regex" 2>/dev/null | grep -v -- "$allowed")
  if [ -n "$out" ]; then
    sed "s/^\([^:]*:[0-9]*\):/\1: [$name]/" <<<"$out"  # FILE:LINE: [rule] TEXT
    hits=$((hits + $(wc -l <<<"$out")))
  fi
}
for rule in "${rules[@]}"; do check "$rule" "${files[@]}"; done
[ ${#dated_files[@]} -gt 0 ] && check "$dated_rule" "${dated_files[@]}"
if [ "$hits" -gt 0 ]; then
  echo "process_words_test: FAIL: $hits line(s) talk about how the work was done (rules in $self)"
  exit 1
fi
echo "process_words_test: OK (${#files[@]} tracked files)"
