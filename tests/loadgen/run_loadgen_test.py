#!/usr/bin/python3
"""End-to-end tests of gemm_loadgen against the real gemm_server (CPU backend): short, bounded
runs whose JSON, CSV and HTML reports are parsed back and checked.

  /usr/bin/python3 tests/loadgen/run_loadgen_test.py --case closed \
      --loadgen build/client/loadgen/gemm_loadgen --server build/server/gemm_server --workdir /tmp/x

Cases: closed, open, verify, shm, sync, packed, stopped, late_server, rejected, usage,
interrupt, experts, scripts (scripts/lib read the JSON the tool writes), echo (against
grpc_echo_server, given with --echo: its answers have D's real size, or none).
"""

import argparse
import csv
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))
from gemm_test_server import Server, free_port  # noqa: E402

from gemm_client import GemmClient  # noqa: E402
from gemm_client._proto import gemm_service_pb2 as pb  # noqa: E402

# Keep every run short: small shapes, short windows, few of them.
FAST = ["--warmup_s=0.3", "--window_s=0.5", "--max_windows=4", "--progress=off",
        "--stability_pct=50"]


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class HtmlStats(html.parser.HTMLParser):
    """Counts tags and collects text and external references of an HTML page."""

    def __init__(self):
        super().__init__()
        self.tags = {}
        self.text = []
        self.external = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)

    def handle_data(self, data):
        self.text.append(data)


