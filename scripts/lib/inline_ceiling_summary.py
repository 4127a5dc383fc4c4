#!/usr/bin/env python3
"""Summary of scripts/gpu_inline_ceiling.sh's runs under a folder (reports named
LOAD.TRANSPORT.SERVER.json, with NAME.cpu, NAME.threads and NAME.lg_threads beside them): per run
the throughput, payload GB/s each way, CPU microseconds per request of the server and of the load
generator, the GPU's event-timed kernel time per request (the batch's kernel time over the
requests in it), the answers checked and the mismatches; then, per load and transport, gemm's
throughput and server CPU per request against the D-sized echo's (the round-trip ceiling), where
the round trip's time goes (gemm's client and transport time and server time against the echo's
round trip), this build's server against a baseline build's (main-gemm), batching on against off,
the pinned heap on against off (gemm-noheap),
gemm_server's logged host time per unit by phase (server-NAME.log), and the busiest threads of
each server and of the load generator that drove it.

Usage: inline_ceiling_summary.py OUT_DIR
"""
import os
import sys

import loadgen_report
from decode_summary import cpu_us_per_request, host_phases


def busiest(path, lines=4):
    """The first `lines` lines of a thread_cpu report (scripts/lib/thread_cpu.sh), joined; empty
    when there is none."""
    try:
        with open(path) as t:
            return "; ".join(" ".join(line.split()) for line in t.readlines()[:lines])
    except OSError:
        return ""


def runs(out):
    """{(load, transport, server): figures} of the reports in `out`."""
    found = {}
    for f in sorted(os.listdir(out)):
        parts = f[:-5].split(".")
        if not f.endswith(".json") or len(parts) != 3:
            continue
        name = f[:-5]
        p = loadgen_report.load(os.path.join(out, f))["points"][-1]
        st = loadgen_report.server_timing_us(p)
        srv, lg = cpu_us_per_request(os.path.join(out, name + ".cpu"), p["throughput_rps"])
        batch = st.get("batch_requests") or float("nan")
        found[tuple(parts)] = {
            "rps": p["throughput_rps"], "in": p.get("request_gbps", float("nan")),
            "out": p.get("response_gbps", float("nan")), "srv": srv, "lg": lg,
            "gpu": st.get("compute", float("nan")) / batch if batch else float("nan"),
            "latency": p["latency_ms"]["mean"], "client_transport": p["client_transport_ms"],
            "server": p["server_timing_ms"]["total"],
            "checked": p["verify"]["checked"], "mismatches": p["verify"]["mismatches"],
            "errors": p["requests_failed"], "threads": busiest(os.path.join(out, name + ".threads")),
            "lg_threads": busiest(os.path.join(out, name + ".lg_threads")),
            "phases": host_phases(os.path.join(out, f"server-{name}.log"))}
    return found


def ratio(a, b):
    return a / b if b and b == b and a == a else float("nan")


def paired(found, first, second):
    """(load, transport, figures of `first`, figures of `second`) for every load and transport
    both servers ran."""
    for load, transport in sorted({(load, transport) for load, transport, _ in found}):
        a, b = found.get((load, transport, first)), found.get((load, transport, second))
        if a and b:
            yield load, transport, a, b


def main():
    found = runs(sys.argv[1])
    print(f"{'load':10} {'transport':14} {'server':13} {'req/s':>9} {'in GB/s':>8} {'out GB/s':>8} "
          f"{'srv us/req':>10} {'lg us/req':>9} {'gpu us/req':>10} {'checked/bad':>11} {'errors':>6}")
    for (load, transport, server), r in sorted(found.items()):
        # The echo computes nothing: its answers are not checked (an empty one fails the size
        # check by design).
        checked = "-" if server.startswith("echo") else f"{r['checked']}/{r['mismatches']}"
        print(f"{load:10} {transport:14} {server:13} {r['rps']:9.0f} {r['in']:8.2f} {r['out']:8.2f} "
              f"{r['srv']:10.1f} {r['lg']:9.1f} {r['gpu']:10.1f} {checked:>11} {r['errors']:6}")
    print("\ngemm against the D-sized echo (bars: throughput >= 0.90, server CPU per request <= 1.25):")
    for server in ("gemm", "gemm-nobatch", "gemm-noheap"):
        for load, transport, ours, echo in paired(found, server, "echo-d"):
            print(f"  {load:12} {transport:14} {server:13} throughput "
                  f"{ratio(ours['rps'], echo['rps']):5.2f}  server CPU per request "
                  f"{ratio(ours['srv'], echo['srv']):5.2f}")
    print("\nwhere the round trip's time goes (mean ms per request; with the same closed loop of "
          "callers the\nthroughput ratio is the echo's round trip over gemm's, so 0.90 needs the "
          "server's time\nwithin the last figure):")
    for load, transport, ours, echo in paired(found, "gemm", "echo-d"):
        allowed = echo["latency"] / 0.9 - ours["client_transport"]
        print(f"  {load:12} {transport:14} echo {echo['latency']:.3f}; gemm "
              f"{ours['latency']:.3f} = client and transport {ours['client_transport']:.3f} + "
              f"server {ours['server']:.3f}; server time for 0.90: {allowed:.3f}")
    print("\nthis build's gemm_server against the baseline's (main-gemm), throughput:")
    for load, transport, ours, base in paired(found, "gemm", "main-gemm"):
        print(f"  {load:12} {transport:14} {ratio(ours['rps'], base['rps']):5.2f}  "
              f"({ours['rps']:.0f} / {base['rps']:.0f} req/s)")
    print("\nbatching on against off (throughput ratio; GPU kernel time per request, us):")
    for load, transport, on, off in paired(found, "gemm", "gemm-nobatch"):
        print(f"  {load:12} {transport:14} {ratio(on['rps'], off['rps']):5.2f}x  GPU "
              f"{on['gpu']:.1f} on, {off['gpu']:.1f} off")
    print("\nthe pinned heap on against off (throughput ratio; server CPU per request, us):")
    for load, transport, on, off in paired(found, "gemm", "gemm-noheap"):
        print(f"  {load:12} {transport:14} {ratio(on['rps'], off['rps']):5.2f}x  CPU "
              f"{on['srv']:.1f} on, {off['srv']:.1f} off")
    print("\ngemm_server's host time per unit by phase (us; per GPU):")
    for (load, transport, server), r in sorted(found.items()):
        for line in r["phases"]:
            print(f"  {load}.{transport}.{server}: {line}")
    for key, who in (("threads", "server"), ("lg_threads", "load generator")):
        print(f"\nbusiest {who} threads (percent of one core over the sampled window):")
        for (load, transport, server), r in sorted(found.items()):
            if r[key]:
                print(f"  {load}.{transport}.{server}: {r[key]}")


if __name__ == "__main__":
    main()
