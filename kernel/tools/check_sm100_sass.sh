#!/usr/bin/env bash
# SASS check of the SM100 tcgen05 kernel (docs/sm100.md, "Verified without Blackwell"). Takes the
# built gemm_kernel library (or an object / cubin / executable holding it), disassembles its
# sm_100a code with cuobjdump and, for every SM100 GemmKernel instantiation, asserts:
#   - UTCHMMA ... .2CTA         tcgen05.mma.cta_group::2.kind::f16 (2-SM UMMA)
#   - UTCBAR ... 2CTA/MULTICAST tcgen05.commit.cta_group::2 ... multicast::cluster
#   - LDTM                      tcgen05.ld (TMEM -> registers)
#   - UTMALDG / UTMASTG         TMA tensor load / store
#   - UGETNEXTWORKID.BROADCAST  clusterlaunchcontrol.try_cancel ... multicast::cluster::all (the
#                               CLC scheduler; found by building and dumping: cuobjdump 13.0 prints
#                               this opcode for it; query_cancel lowers to plain ALU ops on the
#                               LDS.128 of the response, so it has no opcode of its own to check)
#   - no LDL / STL and cuobjdump -res-usage STACK:0 LOCAL:0 (no local memory, no spills)
#   - no GPU- or system-wide MEMBAR in the main loops (the TMA producer's and the MMA issuer's
#     per-k-block loops; sass_loop_fences.py beside this script)
# and, over all kernels, that the 2-M-wave variants (KernelConfig<..., 2>) are
# among them.
# Exits 0 when all hold, 1 otherwise (2 on usage errors). Needs cuobjdump (CUDA >= 12.8).
#
# Usage: check_sm100_sass.sh <libgemm_kernel.a | file.o | file.cubin | executable>
#        check_sm100_sass.sh --sass FILE --res-usage FILE   # re-check saved cuobjdump output
set -u -o pipefail

sass_file=""
res_file=""
tmp=""
cleanup() { [[ -n "$tmp" ]] && rm -rf "$tmp"; }
trap cleanup EXIT