def run_loadgen(args, loadgen, workdir, name, timeout=60):
    paths = {ext: os.path.join(workdir, f"{name}.{ext}") for ext in ("json", "csv", "html")}
    for p in paths.values():
        if os.path.exists(p):
            os.remove(p)
    cmd = [loadgen] + args + [f"--json={paths['json']}", f"--csv={paths['csv']}",
                              f"--html={paths['html']}"]
    print("+", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    print(out.stdout)
    print(out.stderr, file=sys.stderr)
    print(f"exit {out.returncode} after {time.monotonic() - t0:.1f}s", flush=True)
    return out, paths


def parse_reports(paths):
    with open(paths["json"]) as f:
        report = json.load(f)
    with open(paths["csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    with open(paths["html"]) as f:
        page = f.read()
    stats = HtmlStats()
    stats.feed(page)
    # The CSV repeats the JSON's figures.
    check(len(rows) == len(report["points"]), "CSV rows != JSON points")
    for row, point in zip(rows, report["points"]):
        check(row["label"] == point["label"], f"label {row['label']} != {point['label']}")
        check(int(row["requests_ok"]) == point["requests_ok"], "requests_ok differs")
        check(int(row["requests_failed"]) == point["requests_failed"], "requests_failed differs")
        check(abs(float(row["throughput_rps"]) - point["throughput_rps"]) <=
              1e-3 * max(1.0, point["throughput_rps"]), "throughput differs")
        for q in ("p95", "p99"):
            check(abs(float(row[f"lat_{q}_ms"]) - point["latency_ms"][q]) <= 1e-5,
                  f"{q} differs")
        check(abs(float(row["client_transport_ms"]) - point["client_transport_ms"]) <= 1e-5,
              "client_transport_ms differs")
        check(abs(float(row["server_total_ms"]) - point["server_timing_ms"]["total"]) <= 1e-5,
              "server_total_ms differs")
    # One time unit per file: every time column of the CSV is in ms.
    header = rows[0].keys() if rows else []
    check(not [c for c in header if c.endswith(("_us", "_s", "_ns"))],
          f"CSV columns in other units: {list(header)}")
    check("_us\"" not in json.dumps(report) and "_s\"" not in json.dumps(report),
          "JSON keys in a unit other than ms")
    # The HTML is self-contained: charts are inline SVG, nothing is fetched, no scripts.
    check(stats.tags.get("svg", 0) >= 3, f"expected 3 inline SVG charts, got {stats.tags}")
    check("script" not in stats.tags, "HTML has a script")
    check(not stats.external, f"HTML references external resources: {stats.external}")
    text = " ".join(stats.text)
    for title in ("Latency vs throughput", "Latency by percentile", "Time per request"):
        check(title in text, f"HTML lacks chart '{title}'")
    for point in report["points"]:
        check(point["label"] in text, f"HTML lacks point {point['label']}")
    return report, rows, text


def check_healthy_point(point):
    lat = point["latency_ms"]
    check(point["requests_ok"] > 0, f"{point['label']}: no successful requests")
    check(point["requests_failed"] == 0 and point["errors"] == {},
          f"{point['label']}: errors {point['errors']}")
    check(point["throughput_rps"] > 0 and point["tflops"] > 0 and point["payload_gbps"] > 0,
          f"{point['label']}: zero throughput figures")
    # The bytes on the wire each way: with the operands and D in the messages they add up to the
    # payload figure; with them in shared memory both are zero.
    wire = point["request_gbps"] + point["response_gbps"]
    in_messages = point["request_gbps"] > 0 and point["response_gbps"] > 0
    check((in_messages and abs(wire - point["payload_gbps"]) <= 1e-6 * point["payload_gbps"])
          or wire == 0, f"{point['label']}: in {point['request_gbps']}, out "
          f"{point['response_gbps']}, payload {point['payload_gbps']}")
    check(0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["p999"]
          <= lat["max"], f"{point['label']}: percentiles out of order {lat}")
    check(lat["min"] <= lat["mean"] <= lat["max"], f"{point['label']}: mean outside [min,max]")
    curve = [ms for _, ms in point["latency_percentiles_ms"]]
    check(curve == sorted(curve), "percentile curve not monotonic")
    check(1 <= point["windows"] <= 4, f"windows {point['windows']}")
    timing = point["server_timing_ms"]
    check(timing["responses"] == point["requests_ok"],
          "server timing not taken from every response")
    check(timing["total"] > 0, "server total time is zero")
    # The client's share and the server's add up to the mean latency; the server's total is
    # inside the latency the client measured.
    check(point["client_transport_ms"] > 0, f"client+transport {point['client_transport_ms']}")
    check(abs(point["client_transport_ms"] + timing["total"] - lat["mean"]) <= 1e-3 * lat["mean"],
          f"client+transport {point['client_transport_ms']} + server {timing['total']} != "
          f"mean latency {lat['mean']}")
    check(point["kernels"], "no kernel names recorded")


def case_closed(a):
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        # --wait_for_server_s=0: one health check, which a serving server passes.
        out, paths = run_loadgen(["--target=" + server.target, "--shapes=64x64x64@3,32x64x16@1",
                                  "--concurrency=1:2:x2", "--channels=2", "--wait_for_server_s=0",
                                  "--grpc_arg=grpc.http2.max_frame_size=1048576"] + FAST,
                                 a.loadgen, a.workdir, "closed")
        bad, _ = run_loadgen(["--target=" + server.target, "--grpc_arg=oops"] + FAST,
                             a.loadgen, a.workdir, "closed-bad-arg")
    check(out.returncode == 0, f"exit {out.returncode}")
    check(bad.returncode != 0 and "grpc_arg: 'oops' is not name=value" in bad.stderr,
          f"malformed --grpc_arg: exit {bad.returncode}, {bad.stderr[-200:]}")
    report, _, _ = parse_reports(paths)
    check(report["mode"] == "closed", "mode")
    check(report["server"]["backend"] == "cpu", f"server {report['server']}")
    check([p["concurrency"] for p in report["points"]] == [1, 2], "sweep points")
    for p in report["points"]:
        check_healthy_point(p)
    check("concurrency=2" in out.stdout and "p99.9" in out.stdout and "p95" in out.stdout,
          "stdout table")
    check("times in ms" in out.stdout and "client+tr" in out.stdout, "stdout time breakdown")


def case_open(a):
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        out, paths = run_loadgen(["--target=" + server.target, "--shapes=64x64x64",
                                  "--rate=40:80:x2", "--arrival=poisson", "--b=resident",
                                  "--rpc=stream", "--streams_per_channel=2"] + FAST,
                                 a.loadgen, a.workdir, "open")
        # The resident matrices the tool registered are released at the end.
        with GemmClient(server.target, timeout=10) as c:
            left = [m.name for m in c.list_matrices()]
    check(out.returncode == 0, f"exit {out.returncode}")
    check(not left, f"resident matrices left behind: {left}")
    report, _, _ = parse_reports(paths)
    check(report["mode"] == "open" and report["arrival"] == "poisson", "mode")
    check(report["workload"]["b"] == "resident" and report["workload"]["rpc"] == "stream",
          "workload")
    check([p["target_rate"] for p in report["points"]] == [40, 80], "sweep points")
    for p in report["points"]:
        check_healthy_point(p)
        check(p["stream_requests"] == p["stream_messages"] > 0, "GemmStream: one request a message")
        # An open loop delivers the offered rate (Poisson: allow sampling noise).
        check(0.6 * p["target_rate"] <= p["throughput_rps"] <= 1.4 * p["target_rate"],
              f"{p['label']}: throughput {p['throughput_rps']}")


def case_verify(a):
    workload = os.path.join(a.workdir, "verify.workload")
    with open(workload, "w") as f:
        f.write("# verify run\nshapes = 33x17x65@1, 64x64x64@1\nb_layout = nk\n"
                "output_dtype = bf16\nconcurrency = 2\n")
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        # The command line overrides the file's output_dtype.
        out, paths = run_loadgen(["--target=" + server.target, f"--workload={workload}",
                                  "--output_dtype=fp32", "--verify_fraction=1"] + FAST,
                                 a.loadgen, a.workdir, "verify")
    check(out.returncode == 0, f"exit {out.returncode}")
    report, _, _ = parse_reports(paths)
    w = report["workload"]
    check(w["b_layout"] == "nk" and w["output_dtype"] == "fp32" and len(w["shapes"]) == 2,
          f"workload file/flags not applied: {w}")
    check(report["points"][0]["concurrency"] == 2, "concurrency from the workload file")
    for p in report["points"]:
        check_healthy_point(p)
        check(p["verify"]["checked"] == p["requests_ok"], f"verify {p['verify']}")
        check(p["verify"]["mismatches"] == 0, f"mismatches {p['verify']}")


def case_shm(a):
    # Operands and outputs through a registered shared-memory region, inline and resident B,
    # every response checked; the region is unregistered and unlinked at the end.
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        for b in ("inline", "resident"):
            out, paths = run_loadgen(["--target=" + server.target, "--shapes=33x17x65,16x64x64",
                                      f"--b={b}", "--b_layout=nk", "--shm", "--concurrency=4",
                                      "--verify_fraction=1"] + FAST,
                                     a.loadgen, a.workdir, f"shm-{b}")
            check(out.returncode == 0, f"{b}: exit {out.returncode}")
            report, _, _ = parse_reports(paths)
            for p in report["points"]:
                check_healthy_point(p)
                check(p["verify"]["checked"] == p["requests_ok"], f"{b}: verify {p['verify']}")
                check(p["verify"]["mismatches"] == 0, f"{b}: mismatches {p['verify']}")
        with GemmClient(server.target) as c:
            left = c._stub.ListSharedMemory(pb.ListSharedMemoryRequest()).regions
        check(len(left) == 0, f"regions left registered: {[r.name for r in left]}")
    leaked = [f for f in os.listdir("/dev/shm") if f.startswith("gemm_loadgen_")]
    check(not leaked, f"shared-memory objects left behind: {leaked}")


def case_sync(a):
    # One blocking thread per caller (gRPC's synchronous API), unary and one GemmStream per
    # caller, every response checked; --client_api=sync with an open loop is refused.
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        for rpc in ("unary", "stream"):
            out, paths = run_loadgen(["--target=" + server.target, "--shapes=33x17x65,16x64x64",
                                      f"--rpc={rpc}", "--client_api=sync", "--b=resident",
                                      "--concurrency=1:4:x4", "--channels=2",
                                      "--verify_fraction=1"] + FAST,
                                     a.loadgen, a.workdir, f"sync-{rpc}")
            check(out.returncode == 0, f"{rpc}: exit {out.returncode}")
            check(" sync" in out.stdout, f"{rpc}: workload line does not say sync")
            report, _, _ = parse_reports(paths)
            check(report["workload"]["client_api"] == "sync" and report["workload"]["rpc"] == rpc,
                  f"workload {report['workload']}")
            check([p["concurrency"] for p in report["points"]] == [1, 4], "sweep points")
            for p in report["points"]:
                check_healthy_point(p)
                check(p["verify"]["checked"] == p["requests_ok"], f"{rpc}: verify {p['verify']}")
                check(p["verify"]["mismatches"] == 0, f"{rpc}: mismatches {p['verify']}")
            # Closed loop with 4 blocking callers: never more than 4 in flight, so every
            # response is one the server timed (no request lost or answered twice).
            check(report["points"][1]["issued"] >= report["points"][1]["requests_ok"],
                  "more answers than requests")
        with GemmClient(server.target, timeout=10) as c:
            left = [m.name for m in c.list_matrices()]
        check(not left, f"resident matrices left behind: {left}")
        out, _ = run_loadgen(["--target=" + server.target, "--shapes=16x16x16", "--rate=10",
                              "--client_api=sync"] + FAST, a.loadgen, a.workdir, "sync-open")
    check(out.returncode != 0 and "closed loop only" in out.stdout + out.stderr,
          f"sync with --rate: exit {out.returncode}")


def case_packed(a):
    # GemmStreamPacked: 16 callers on one stream (so requests share messages), closed and open
    # loop, inline and shared-memory operands, every response checked; sync callers refused.
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        runs = [("closed", ["--concurrency=16", "--b=resident"]),
                ("closed-shm", ["--concurrency=16", "--shm"]),
                ("open", ["--rate=200", "--b=resident", "--arrival=poisson"])]
        for name, flags in runs:
            out, paths = run_loadgen(["--target=" + server.target, "--shapes=33x17x65,16x64x64",
                                      "--rpc=packed", "--channels=1", "--streams_per_channel=1",
                                      "--verify_fraction=1"] + flags + FAST,
                                     a.loadgen, a.workdir, f"packed-{name}")
            check(out.returncode == 0, f"{name}: exit {out.returncode}")
            check(" packed" in out.stdout, f"{name}: workload line does not say packed")
            report, _, _ = parse_reports(paths)
            check(report["workload"]["rpc"] == "packed", f"workload {report['workload']}")
            for p in report["points"]:
                check_healthy_point(p)
                check(p["verify"]["checked"] == p["requests_ok"], f"{name}: verify {p['verify']}")
                check(p["verify"]["mismatches"] == 0, f"{name}: mismatches {p['verify']}")
                check(p["issued"] >= p["requests_ok"], f"{name}: more answers than requests")
                check(p["stream_requests"] >= p["stream_messages"] > 0,
                      f"{name}: {p['stream_requests']} requests in {p['stream_messages']} messages")
            if name.startswith("closed"):
                # 16 callers on one stream: answers arrive together and their callers' next
                # requests leave together, so some messages carry several.
                p = report["points"][0]
                check(p["stream_requests"] > p["stream_messages"],
                      f"{name}: no message carried more than one request")
        with GemmClient(server.target, timeout=10) as c:
            left = [m.name for m in c.list_matrices()]
        check(not left, f"resident matrices left behind: {left}")
        out, _ = run_loadgen(["--target=" + server.target, "--shapes=16x16x16", "--concurrency=2",
                              "--rpc=packed", "--client_api=sync"] + FAST,
                             a.loadgen, a.workdir, "packed-sync")
    check(out.returncode != 0 and "--rpc=packed needs --client_api=callback" in
          out.stdout + out.stderr, f"packed with sync callers: exit {out.returncode}")


def case_stopped(a):
    # Nothing listens: the load generator waits --wait_for_server_s for the health check, then
    # fails at once with a message naming the target and the connection error (no point runs).
    target = f"127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    out, paths = run_loadgen(["--target=" + target, "--shapes=16x16x16", "--concurrency=2",
                              "--wait_for_server_s=1"] + FAST, a.loadgen, a.workdir, "stopped")
    elapsed = time.monotonic() - t0
    check(out.returncode == 1, f"expected exit 1, got {out.returncode}")
    check(elapsed < 10, f"took {elapsed:.1f}s to give up")
    check(f"FAIL: {target} is not serving after 1s" in out.stderr, f"stderr: {out.stderr[-300:]}")
    check("Connection refused" in out.stderr or "UNAVAILABLE" in out.stderr,
          "stderr does not say why")
    check("stable" not in out.stdout, "a point ran against a stopped server")
    check(not any(os.path.exists(p) for p in paths.values()), "reports written without a run")


def case_late_server(a):
    # The load generator starts first (as a script that starts the server in the background
    # does): it waits for the health check, then measures the server, whose description the
    # report has.
    port = free_port()
    paths = {ext: os.path.join(a.workdir, f"late.{ext}") for ext in ("json", "csv", "html")}
    cmd = [a.loadgen, f"--target=127.0.0.1:{port}", "--shapes=32x32x32", "--concurrency=2",
           "--wait_for_server_s=60"] + FAST + [f"--{ext}={p}" for ext, p in paths.items()]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    with Server(a.server, port=port, log_path=os.path.join(a.workdir, "server.log")):
        stdout, stderr = proc.communicate(timeout=60)
    print(stdout)
    print(stderr, file=sys.stderr)
    check(proc.returncode == 0, f"exit {proc.returncode}")
    report, _, _ = parse_reports(paths)
    check(report["server"]["backend"] == "cpu" and not report["server"]["error"],
          f"server {report['server']}")
    for p in report["points"]:
        check_healthy_point(p)


def case_rejected(a):
    # Every request is refused (unknown kernel): 0 req/s is no stable point, and the run fails.
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        out, paths = run_loadgen(["--target=" + server.target, "--shapes=16x16x16",
                                  "--kernel=no_such_kernel", "--concurrency=1,2",
                                  "--error_backoff_ms=1", "--max_windows=3"] + FAST,
                                 a.loadgen, a.workdir, "rejected")
    check(out.returncode == 1, f"expected exit 1, got {out.returncode}")
    check("no request succeeded" in out.stderr, "stderr does not say why")
    with open(paths["json"]) as f:
        report = json.load(f)
    for p in report["points"]:
        check(p["requests_ok"] == 0 and p["errors"].get("INVALID_ARGUMENT", 0) > 0,
              f"{p['label']}: {p['errors']}")
        check(not p["stable"], f"{p['label']}: stable at 0 req/s")
    check(" yes " not in out.stdout, "table says stable")


def case_usage(a):
    # --help lists the tool's flags and exits 0; --helpfull names no build path; an unknown flag
    # or a bad value exits 2.
    out = subprocess.run([a.loadgen, "--help"], capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, f"--help: exit {out.returncode}")
    for flag in ("--target", "--concurrency", "--wait_for_server_s", "--shapes"):
        check(flag in out.stdout, f"--help does not list {flag}")
    full = subprocess.run([a.loadgen, "--helpfull"], capture_output=True, text=True, timeout=30)
    check(full.returncode == 0, f"--helpfull: exit {full.returncode}")
    sources = [l for l in full.stdout.splitlines() if "Flags from" in l]
    check(sources and not [l for l in sources if "from /" in l or "from ../" in l],
          f"--helpfull names build paths: {sources}")
    for args, want in ((["--no_such_flag"], "Unknown command line flag"),
                       (["--concurrency=1", "--window_s=x"], "Illegal value"),
                       (["--concurrency=1", "--rate=5"], "not both"),
                       (["--wait_for_server_s=-1"], "--wait_for_server_s")):
        bad = subprocess.run([a.loadgen] + args, capture_output=True, text=True, timeout=30)
        check(bad.returncode == 2 and want in bad.stderr,
              f"{args}: exit {bad.returncode}, {bad.stderr[-200:]}")


def case_interrupt(a):
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        paths = {ext: os.path.join(a.workdir, f"interrupt.{ext}") for ext in ("json", "csv", "html")}
        cmd = [a.loadgen, "--target=" + server.target, "--shapes=32x32x32", "--concurrency=1:8:x2",
               "--warmup_s=0.2", "--window_s=5", "--max_windows=10", "--progress=off",
               f"--json={paths['json']}", f"--csv={paths['csv']}", f"--html={paths['html']}"]
        print("+", " ".join(cmd), flush=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        print(stdout)
        print(stderr, file=sys.stderr)
        elapsed = time.monotonic() - t0
    check(proc.returncode == 130, f"expected exit 130, got {proc.returncode}")
    check(elapsed < 10, f"took {elapsed:.1f}s to stop")
    check("INTERRUPTED" in stdout, "stdout does not say INTERRUPTED")
    report, _, _ = parse_reports(paths)
    check(report["interrupted"] is True, "JSON interrupted flag")
    check(len(report["points"]) == 1, "points after the interrupted one ran")
    check(report["points"][0]["requests_ok"] > 0, "interrupted point has no data")


def case_experts(a):
    # Mixture-of-experts steps: groups of 2 of 4 resident experts, every response checked (each
    # output against the shape's reference), the experts released at the end; with the server's
    # batching the steps are coalesced (more than one request per batch).
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        out, paths = run_loadgen(["--target=" + server.target, "--shapes=3x64x128,1x32x64",
                                  "--b=resident", "--b_layout=nk", "--experts=4:2",
                                  "--concurrency=8", "--verify_fraction=1"] + FAST,
                                 a.loadgen, a.workdir, "experts")
        with GemmClient(server.target, timeout=10) as c:
            left = [m.name for m in c.list_matrices()]
        bad, _ = run_loadgen(["--target=" + server.target, "--experts=4:2", "--b=inline"] + FAST,
                             a.loadgen, a.workdir, "experts-bad")
    check(out.returncode == 0, f"exit {out.returncode}")
    check(not left, f"resident matrices left behind: {left}")
    check(bad.returncode != 0 and "--experts needs --b=resident" in bad.stderr,
          f"inline B with --experts: exit {bad.returncode}, {bad.stderr[-200:]}")
    report, _, _ = parse_reports(paths)
    w = report["workload"]
    check(w["experts"] == 4 and w["experts_per_request"] == 2, f"workload {w}")
    for p in report["points"]:
        check_healthy_point(p)
        check(p["verify"]["checked"] == p["requests_ok"], f"verify {p['verify']}")
        check(p["verify"]["mismatches"] == 0, f"mismatches {p['verify']}")
        check(p["server_timing_ms"]["batch_requests"] > 1.0,
              f"expert steps were not coalesced: {p['server_timing_ms']}")


def case_scripts(a):
    # The scripts that read the tool's JSON (scripts/lib) read what it writes now: the decode
    # summary prints the server's timing in microseconds, the results file records it.
    reports = os.path.join(a.workdir, "reports")
    os.makedirs(reports, exist_ok=True)
    for f in os.listdir(reports):
        os.remove(os.path.join(reports, f))
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        out, paths = run_loadgen(["--target=" + server.target, "--shapes=64x64x64",
                                  "--concurrency=2"] + FAST, a.loadgen, a.workdir, "scripts")
    check(out.returncode == 0, f"exit {out.returncode}")
    report_path = os.path.join(reports, "cpu.json")
    os.replace(paths["json"], report_path)
    with open(report_path) as f:
        point = json.load(f)["points"][0]
    compute_us = point["server_timing_ms"]["compute"] * 1e3
    check(compute_us > 0, f"server compute time {compute_us} us")
    lib = os.path.join(REPO, "scripts", "lib")

    summary = subprocess.run([sys.executable, os.path.join(lib, "decode_summary.py"), reports],
                             capture_output=True, text=True, timeout=30)
    print(summary.stdout, summary.stderr, sep="\n")
    check(summary.returncode == 0, f"decode_summary.py: exit {summary.returncode}")
    rows = [line.split() for line in summary.stdout.splitlines() if line.startswith("cpu ")]
    check(len(rows) == 2, f"decode_summary.py: expected the point's two rows, got {rows}")
    check(abs(float(rows[0][7]) - compute_us) <= 0.051, f"summary compute {rows[0][7]} us, "
          f"report {compute_us} us")
    check(abs(float(rows[1][4]) - compute_us) <= 0.051, f"breakdown compute {rows[1][4]} us, "
          f"report {compute_us} us")

    results = os.path.join(a.workdir, "results")
    recorded = subprocess.run([sys.executable, os.path.join(lib, "service_results.py"), results,
                               "--load", "cpu-check", "--what", "64x64x64", "--command", "test",
                               f"--point=c2:{report_path}:"],
                              capture_output=True, text=True, timeout=30)
    print(recorded.stdout, recorded.stderr, sep="\n")
    check(recorded.returncode == 0, f"service_results.py: exit {recorded.returncode}")
    [written] = [os.path.join(results, f) for f in os.listdir(results)]
    with open(written) as f:
        [fig] = json.load(f)["loads"]["cpu-check"]["points"]
    check(abs(fig["server_compute_us"] - compute_us) <= 0.051,
          f"results file compute {fig['server_compute_us']} us, report {compute_us} us")
    check(abs(fig["batch"] - point["server_timing_ms"]["batch_requests"]) <= 0.051,
          f"results file batch {fig['batch']}")

    # Reports of processes run at once (one per GPU) join into one point: rates and callers add.
    joined = subprocess.run([sys.executable, os.path.join(lib, "service_results.py"), results,
                             "--load", "cpu-pair", "--what", "64x64x64 twice", "--command", "test",
                             f"--point=c4:{report_path}+{report_path}:"],
                            capture_output=True, text=True, timeout=30)
    check(joined.returncode == 0, f"service_results.py join: exit {joined.returncode}, "
          f"{joined.stderr[-300:]}")
    with open(written) as f:
        loads = json.load(f)["loads"]
    [pair] = loads["cpu-pair"]["points"]
    check(abs(pair["req_per_s"] - 2 * fig["req_per_s"]) <= 0.21 and pair["callers"] == 4
          and pair["processes"] == 2 and pair["p99_ms"] == fig["p99_ms"]
          and abs(pair["mean_ms"] - fig["mean_ms"]) <= 0.002,
          f"joined point {pair}, one report {fig}")
    check("cpu-check" in loads, "recording a second load dropped the first")

    # The inline ceiling's summary pairs a server's run with the echo's of the same load and
    # transport (here the same report twice: ratio 1).
    ceiling = os.path.join(a.workdir, "ceiling")
    os.makedirs(ceiling, exist_ok=True)
    for server in ("echo-d", "gemm"):
        shutil.copy(report_path, os.path.join(ceiling, f"decode64.default.{server}.json"))
    with open(os.path.join(ceiling, "server-decode64.default.gemm.log"), "w") as f:
        f.write("I executor.cc:1] device 0: host time per unit over 10 units (us): "
                "prepare+plan 1.5, stage in 20.0\n")
    summary = subprocess.run([sys.executable, os.path.join(lib, "inline_ceiling_summary.py"),
                              ceiling], capture_output=True, text=True, timeout=30)
    print(summary.stdout, summary.stderr, sep="\n")
    check(summary.returncode == 0, f"inline_ceiling_summary.py: exit {summary.returncode}")
    check(re.search(r"decode64 +default +gemm +throughput +1\.00", summary.stdout) is not None,
          "inline_ceiling_summary.py: no gemm/echo-d ratio of 1.00")
    check("decode64.default.gemm: prepare+plan 1.5, stage in 20.0" in summary.stdout,
          "inline_ceiling_summary.py: the server's logged phases are missing")
    lat = point["latency_ms"]["mean"]
    ct, srv = point["client_transport_ms"], point["server_timing_ms"]["total"]
    split = (f"decode64     default        echo {lat:.3f}; gemm {lat:.3f} = client and transport "
             f"{ct:.3f} + server {srv:.3f}; server time for 0.90: {lat / 0.9 - ct:.3f}")
    check(split in summary.stdout, f"inline_ceiling_summary.py: no latency split '{split}'")

    # A report of the old schema (times in microseconds) is refused by name, not misread.
    old = dict(json.load(open(report_path)), schema_version=1)
    with open(report_path, "w") as f:
        json.dump(old, f)
    refused = subprocess.run([sys.executable, os.path.join(lib, "decode_summary.py"), reports],
                             capture_output=True, text=True, timeout=30)
    check(refused.returncode != 0 and "schema_version 2" in refused.stderr,
          f"old report: exit {refused.returncode}, {refused.stderr[-300:]}")


def case_echo(a):
    # grpc_echo_server answers every request with D's real size (BF16 and FP32, unary and packed:
    # every answer passes the load generator's size check, which runs on each response) or, with
    # --answer_data=empty, with none (every answer fails it, and nothing comes back on the wire).
    def run(data, extra, name):
        port = free_port()
        echo = subprocess.Popen([a.echo, f"--port={port}", f"--answer_data={data}",
                                 "--answer=thread", "--http2_max_frame_bytes=1048576"],
                                stdout=subprocess.PIPE, text=True)
        try:
            out, paths = run_loadgen([f"--target=127.0.0.1:{port}", "--shapes=24x40x56,8x64x16",
                                      "--concurrency=3", "--channels=2", "--verify_fraction=0",
                                      "--wait_for_server_s=20", "--http2_max_frame_bytes=1048576"]
                                     + extra + FAST, a.loadgen, a.workdir, name)
        finally:
            echo.send_signal(signal.SIGTERM)
            said = echo.communicate(timeout=20)[0]
        # Empty answers are mismatches, which make the load generator exit 1.
        check(out.returncode == (0 if data == "d" else 1), f"{name}: exit {out.returncode}")
        check(echo.returncode == 0, f"{name}: grpc_echo_server exit {echo.returncode}")
        check("answered on" in said, f"{name}: the echo did not say how many threads answered")
        with open(paths["json"]) as f:
            return json.load(f)["points"][-1]

    for extra, name in ((["--rpc=packed"], "echo-packed"),
                        (["--rpc=unary", "--output_dtype=fp32"], "echo-unary-fp32")):
        p = run("d", extra, name)
        check(p["requests_ok"] > 0 and p["requests_failed"] == 0, f"{name}: {p['requests_failed']}")
        check(p["verify"]["checked"] == 0, f"{name}: answers of the wrong size: {p['verify']}")
        check(p["response_gbps"] > 0 and p["request_gbps"] > 0, f"{name}: a direction is zero")
    p = run("empty", ["--rpc=packed"], "echo-empty")
    check(p["requests_ok"] > 0 and p["verify"]["mismatches"] == p["requests_ok"],
          f"echo-empty: {p['verify']} of {p['requests_ok']}")
    check(p["response_gbps"] == 0 and p["request_gbps"] > 0, f"echo-empty: in "
          f"{p['request_gbps']}, out {p['response_gbps']}")


CASES = {"closed": case_closed, "open": case_open, "verify": case_verify, "shm": case_shm,
         "sync": case_sync, "packed": case_packed, "stopped": case_stopped,
         "late_server": case_late_server, "rejected": case_rejected, "usage": case_usage,
         "interrupt": case_interrupt, "experts": case_experts, "scripts": case_scripts,
         "echo": case_echo}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--echo", help="grpc_echo_server (the echo case)")
    a = parser.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    try:
        CASES[a.case](a)
    except Failure as e:
        print(f"FAIL ({a.case}): {e}", file=sys.stderr)
        return 1
    print(f"PASS ({a.case})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
