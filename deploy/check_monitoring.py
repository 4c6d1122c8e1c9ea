"""The monitoring half of deploy/check.py: the alert rules (alerts.yaml,
promtool's own check and unit tests in alerts_test.yaml) and the Grafana
dashboard (every PromQL expression parses, names only metrics the exporter
serves, joins the top-flow series on every label that names a flow, and
uses Grafana's $__rate_interval).

The exporter's metrics are read from docs/metrics.md's metric table, which a
root test (`exporter::the_metrics_page_lists_every_metric_served`) compares with
what `/metrics` serves.
"""

import json
import os
import re
import subprocess
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
METRICS_PAGE = os.path.join(HERE, "..", "docs", "metrics.md")
# The labels that name one top-flow series: two network namespaces may each
# have a flow between the same endpoints.
TOP_FLOW_KEY = {"instance", "netns", "local", "remote"}
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


def readme_metrics():
    """Metric names in docs/metrics.md's `observer run` metric table."""
    text = open(METRICS_PAGE, encoding="utf-8").read()
    start = text.index("| metric | type | labels | meaning |")
    names = set()
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        # Label lists in parentheses are not metric names.
        first = re.sub(r"\([^)]*\)", "", first)
        for n in re.findall(r"`([a-z_]+)`", first):
            names.add(n if n.startswith("process_") else "observer_" + n)
    return names


def metric_names(expr):
    """The metric names an expression reads (histogram series by their
    family name)."""
    out = set()
    for n in re.findall(r"\b((?:observer|process)_[a-z_]+)", expr):
        for s in HISTOGRAM_SUFFIXES:
            if n.endswith(s) and not n.endswith("_total" + s):
                n = n[: -len(s)]
                break
        out.add(n)
    return out


def as_promql(expr):
    """A dashboard expression with Grafana's variables given values."""
    return expr.replace("$__rate_interval", "5m").replace("$instance", ".*")


def promtool_rules(promtool, exprs):
    """promtool's verdict on `exprs` as recording rules: (ok, output)."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr_{i}", "expr": as_promql(e)} for i, e in enumerate(exprs)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump(rules, f)
    try:
        r = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
        return r.returncode == 0, (r.stdout + r.stderr).strip()
    finally:
        os.unlink(f.name)


def check_dashboard(check, tool, served):
    d = json.load(open(os.path.join(HERE, "grafana-dashboard.json"), encoding="utf-8"))
    variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
    inst = variables.get("instance") or {}
    check(inst.get("refresh") in (1, 2),
          "dashboard: the instance variable refreshes (on load or time change), so new hosts appear")
    targets = [(p["title"], t) for p in d["panels"] for t in p.get("targets", [])]
    exprs = [t["expr"] for _, t in targets]
    check(exprs, "dashboard: has queries")
    for title, t in targets:
        e = t["expr"]
        unknown = metric_names(e) - served
        check(not unknown, f"dashboard '{title}': names only served metrics"
              + (f" (not served: {sorted(unknown)})" if unknown else ""))
        fixed = re.findall(r"\[(\d+[smhd])\]", e)
        check(not fixed, f"dashboard '{title}': ranges are $__rate_interval"
              + (f" (fixed: {fixed})" if fixed else ""))
        if "observer_top_flow" in e:
            for on in re.findall(r"\bon\s*\(([^)]*)\)", e):
                labels = {x.strip() for x in on.split(",") if x.strip()}
                check(TOP_FLOW_KEY <= labels,
                      f"dashboard '{title}': the top-flow join is on {sorted(TOP_FLOW_KEY)}"
                      f" (is on {sorted(labels)})")
    for p in d["panels"]:
        units = {p.get("fieldConfig", {}).get("defaults", {}).get("unit")}
        check(len(units) == 1, f"dashboard '{p['title']}': one unit for its axis")
    promtool = tool("promtool")
    if promtool:
        ok, out = promtool_rules(promtool, exprs)
        check(ok, "dashboard: every expression parses (promtool check rules)"
              + ("" if ok else ": " + out))


def check_alerts(check, tool, served):
    path = os.path.join(HERE, "alerts.yaml")
    doc = yaml.safe_load(open(path, encoding="utf-8"))
    rules = [r for g in doc.get("groups") or [] for r in g.get("rules") or []]
    names = {r.get("alert") for r in rules}
    for want in ("ObserverHostMostlyReceiveWindowLimited", "ObserverRingDrops",
                 "ObserverProgramDetached", "ObserverFlowMapFull", "ObserverDown"):
        check(want in names, f"alerts.yaml: has {want}")
    for r in rules:
        unknown = metric_names(r.get("expr", "")) - served
        check(not unknown, f"alerts.yaml {r.get('alert')}: names only served metrics"
              + (f" (not served: {sorted(unknown)})" if unknown else ""))
        check((r.get("labels") or {}).get("severity") in ("warning", "critical"),
              f"alerts.yaml {r.get('alert')}: has a severity")
    promtool = tool("promtool")
    if not promtool:
        return
    r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    check(r.returncode == 0, "alerts.yaml: promtool check rules"
          + ("" if r.returncode == 0 else ": " + (r.stdout + r.stderr).strip()))
    r = subprocess.run([promtool, "test", "rules", os.path.join(HERE, "alerts_test.yaml")],
                       capture_output=True, text=True)
    check(r.returncode == 0, "alerts.yaml: promtool test rules alerts_test.yaml"
          + ("" if r.returncode == 0 else ": " + (r.stdout + r.stderr).strip()[-2000:]))


def check_monitoring(check, tool):
    served = readme_metrics()
    check(len(served) >= 30, f"docs/metrics.md: the metric table lists the exporter's metrics ({len(served)})")
    check_dashboard(check, tool, served)
    check_alerts(check, tool, served)