if [[ $# -eq 1 ]]; then
  bin="$1"
  [[ -f "$bin" ]] || { echo "error: no such file: $bin" >&2; exit 2; }
  command -v cuobjdump >/dev/null || { echo "error: cuobjdump not found" >&2; exit 2; }
  tmp=$(mktemp -d)
  sass_file="$tmp/sass.txt"
  res_file="$tmp/res.txt"
  # -arch keeps only sm_100a code; fall back to everything if this cuobjdump lacks the filter.
  if ! cuobjdump -sass -arch sm_100a "$bin" >"$sass_file" 2>"$tmp/err"; then
    cuobjdump -sass "$bin" >"$sass_file" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 2; }
  fi
  if ! cuobjdump -res-usage -arch sm_100a "$bin" >"$res_file" 2>>"$tmp/err"; then
    cuobjdump -res-usage "$bin" >"$res_file" 2>>"$tmp/err" || { cat "$tmp/err" >&2; exit 2; }
  fi
elif [[ $# -eq 4 && "$1" == "--sass" && "$3" == "--res-usage" ]]; then
  sass_file="$2"
  res_file="$4"
else
  sed -n '2,/^set -u/p' "$0" | grep '^#' >&2
  exit 2
fi

# Mangled names of the SM100 kernel instantiations: gemm::kernel::sm100::GemmKernel<...>.
kernel_re='_ZN4gemm6kernel5sm10010GemmKernel'

# Split the disassembly into one file per SM100 kernel function.
tmp2=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp2"' EXIT
awk -v dir="$tmp2" -v re="$kernel_re" '
  /Function : / { name = $NF; out = ""; if (name ~ re) { n++; out = dir "/k" n ".sass"; print name > (dir "/k" n ".name") } next }
  out != "" { print > out }
' "$sass_file"

shopt -s nullglob
kernels=("$tmp2"/k*.sass)
echo "check_sm100_sass: ${#kernels[@]} SM100 GemmKernel function(s) in sm_100a SASS"
if [[ ${#kernels[@]} -eq 0 ]]; then
  echo "FAIL: no sm_100a code of gemm::kernel::sm100::GemmKernel found"
  exit 1
fi

opcodes() {  # distinct opcode spellings matching $2 in file $1
  grep -oE "\b$2(\.[A-Z0-9_]+)*" "$1" | sort -u | tr '\n' ' '
}

fail=0
for k in "${kernels[@]}"; do
  name=$(cat "${k%.sass}.name")
  echo "== $name"
  echo "   tcgen05/TMA/CLC opcodes: $(opcodes "$k" 'UTC[A-Z]+') $(opcodes "$k" 'LDTM') $(opcodes "$k" 'UTMA[A-Z]+') $(opcodes "$k" 'UGETNEXTWORKID')"
  check() {  # label, count
    if [[ "$2" -gt 0 ]]; then echo "   ok   $1 ($2)"; else echo "   FAIL $1 missing"; fail=1; fi
  }
  check "UTCHMMA .2CTA (tcgen05.mma.cta_group::2)" \
    "$(grep -cE '\bUTCHMMA(\.[A-Z0-9_]+)*\.2CTA\b' "$k")"
  check "UTCBAR 2CTA MULTICAST (tcgen05.commit multicast)" \
    "$(grep -oE '\bUTCBAR(\.[A-Z0-9_]+)*' "$k" | grep '2CTA' | grep -c 'MULTICAST')"
  check "LDTM (tcgen05.ld)" "$(grep -cE '\bLDTM\b' "$k")"
  check "UTMALDG (TMA load)" "$(grep -cE '\bUTMALDG\b' "$k")"
  check "UTMASTG (TMA store)" "$(grep -cE '\bUTMASTG\b' "$k")"
  check "UGETNEXTWORKID.BROADCAST (clusterlaunchcontrol.try_cancel multicast)" \
    "$(grep -cE '\bUGETNEXTWORKID(\.[A-Z0-9_]+)*\.BROADCAST\b' "$k")"
  python3 "$(dirname "$0")/sass_loop_fences.py" "$k" || fail=1
  local_ops=$(grep -cE '\b(LDL|STL)(\.[A-Z0-9_]+)*\b' "$k")
  if [[ "$local_ops" -eq 0 ]]; then echo "   ok   no LDL/STL"; else echo "   FAIL $local_ops LDL/STL (local memory)"; fail=1; fi
  # cuobjdump -res-usage: "Function <name>:" then "REG:.. STACK:.. SHARED:.. LOCAL:.. ...".
  usage=$(awk -v n="$name" '$0 ~ ("Function " n ":") { getline; print; exit }' "$res_file")
  if [[ -z "$usage" ]]; then
    echo "   FAIL no -res-usage entry"
    fail=1
  elif echo "$usage" | grep -qE '\bSTACK:0\b' && echo "$usage" | grep -qE '\bLOCAL:0\b'; then
    echo "   ok   $(echo "$usage" | grep -oE 'REG:[0-9]+ STACK:[0-9]+') $(echo "$usage" | grep -oE 'LOCAL:[0-9]+')"
  else
    echo "   FAIL stack/local memory in use: $usage"
    fail=1
  fi
done

# KernelConfig<N, swap, f32, waves> mangles as ...KernelConfigILi<N>ELb<s>ELb<f>ELi<waves>EEE...
waves2=$(cat "$tmp2"/k*.name | grep -cE 'KernelConfigILi[0-9]+ELb[01]ELb[01]ELi2EE')
if [[ "$waves2" -gt 0 ]]; then
  echo "ok   $waves2 kernel(s) with 2 M-waves (KernelConfig<..., 2>)"
else
  echo "FAIL no 2-M-wave kernel (KernelConfig<..., 2>) in the binary"
  fail=1
fi

if [[ $fail -eq 0 ]]; then
  echo "PASS: sm_100a SASS of all ${#kernels[@]} SM100 kernels has 2-CTA UMMA, multicast commit, LDTM, TMA load/store, CLC try_cancel, no local memory, no GPU-wide fence in the main loops; 2-M-wave variants present"
else
  echo "FAIL: see above"
fi
exit $fail
