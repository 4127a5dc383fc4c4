# shellcheck shell=bash
# tls_setup DIR: makes (with openssl) a throw-away CA, a server certificate for 127.0.0.1 signed
# by it and a tokens file with one admin token under DIR, and sets TLS_SERVER_FLAGS (gemm_server)
# and TLS_CLIENT_FLAGS (gemm_client, gemm_loadgen) to use them. Source it, then call it.
tls_setup() {
  local dir=$1
  mkdir -p "$dir"
  (
    set -e
    cd "$dir"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
      -subj /CN=gemm-load-ca -keyout ca.key -out ca.pem 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
      -keyout server.key -out server.csr 2>/dev/null
    openssl x509 -req -days 2 -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
      -extfile san.ext -out server.pem 2>/dev/null
    openssl rand -hex 24 >token
    echo "$(cat token) admin name=load" >tokens
  ) || { echo "tls_setup: openssl failed" >&2; return 1; }
  # shellcheck disable=SC2034  # read by the scripts that source this file
  TLS_SERVER_FLAGS=(--tls_cert="$dir/server.pem" --tls_key="$dir/server.key"
                    --auth_tokens_file="$dir/tokens")
  # shellcheck disable=SC2034
  TLS_CLIENT_FLAGS=(--tls_ca="$dir/ca.pem" --token_file="$dir/token")
}
