#!/usr/bin/env python3
"""Checks the container image recipe and the Kubernetes manifests against the server itself.

What it checks (every number is compared with the defaults that `gemm_server --helpfull` prints,
so a port or timeout changed in server/options/ cannot silently drift from the deployment):
  * every overlay under deploy/overlays renders with `kubectl kustomize`;
  * the rendered workload: container ports, native gRPC startup/readiness/liveness probes on the
    health service (service name read from the .proto), GPU limits, CPU/memory requests, node
    selection by kubernetes.io/arch and nvidia.com/gpu.product, non-root user, graceful
    termination (grace period > preStop sleep + --drain_timeout_s), scrape annotations;
  * the headless and the regular Service, the PodDisruptionBudget and the ServiceMonitor select
    the pods and resolve to the server's ports;
  * the Dockerfile: CUDA 13 devel/runtime stages of one version, the CI scripts in its build
    steps, sm_90a + sm_100a, EXPOSE = the server's ports, numeric non-root USER, the entrypoint;
    .dockerignore keeps what the build needs;
  * deploy/docker/entrypoint.sh maps each GEMM_* variable to a flag the server has;
  * yamllint (with the repository's .yamllint) and, where installed, shellcheck.

Usage:
  check_deploy.py --repo DIR --server PATH/gemm_server      (what ctest runs)
  check_deploy.py --repo DIR --helpfull-file FILE           (without a built server)
  check_deploy.py --repo DIR --self-test                    (the checker itself: parser, drift)

Exit status: 0 all passed, 1 something failed, 77 nothing failed but a tool (kubectl, yamllint)
was missing so some checks were skipped (ctest reports the test as skipped).
"""

import argparse
import fnmatch
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # PyYAML comes with yamllint (Debian's python3-yaml).
    yaml = None

SKIP = 77
CONTAINER = "gemm-server"
ENTRYPOINT_IN_IMAGE = "/opt/gemm/bin/entrypoint.sh"
REQUIRED_SM = ("90a", "100a")

# What each known overlay must select and request. An overlay not listed here still gets every
# generic check (probes, ports, termination, Services, ...).
OVERLAY_EXPECTATIONS = {
    "gb200": {"arch": "arm64", "gpus": 4, "products": ["NVIDIA-GB200"], "servicemonitor": True},
    "h100": {"arch": "amd64", "gpus": None, "products": ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"],
             "servicemonitor": False},
}

# Paths the image build needs; .dockerignore must not exclude them.
BUILD_CONTEXT_PATHS = [
    "CMakeLists.txt", "CMakePresets.json", "scripts/install_deps.sh", "scripts/build.sh",
    "proto", "common", "kernel", "server", "client", "tests/CMakeLists.txt",
    "deploy/docker/entrypoint.sh", "deploy/docker/runtime-deps.sh",
]


# ------------------------------------------------------------------------------------------------
# Result bookkeeping


class Results:
    """Collects pass/fail/skip lines and prints them as they come."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}" + (f": {detail}" if detail else ""))
        return ok

    def skip(self, what, why):
        self.skipped += 1
        print(f"skip  {what}: {why}")


# ------------------------------------------------------------------------------------------------
# gemm_server --helpfull

_FLAG_START = re.compile(r"^\s+--([A-Za-z0-9_]+) \(")
_FLAG_BLOCK = re.compile(
    r"^--(?P<name>[A-Za-z0-9_]+) \((?P<help>.*)\); default: (?P<default>.*?);"
    r"(?: currently: (?P<current>.*?);)?$", re.S)


def parse_helpfull(text):
    """Returns {flag name: default value as a string, quotes removed} from absl's --helpfull."""
    blocks, current = [], None
    for line in text.splitlines():
        if _FLAG_START.match(line):
            if current is not None:
                blocks.append(current)
            current = [line.strip()]
        elif current is not None:
            if line.strip() and line.startswith("      "):
                current.append(line.strip())  # wrapped help text of the same flag
            else:
                blocks.append(current)
                current = None
    if current is not None:
        blocks.append(current)
    flags = {}
    for block in blocks:
        m = _FLAG_BLOCK.match(" ".join(block))
        if not m:
            continue
        value = m.group("default").strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        flags[m.group("name")] = value
    return flags


