"""Reads gemm_loadgen's JSON reports (schema_version 2: every time in milliseconds) for the
scripts that summarize or record them.

  import loadgen_report
  report = loadgen_report.load("run.json")
  timing = loadgen_report.server_timing_us(report["points"][0])
"""
import json
import sys

SCHEMA_VERSION = 2
# Fields of a point's server_timing_ms that are not times.
COUNTS = ("responses", "batch_requests")


def load(path):
    """The report at `path`; exits naming the file when it is not a gemm_loadgen report of
    SCHEMA_VERSION (an older one names its times *_us, which these scripts no longer read)."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    version = report.get("schema_version")
    if report.get("tool") != "gemm_loadgen" or version != SCHEMA_VERSION:
        sys.exit(f"{path}: not a gemm_loadgen report of schema_version {SCHEMA_VERSION} "
                 f"(tool {report.get('tool')!r}, schema_version {version!r})")
    return report


def server_timing_us(point):
    """The server's timing per request of a report's point, each phase in microseconds
    (responses and batch_requests as they are); a figure the report has as null is nan."""
    out = {}
    for key, value in point["server_timing_ms"].items():
        if value is None:
            out[key] = float("nan")
        else:
            out[key] = value if key in COUNTS else value * 1e3
    return out