def helpfull_from_server(server):
    # absl exits non-zero after printing help; the text is what matters.
    proc = subprocess.run([server, "--helpfull"], capture_output=True, text=True, timeout=60,
                          check=False)
    return proc.stdout + proc.stderr


SELF_TEST_HELPFULL = """\
gemm_server: serves BF16 GEMMs over gRPC.

  Flags from server/main.cc:
    --backend (Execution backend: auto (CUDA when a GPU is usable, else CPU),
      cpu or cuda); default: "auto";
    --drain_timeout_s (Seconds to let in-flight requests finish after SIGTERM);
      default: 30;
    --host (Address to listen on); default: "0.0.0.0";
    --metrics_port (Prometheus /metrics port; 0 disables); default: 9464;
    --port (gRPC port); default: 50051; currently: 6000;
    --empty (An empty string); default: "";

  Flags from absl/flags/parse.cc:
    --flagfile (comma-separated list of files to load flags from); default: ;
"""


def self_test(repo, kubectl):
    """Tests the checker itself: the parser, and that a drifted server default is caught."""
    res = Results()
    flags = parse_helpfull(SELF_TEST_HELPFULL)
    expected = {"backend": "auto", "drain_timeout_s": "30", "host": "0.0.0.0",
                "metrics_port": "9464", "port": "50051", "empty": "", "flagfile": ""}
    res.check(flags == expected,
              "parse_helpfull reads wrapped help, string defaults, 'currently:' and empty values",
              f"got {flags}, want {expected}")

    # Drift: a server whose defaults moved must fail the Dockerfile and manifest checks.
    drifted = dict(flags, port="50052", metrics_port="9465", drain_timeout_s="120")
    quiet = Results()
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        saved, sys.stdout = sys.stdout, devnull
        try:
            check_dockerfile(quiet, repo, drifted)
            caught_dockerfile = quiet.failed
            if kubectl and yaml is not None:
                for name, objects in render_overlays(Results(), repo, kubectl).items():
                    check_overlay(quiet, name, objects, drifted, health_service_name(repo), [],
                                  None)
        finally:
            sys.stdout = saved
    res.check(caught_dockerfile >= 1, "a moved --port/--metrics_port fails the Dockerfile check",
              f"{caught_dockerfile} failures")
    if kubectl and yaml is not None:
        # ports x (2 containerPorts + 3 probes + services + annotation) + grace + liveness
        res.check(quiet.failed - caught_dockerfile >= 10,
                  "a moved --port/--metrics_port/--drain_timeout_s fails the manifest checks",
                  f"{quiet.failed - caught_dockerfile} failures")
    else:
        res.skip("drift in the manifests", "kubectl or PyYAML missing")
    print(f"{res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


# ------------------------------------------------------------------------------------------------
# Sources: proto, entrypoint, Dockerfile, .dockerignore


def health_service_name(repo):
    """gemm.v1.GemmService, from the .proto: the name the server gives the health service."""
    path = os.path.join(repo, "proto", "gemm", "v1", "gemm_service.proto")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    package = re.search(r"^\s*package\s+([\w.]+)\s*;", text, re.M)
    service = re.search(r"^\s*service\s+(\w+)\s*\{", text, re.M)
    if not package or not service:
        raise ValueError(f"no package/service in {path}")
    return f"{package.group(1)}.{service.group(1)}"


def entrypoint_flag_map(path):
    """[(ENV_VAR, flag)] from the FLAG_MAP table of deploy/docker/entrypoint.sh."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"FLAG_MAP=\((.*?)\)", text, re.S)
    if not m:
        return []
    return re.findall(r"^\s*(GEMM_[A-Z0-9_]+):([a-z0-9_]+)\s*$", m.group(1), re.M)


def parse_dockerfile(path):
    """Returns (global ARG defaults, stages); a stage is {from, name, args, instrs}."""
    with open(path, encoding="utf-8") as f:
        raw = f.read().splitlines()
    logical, buf = [], ""
    for line in raw:
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        logical.append(buf + stripped)
        buf = ""
    if buf:
        logical.append(buf)
    global_args, stages = {}, []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "ARG":
            name, _, default = rest.partition("=")
            default = default.strip().strip('"')
            if stages:
                stages[-1]["args"][name.strip()] = default
            else:
                global_args[name.strip()] = default
        elif keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append({"from": words[0], "name": name, "args": {}, "instrs": []})
        elif stages:
            stages[-1]["instrs"].append((keyword, rest))
    return global_args, stages


def expand_args(text, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)),
                  text)


def dockerignore_excludes(patterns, path):
    """True when .dockerignore patterns (last match wins, ! re-includes) exclude path."""
    excluded = False
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern[1:] if negate else pattern
        pat = pat.strip("/")
        if pat.startswith("**/"):
            hit = any(fnmatch.fnmatchcase(p.split("/")[-1], pat[3:]) for p in prefixes)
        else:
            hit = any(fnmatch.fnmatchcase(p, pat) for p in prefixes)
        if hit:
            excluded = not negate
    return excluded


# ------------------------------------------------------------------------------------------------
# Kubernetes helpers


def to_int(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def selector_matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def resolve_target_port(target, container_ports):
    """A Service targetPort (number or name) -> container port number."""
    if isinstance(target, int):
        return target
    for p in container_ports:
        if p.get("name") == target:
            return p.get("containerPort")
    return to_int(target)


def prestop_sleep_seconds(container):
    pre = (container.get("lifecycle") or {}).get("preStop") or {}
    if "sleep" in pre:
        return to_int(pre["sleep"].get("seconds")) or 0
    cmd = (pre.get("exec") or {}).get("command") or []
    if len(cmd) == 2 and os.path.basename(str(cmd[0])) == "sleep":
        return to_int(cmd[1]) or 0
    if len(cmd) == 3 and cmd[1] == "-c":  # sh -c "sleep N"
        m = re.fullmatch(r"\s*sleep\s+(\d+)\s*", str(cmd[2]))
        return int(m.group(1)) if m else 0
    return 0


def node_requirements(pod_spec):
    """{label key: set of allowed values} from nodeSelector and required node affinity."""
    reqs = {k: {str(v)} for k, v in (pod_spec.get("nodeSelector") or {}).items()}
    affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("operator") == "In":
                reqs.setdefault(expr["key"], set()).update(str(v) for v in expr.get("values", []))
    return reqs


# ------------------------------------------------------------------------------------------------
# The checks


def check_entrypoint(res, repo, flags):
    path = os.path.join(repo, "deploy", "docker", "entrypoint.sh")
    mapping = entrypoint_flag_map(path)
    res.check(len(mapping) >= 5, "entrypoint: FLAG_MAP table found", f"{len(mapping)} entries")
    for var, flag in mapping:
        res.check(flag in flags, f"entrypoint: {var} -> --{flag} is a gemm_server flag",
                  "not in --helpfull")
    for needed in ("port", "metrics_port", "backend", "drain_timeout_s"):
        res.check(any(f == needed for _, f in mapping), f"entrypoint maps a variable to --{needed}")
    res.check(os.access(path, os.X_OK), "entrypoint: executable bit set")
    bash = shutil.which("bash")
    if not bash:
        res.skip("entrypoint: run with a fake server", "bash not found")
        return mapping
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "fake_server")
        with open(fake, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n")
        os.chmod(fake, stat.S_IRWXU)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("GEMM_")}
        base_env["GEMM_SERVER_BIN"] = fake

        # A value of the flag's own type (from its default), distinct per variable.
        def sample(i, flag):
            default = flags.get(flag, "")
            if default in ("true", "false"):
                return "false" if default == "true" else "true"
            if re.fullmatch(r"-?\d+", default):
                return str(1000 + i)
            return f"value{i}"

        env = dict(base_env)
        want = []
        for i, (var, flag) in enumerate(mapping):
            env[var] = sample(i, flag)
            want.append(f"--{flag}={env[var]}")
        env["GEMM_EXTRA_ARGS"] = "--x=1   --y=2"
        proc = subprocess.run([bash, path, "--z=3"], env=env, capture_output=True, text=True,
                              timeout=30, check=False)
        want += ["--x=1", "--y=2", "--z=3"]
        res.check(proc.returncode == 0 and proc.stdout.split("\n")[:-1] == want,
                  "entrypoint: every variable becomes its flag, then GEMM_EXTRA_ARGS, then args",
                  f"rc={proc.returncode} out={proc.stdout!r} err={proc.stderr!r}")

        proc = subprocess.run([bash, path], env=base_env, capture_output=True, text=True,
                              timeout=30, check=False)
        res.check(proc.returncode == 0 and proc.stdout == "",
                  "entrypoint: no variables set passes no flags (server defaults apply)",
                  f"rc={proc.returncode} out={proc.stdout!r}")

        for var, bad in (("GEMM_PORT", "50051x"), ("GEMM_SELF_TEST", "yes")):
            if var not in dict(mapping):
                continue
            proc = subprocess.run([bash, path], env=dict(base_env, **{var: bad}),
                                  capture_output=True, text=True, timeout=30, check=False)
            res.check(proc.returncode != 0 and var in proc.stderr,
                      f"entrypoint: {var}={bad} is rejected", f"rc={proc.returncode}")

        proc = subprocess.run([bash, path, "echo", "other command"], env=base_env,
                              capture_output=True, text=True, timeout=30, check=False)
        res.check(proc.returncode == 0 and proc.stdout == "other command\n",
                  "entrypoint: a non-flag first argument runs as its own command",
                  f"rc={proc.returncode} out={proc.stdout!r}")
    return mapping


def check_dockerfile(res, repo, flags):
    """Returns the numeric uid of the runtime stage's USER (or None)."""
    path = os.path.join(repo, "Dockerfile")
    global_args, stages = parse_dockerfile(path)
    if not res.check(len(stages) >= 2, "Dockerfile: multi-stage", f"{len(stages)} stage(s)"):
        return None
    build, runtime = stages[0], stages[-1]
    image_re = re.compile(r"^(?:nvcr\.io/)?nvidia/cuda:(\d+)\.(\d+)(?:\.(\d+))?-(\w+)-(\S+)$")
    b = image_re.match(expand_args(build["from"], global_args))
    r = image_re.match(expand_args(runtime["from"], global_args))
    res.check(bool(b) and b.group(1) == "13" and b.group(4) == "devel",
              "Dockerfile: build stage on an NVIDIA CUDA 13 devel image",
              expand_args(build["from"], global_args))
    res.check(bool(r) and r.group(4) == "runtime",
              "Dockerfile: runtime stage on a CUDA runtime image",
              expand_args(runtime["from"], global_args))
    if b and r:
        res.check(b.group(1, 2, 3, 5) == r.group(1, 2, 3, 5),
                  "Dockerfile: runtime image matches the build image (CUDA version, OS)",
                  f"{b.group(0)} vs {r.group(0)}")
    res.check(not any("install_deps" in v or "build.sh" in v for _, v in runtime["instrs"]),
              "Dockerfile: the runtime stage installs no build dependencies")
    res.check(not any(k == "COPY" and not v.startswith("--from=") for k, v in runtime["instrs"]),
              "Dockerfile: the runtime stage copies only from the build stage, not the sources")

    runs = " ".join(v for k, v in build["instrs"] if k == "RUN")
    for script in ("scripts/install_deps.sh", "scripts/build.sh"):
        res.check(script in runs, f"Dockerfile: build stage runs {script} (as CI does)")
    for script in sorted(set(re.findall(r"scripts/[\w.-]+\.sh", runs))):
        res.check(os.path.isfile(os.path.join(repo, script)),
                  f"{script} (used by the Dockerfile) exists")
    res.check(re.search(r"install -m 0755 \"\$\{BUILD_DIR\}/server/gemm_qualify\" /stage/bin/", runs)
              is not None,
              "Dockerfile: gemm_qualify is staged next to gemm_server (/opt/gemm/bin), where the "
              "server finds it by default")
    sm = build["args"].get("GEMM_REQUIRE_SM", "")
    res.check(all(a in sm.split() for a in REQUIRED_SM) and "cuobjdump" in runs,
              "Dockerfile: the build fails without sm_90a and sm_100a code in gemm_server",
              f"GEMM_REQUIRE_SM={sm!r}")

    expose = set()
    for k, v in runtime["instrs"]:
        if k == "EXPOSE":
            expose.update(to_int(p.split("/")[0]) for p in v.split())
    want = {to_int(flags.get("port")), to_int(flags.get("metrics_port"))}
    res.check(expose == want,
              "Dockerfile: EXPOSE = the server's --port and --metrics_port defaults",
              f"EXPOSE {sorted(expose)} vs flags {sorted(x for x in want if x is not None)}")

    users = [v for k, v in runtime["instrs"] if k == "USER"]
    uid = to_int(users[-1].split(":")[0]) if users else None
    res.check(uid is not None and uid != 0,
              "Dockerfile: runtime stage runs as a numeric non-root USER",
              f"USER {users[-1] if users else '(none)'}")

    entry = [v for k, v in runtime["instrs"] if k == "ENTRYPOINT"]
    res.check(bool(entry) and entry[-1].startswith("[") and ENTRYPOINT_IN_IMAGE in entry[-1],
              f"Dockerfile: exec-form ENTRYPOINT {ENTRYPOINT_IN_IMAGE}", str(entry))
    res.check("deploy/docker/entrypoint.sh" in runs,
              "Dockerfile: installs deploy/docker/entrypoint.sh into the image")

    ignore_path = os.path.join(repo, ".dockerignore")
    if res.check(os.path.isfile(ignore_path), ".dockerignore exists"):
        with open(ignore_path, encoding="utf-8") as f:
            patterns = [l.strip() for l in f if l.strip() and not l.strip().startswith("#")]
        for p in BUILD_CONTEXT_PATHS:
            res.check(not dockerignore_excludes(patterns, p), f".dockerignore keeps {p}")
        for p in (".git", "build", "build-cpu"):
            res.check(dockerignore_excludes(patterns, p), f".dockerignore leaves out {p}")
    return uid


def check_overlay(res, name, objects, flags, health_service, flag_map, image_uid):
    tag = f"[{name}]"
    expect = OVERLAY_EXPECTATIONS.get(name, {})
    workloads = [o for o in objects if o.get("kind") in ("Deployment", "DaemonSet", "StatefulSet")]
    if not res.check(len(workloads) == 1, f"{tag} one server workload", f"{len(workloads)} found"):
        return
    wl = workloads[0]
    pod = wl["spec"]["template"]
    spec = pod["spec"]
    pod_labels = (pod.get("metadata") or {}).get("labels") or {}
    containers = [c for c in spec.get("containers", []) if c.get("name") == CONTAINER]
    if not res.check(len(containers) == 1, f"{tag} container {CONTAINER}"):
        return
    c = containers[0]
    env = {e["name"]: str(e.get("value", "")) for e in c.get("env") or [] if "name" in e}

    def effective(var, flag):
        return to_int(env.get(var) or flags.get(flag))

    grpc_port = effective("GEMM_PORT", "port")
    metrics_port = effective("GEMM_METRICS_PORT", "metrics_port")
    drain = effective("GEMM_DRAIN_TIMEOUT_S", "drain_timeout_s")
    res.check(grpc_port is not None, f"{tag} server gRPC port known ({grpc_port})")
    res.check(bool(metrics_port), f"{tag} metrics enabled (--metrics_port {metrics_port})")
    res.check(drain is not None, f"{tag} drain timeout known ({drain} s)")

    mapped = {v for v, _ in flag_map} | {"GEMM_EXTRA_ARGS"}
    for var in env:
        if var.startswith("GEMM_"):
            res.check(var in mapped, f"{tag} env {var} is one the entrypoint maps")
    res.check(env.get("GEMM_BACKEND") == "cuda",
              f"{tag} GEMM_BACKEND=cuda (no silent CPU fallback)",
              repr(env.get("GEMM_BACKEND")))
    res.check(spec.get("enableServiceLinks") is False,
              f"{tag} enableServiceLinks: false (no injected *_PORT variables)")

    ports = c.get("ports") or []
    by_name = {p.get("name"): p.get("containerPort") for p in ports}
    res.check(by_name.get("grpc") == grpc_port, f"{tag} containerPort grpc = {grpc_port}",
              str(by_name.get("grpc")))
    res.check(by_name.get("metrics") == metrics_port,
              f"{tag} containerPort metrics = {metrics_port}",
              str(by_name.get("metrics")))

    # With TLS on the gRPC port the kubelet's probes (plaintext) ask the health-only port.
    probe_port = effective("GEMM_HEALTH_PORT", "health_port") or grpc_port
    if probe_port != grpc_port:
        res.check(by_name.get("health") == probe_port, f"{tag} containerPort health = {probe_port}",
                  str(by_name.get("health")))
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = c.get(kind)
        if not res.check(bool(probe) and "grpc" in probe, f"{tag} {kind} is a native gRPC probe"):
            continue
        res.check(to_int(probe["grpc"].get("port")) == probe_port,
                  f"{tag} {kind} port = {probe_port}", str(probe["grpc"].get("port")))
        service = probe["grpc"].get("service", "")
        allowed = {health_service} if kind != "livenessProbe" else {"", health_service}
        res.check(service in allowed, f"{tag} {kind} asks the health service for {service!r}",
                  f"want one of {sorted(allowed)}")
    live = c.get("livenessProbe") or {}
    live_window = live.get("periodSeconds", 10) * live.get("failureThreshold", 3)
    if drain is not None:
        res.check(live_window > drain,
                  f"{tag} liveness tolerates a full drain ({live_window} s > {drain} s)")

    sleep = prestop_sleep_seconds(c)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    res.check(sleep > 0, f"{tag} preStop sleep lets endpoints go before the drain ({sleep} s)")
    if drain is not None:
        res.check(grace > sleep + drain,
                  f"{tag} terminationGracePeriodSeconds {grace} > preStop {sleep} + drain {drain}")

    resources = c.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    gpus = to_int(limits.get("nvidia.com/gpu"))
    res.check(gpus is not None and gpus >= 1, f"{tag} limits nvidia.com/gpu ({gpus})")
    if expect.get("gpus") is not None:
        res.check(gpus == expect["gpus"], f"{tag} nvidia.com/gpu = {expect['gpus']} per pod",
                  str(gpus))
    if "nvidia.com/gpu" in requests:
        res.check(to_int(requests["nvidia.com/gpu"]) == gpus, f"{tag} GPU request = GPU limit")
    res.check("cpu" in requests and "memory" in requests, f"{tag} CPU and memory requests")
    res.check("memory" in limits, f"{tag} memory limit")

    nodes = node_requirements(spec)
    arch = nodes.get("kubernetes.io/arch", set())
    res.check(len(arch) == 1, f"{tag} selects one kubernetes.io/arch ({sorted(arch)})")
    if expect.get("arch"):
        res.check(arch == {expect["arch"]}, f"{tag} kubernetes.io/arch = {expect['arch']}")
    products = nodes.get("nvidia.com/gpu.product", set())
    res.check(bool(products), f"{tag} selects nodes by nvidia.com/gpu.product ({sorted(products)})")
    for p in expect.get("products", []):
        res.check(p in products, f"{tag} nvidia.com/gpu.product admits {p}")
    res.check(any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations") or []),
              f"{tag} tolerates the nvidia.com/gpu taint")

    psc, csc = spec.get("securityContext") or {}, c.get("securityContext") or {}
    res.check(psc.get("runAsNonRoot") is True or csc.get("runAsNonRoot") is True,
              f"{tag} runAsNonRoot")
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    if image_uid is not None:
        res.check(uid == image_uid, f"{tag} runAsUser = the image's USER {image_uid}", str(uid))
    res.check(csc.get("allowPrivilegeEscalation") is False,
              f"{tag} allowPrivilegeEscalation: false")
    res.check(":" in c.get("image", "") or "@" in c.get("image", ""),
              f"{tag} image has a tag or digest ({c.get('image')})")

    ann = (pod.get("metadata") or {}).get("annotations") or {}
    res.check(ann.get("prometheus.io/scrape") == "true" and
              to_int(ann.get("prometheus.io/port")) == metrics_port,
              f"{tag} prometheus.io scrape annotations on port {metrics_port}",
              f"{ann.get('prometheus.io/scrape')!r} {ann.get('prometheus.io/port')!r}")

    # Services
    services = [o for o in objects if o.get("kind") == "Service" and
                selector_matches((o.get("spec") or {}).get("selector") or {}, pod_labels)]
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    regular = [s for s in services if s["spec"].get("clusterIP") != "None"]
    res.check(len(headless) >= 1, f"{tag} headless Service selecting the pods")
    res.check(len(regular) >= 1, f"{tag} regular Service selecting the pods")
    for s in headless:
        sname = s["metadata"]["name"]
        res.check(s["spec"].get("publishNotReadyAddresses", False) is False,
                  f"{tag} {sname} hands out ready pods only")
        for p in s["spec"].get("ports") or []:
            target = resolve_target_port(p.get("targetPort", p.get("port")), ports)
            # DNS gives pod IPs: clients dial the Service port on the pod directly.
            res.check(p.get("port") == target == grpc_port,
                      f"{tag} {sname} port {p.get('name')} = targetPort = server port {grpc_port}",
                      f"port {p.get('port')} target {target}")
    for s in regular:
        sname = s["metadata"]["name"]
        targets = {p.get("name"): resolve_target_port(p.get("targetPort", p.get("port")), ports)
                   for p in s["spec"].get("ports") or []}
        res.check(targets.get("grpc") == grpc_port, f"{tag} {sname} grpc -> {grpc_port}",
                  str(targets))
        res.check(targets.get("metrics") == metrics_port,
                  f"{tag} {sname} metrics -> {metrics_port}",
                  str(targets))

    pdbs = [o for o in objects if o.get("kind") == "PodDisruptionBudget" and selector_matches(
        ((o.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}, pod_labels)]
    res.check(len(pdbs) == 1, f"{tag} a PodDisruptionBudget selects the pods")
    for p in pdbs:
        res.check("maxUnavailable" in p["spec"] or "minAvailable" in p["spec"],
                  f"{tag} PodDisruptionBudget bounds disruptions")

    monitors = [o for o in objects if o.get("kind") == "ServiceMonitor"]
    if expect.get("servicemonitor"):
        res.check(len(monitors) >= 1, f"{tag} has a ServiceMonitor")
    for m in monitors:
        sel = ((m.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        picked = [s for s in services
                  if selector_matches(sel, (s.get("metadata") or {}).get("labels") or {})]
        for ep in (m.get("spec") or {}).get("endpoints") or []:
            hits = []
            for s in picked:
                for p in s["spec"].get("ports") or []:
                    if p.get("name") == ep.get("port"):
                        hits.append(resolve_target_port(p.get("targetPort", p.get("port")), ports))
            res.check(bool(hits) and all(h == metrics_port for h in hits),
                      f"{tag} ServiceMonitor endpoint {ep.get('port')!r} scrapes {metrics_port}",
                      f"resolved to {hits}")
            res.check(ep.get("path", "/metrics") == "/metrics",
                      f"{tag} ServiceMonitor path /metrics")

    namespaces = {(o.get("metadata") or {}).get("namespace") for o in objects}
    res.check(len(namespaces) == 1 and None not in namespaces,
              f"{tag} every object in one namespace ({sorted(str(n) for n in namespaces)})")


def render_overlays(res, repo, kubectl):
    overlays_dir = os.path.join(repo, "deploy", "overlays")
    names = sorted(d for d in os.listdir(overlays_dir)
                   if os.path.isfile(os.path.join(overlays_dir, d, "kustomization.yaml")))
    for known in OVERLAY_EXPECTATIONS:
        res.check(known in names, f"overlay {known} exists")
    rendered = {}
    for name in names:
        proc = subprocess.run([kubectl, "kustomize", os.path.join(overlays_dir, name)],
                              capture_output=True, text=True, timeout=120, check=False)
        if not res.check(proc.returncode == 0, f"[{name}] kubectl kustomize renders",
                         proc.stderr.strip()):
            continue
        rendered[name] = [o for o in yaml.safe_load_all(proc.stdout) if o]
    return rendered


def run_linters(res, repo, yamllint):
    if yamllint:
        targets = ["deploy", ".yamllint"]
        proc = subprocess.run([yamllint, "--strict", "-f", "parsable", "-c", ".yamllint"] + targets,
                              cwd=repo, capture_output=True, text=True, timeout=120, check=False)
        res.check(proc.returncode == 0, "yamllint --strict deploy .yamllint",
                  (proc.stdout + proc.stderr).strip())
    else:
        res.skip("yamllint", "yamllint not installed (scripts/install_deps.sh installs it)")
    shellcheck = shutil.which("shellcheck")
    scripts = [os.path.join("deploy", "docker", f)
               for f in sorted(os.listdir(os.path.join(repo, "deploy", "docker")))
               if f.endswith(".sh")]
    if shellcheck:
        proc = subprocess.run([shellcheck] + scripts, cwd=repo, capture_output=True, text=True,
                              timeout=120, check=False)
        res.check(proc.returncode == 0, "shellcheck " + " ".join(scripts), proc.stdout.strip())
    for s in scripts:
        proc = subprocess.run(["bash", "-n", s], cwd=repo, capture_output=True, text=True,
                              timeout=30, check=False)
        res.check(proc.returncode == 0, f"bash -n {s}", proc.stderr.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--server", help="gemm_server binary; its --helpfull gives the defaults")
    ap.add_argument("--helpfull-file", help="saved --helpfull text, instead of --server")
    ap.add_argument("--kubectl", default=shutil.which("kubectl"))
    ap.add_argument("--yamllint", default=shutil.which("yamllint"))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    if args.self_test:
        return self_test(repo, args.kubectl)

    if args.server:
        text = helpfull_from_server(args.server)
    elif args.helpfull_file:
        with open(args.helpfull_file, encoding="utf-8") as f:
            text = f.read()
    else:
        ap.error("one of --server or --helpfull-file is needed")
    flags = parse_helpfull(text)

    res = Results()
    for needed in ("port", "metrics_port", "drain_timeout_s", "backend"):
        res.check(needed in flags, f"gemm_server --helpfull has --{needed}",
                  f"flags found: {sorted(flags)}")
    if res.failed:
        print(text[:2000])
        print(f"deploy checks: {res.passed} passed, {res.failed} failed")
        return 1
    print(f"      server defaults: --port {flags['port']}, --metrics_port {flags['metrics_port']}, "
          f"--drain_timeout_s {flags['drain_timeout_s']}")
    health_service = health_service_name(repo)

    flag_map = check_entrypoint(res, repo, flags)
    image_uid = check_dockerfile(res, repo, flags)
    run_linters(res, repo, args.yamllint)

    if yaml is None:
        res.skip("rendered manifests", "PyYAML missing (python3-yaml)")
    elif not args.kubectl:
        res.skip("rendered manifests", "kubectl not found (kubectl kustomize renders the overlays)")
    else:
        for name, objects in render_overlays(res, repo, args.kubectl).items():
            check_overlay(res, name, objects, flags, health_service, flag_map, image_uid)

    summary = f"deploy checks: {res.passed} passed, {res.failed} failed"
    print(summary + (f", {res.skipped} skipped" if res.skipped else ""))
    if res.failed:
        return 1
    return SKIP if res.skipped else 0


if __name__ == "__main__":
    sys.exit(main())
