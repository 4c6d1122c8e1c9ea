#!/usr/bin/env python3
"""Checks the deployment files in this folder, as `cargo xtask test` does.

    python3 deploy/check.py                  # every check; `N passed, M failed`
    python3 deploy/check.py --require-tools  # and fail where promtool or
                                             # systemd-analyze is missing
    python3 deploy/check.py --podman-args    # the DaemonSet container's security
                                             # context as podman flags (JSON list)
    python3 deploy/check.py --seccomp-from /usr/share/containers/seccomp.json \
        > observer-seccomp.json              # a runtime's default seccomp profile
                                             # with bpf(2) allowed to CAP_BPF

No Kubernetes schema validator is packaged for Debian, so this checks the
fields observer relies on, each with the reason it matters: the objects'
shape (apiVersion, kind, names, types), what the agent needs to start
(capabilities, the node IP, probes on /healthz), what it must not ask for
(hostPID, host paths but /run/netns, a token), and that exactly one scrape path reaches the
pods. The TLS overlay (tls/: the DaemonSet and ServiceMonitor patched to
serve and scrape over https with basic auth) is applied here, its patches
being JSON patches, and checked the same way, with what TLS adds. The
systemd unit is checked with systemd-analyze (verify, and the offline
security score), as shipped and with its commented TLS lines, and the scrape
configs with promtool (the hosts' as shipped), where those are installed; the alert rules and
the dashboard by check_monitoring.py. Edit a manifest, run this.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from check_monitoring import check_monitoring

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 19190
# Measured (see daemonset.yaml): maps 78 MB at the default --max-flows, plus
# the agent's RSS with the flow map full (322 MiB at 100k flows).
MIN_MEMORY_LIMIT_MI = 520
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# systemd-analyze security's "OK" band ends at 2.5 (lower is better).
MAX_EXPOSURE = 2.5

results = []
require_tools = False
# Put before each check's text while a variant (the TLS overlay) is checked.
prefix = ""
# The TLS overlay's Secrets, and where the agent's is mounted.
WEB_SECRET = "observer-web"
SCRAPE_SECRET = "observer-scrape"
WEB_MOUNT = "/etc/observer/web"
# Where `ip netns` and the CNIs name network namespaces, on the node and
# in the pod.
NETNS_DIR = "/run/netns"
# The unit's credentials folder (systemd's $CREDENTIALS_DIRECTORY).
CREDENTIALS = "/run/credentials/observer.service"
# exporter-toolkit's web-config keys (docs/web-configuration.md).
WEB_CONFIG_KEYS = {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"}
BCRYPT = re.compile(r"^\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}$")


def tool(name):
    """The path of `name`, or None; a failed check when tools are required."""
    path = shutil.which(name)
    if path is None and require_tools:
        check(False, f"{name} is installed (cargo xtask setup installs it)")
    return path


def check(ok, what):
    results.append((bool(ok), prefix + what))


def load(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def memory_mi(q):
    """A Kubernetes memory quantity in MiB (Mi, Gi, M, plain bytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?", str(q))
    if not m:
        return None
    n, unit = float(m.group(1)), m.group(2) or ""
    factor = {"": 1, "Ki": 1024, "Mi": 1 << 20, "Gi": 1 << 30,
              "K": 1000, "M": 10**6, "G": 10**9}[unit]
    return n * factor / (1 << 20)


def shape(doc, where):
    """What every Kubernetes object needs: apiVersion, kind, a DNS-1123 name."""
    meta = doc.get("metadata") or {}
    name = meta.get("name", "")
    check(isinstance(doc.get("apiVersion"), str) and "apiVersion" in doc,
          f"{where}: has an apiVersion")
    check(isinstance(doc.get("kind"), str), f"{where}: has a kind")
    check(DNS1123.match(name) and len(name) <= 63,
          f"{where}: metadata.name {name!r} is a DNS-1123 label")
    labels = meta.get("labels") or {}
    check(all(isinstance(v, str) for v in labels.values()),
          f"{where}: label values are strings")


def by_kind(docs):
    out = {}
    for d in docs:
        out.setdefault(d.get("kind"), []).append(d)
    return out


def observer_container(ds):
    containers = ds["spec"]["template"]["spec"].get("containers") or []
    return next((c for c in containers if c.get("name") == "observer"), None)


def check_daemonset(kinds, tls=False):
    ns = (kinds.get("Namespace") or [None])[0]
    check(ns is not None, "daemonset.yaml: defines the observer Namespace")
    if ns:
        labels = ns["metadata"].get("labels") or {}
        # Added capabilities, hostNetwork and hostPort break "baseline".
        check(labels.get("pod-security.kubernetes.io/enforce") == "privileged",
              "Namespace: enforces Pod Security 'privileged' (the agent breaks 'baseline')")
    pcs = kinds.get("PriorityClass") or []
    dss = kinds.get("DaemonSet") or []
    check(len(dss) == 1, "daemonset.yaml: one DaemonSet")
    if not dss:
        return None
    ds = dss[0]
    check(ds["apiVersion"] == "apps/v1", "DaemonSet: apiVersion apps/v1")
    check(ds["metadata"].get("namespace") == (ns or {}).get("metadata", {}).get("name"),
          "DaemonSet: in the Namespace the file creates")
    spec = ds["spec"]
    tmpl = spec["template"]
    pod = tmpl["spec"]
    sel = spec["selector"]["matchLabels"]
    tlabels = tmpl["metadata"].get("labels") or {}
    check(sel and all(tlabels.get(k) == v for k, v in sel.items()),
          "DaemonSet: a selector that matches the pod template's labels")
    check(not pod.get("hostPID"), "pod: no hostPID (pids come from the kernel, not /proc)")
    check(not pod.get("hostIPC"), "pod: no hostIPC")
    check(pod.get("hostUsers", True) is not False,
          "pod: no user namespace (hostUsers: false leaves CAP_BPF useless for bpf(2))")
    for p in pcs:
        check(0 <= p.get("value", 0) <= 1_000_000_000,
              f"PriorityClass {p['metadata']['name']}: value within user range (<= 1e9)")
    check(pod.get("hostNetwork") is True,
          "pod: hostNetwork (the endpoint listens on the node's address)")
    check(pod.get("dnsPolicy") == "ClusterFirstWithHostNet",
          "pod: dnsPolicy ClusterFirstWithHostNet (as hostNetwork needs)")
    check(pod.get("automountServiceAccountToken") is False,
          "pod: no service account token (the agent calls no API)")
    check((pod.get("nodeSelector") or {}).get("kubernetes.io/os") == "linux",
          "pod: nodeSelector kubernetes.io/os=linux")
    check((pod.get("nodeSelector") or {}).get("kubernetes.io/arch") in ("amd64", "arm64"),
          "pod: nodeSelector kubernetes.io/arch (the image holds one architecture's binary)")
    pc = pod.get("priorityClassName")
    check(pc and (pc.startswith("system-") or any(p["metadata"]["name"] == pc for p in pcs)),
          f"pod: priorityClassName {pc!r} exists (defined here or a system class)")
    sc = pod.get("securityContext") or {}
    check((sc.get("seccompProfile") or {}).get("type") == "RuntimeDefault",
          "pod: seccomp RuntimeDefault")
    vols = pod.get("volumes") or []
    host = [v for v in vols if "hostPath" in v]
    check(len(host) == 1 and host[0]["hostPath"].get("path") == NETNS_DIR
          and host[0]["hostPath"].get("type") == "DirectoryOrCreate",
          f"pod: one host path, {NETNS_DIR} (DirectoryOrCreate), for the namespaces' names "
          "(BTF is read from the container's own /sys)")
    others = [v for v in vols if "hostPath" not in v]
    if tls:
        check(len(others) == 1 and (others[0].get("secret") or {}).get("secretName") == WEB_SECRET,
              f"pod: besides {NETNS_DIR}, one volume, the Secret {WEB_SECRET}")
    else:
        check(not others, f"pod: no volume but {NETNS_DIR}")
    ann = tmpl["metadata"].get("annotations") or {}
    check(not any(k.startswith("prometheus.io/") for k in ann),
          "pod: no prometheus.io annotations (the ServiceMonitor or the sd job scrapes it, once)")
    c = observer_container(ds)
    check(c is not None, "pod: has the observer container")
    if c is None:
        return ds
    image = c.get("image", "")
    check(image and not image.endswith(":latest") and ":" in image.rsplit("/", 1)[-1],
          f"container: image {image!r} names a version, not :latest")
    args = c.get("args") or []
    check(args[:1] == ["run"], "container: runs the agent (`observer run`)")
    check("--listen=$(NODE_IP)" in args,
          "container: listens on the node IP (--listen=$(NODE_IP)), not 0.0.0.0")
    flags = [a.split("=", 1)[0] for a in args[1:] if a.startswith("--")]
    check(len(flags) == len(set(flags)),
          "container: no flag given twice (observer refuses a repeated flag)")
    top = [a.split("=", 1)[1] for a in args if a.startswith("--top-flows=")]
    check(top and top[0].isdigit() and 0 < int(top[0]) <= 100,
          "container: --top-flows=N (1-100) feeds the dashboard's top-flows table")
    check(not c.get("command"), "container: no command override (the image's entrypoint runs)")
    netns = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == NETNS_DIR]
    check(len(netns) == 1 and netns[0].get("readOnly") is True
          and netns[0].get("mountPropagation") == "HostToContainer"
          and any(v.get("name") == netns[0].get("name") for v in host),
          f"container: {NETNS_DIR} mounted read-only, HostToContainer (a namespace named "
          "after the pod started shows too)")
    others = [x for x in pod.get("containers") or [] if x is not c] + list(pod.get("initContainers") or [])
    for x in [c] + others:
        xsc = x.get("securityContext") or {}
        check(not xsc.get("privileged"), f"container {x.get('name')!r}: not privileged")
        check((xsc.get("seccompProfile") or {}).get("type") != "Unconfined",
              f"container {x.get('name')!r}: seccomp not Unconfined")
    env = {e["name"]: e for e in c.get("env") or []}
    node_ip = ((env.get("NODE_IP") or {}).get("valueFrom") or {}).get("fieldRef") or {}
    check(node_ip.get("fieldPath") == "status.hostIP", "container: NODE_IP from status.hostIP")
    ports = c.get("ports") or []
    metrics = next((p for p in ports if p.get("name") == "metrics"), None)
    check(metrics and metrics.get("containerPort") == PORT and metrics.get("hostPort") == PORT,
          f"container: port 'metrics' {PORT}, hostPort equal (hostNetwork requires it)")
    check(metrics and metrics.get("protocol", "TCP") == "TCP", "container: port 'metrics' is TCP")
    check(all(len(p.get("name", "")) <= 15 for p in ports), "container: port names of 15 characters or fewer")
    csc = c.get("securityContext") or {}
    caps = csc.get("capabilities") or {}
    check(caps.get("drop") == ["ALL"], "container: drops ALL capabilities")
    added = set(caps.get("add") or [])
    check(added == {"BPF", "PERFMON"},
          "container: adds BPF and PERFMON, and nothing else (Linux 5.12 or "
          "later charges maps to the memory cgroup, not RLIMIT_MEMLOCK)")
    check(csc.get("readOnlyRootFilesystem") is True, "container: read-only root filesystem")
    check(csc.get("allowPrivilegeEscalation") is False, "container: no privilege escalation")
    check(not csc.get("privileged"), "container: not privileged")
    check(csc.get("runAsUser") == 0 and not csc.get("runAsNonRoot"),
          "container: runs as uid 0 (runtimes grant added capabilities only to root)")
    scheme = "HTTPS" if tls else "HTTP"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = ((c.get(probe) or {}).get("httpGet")) or {}
        check(get.get("path") == "/healthz" and get.get("port") in ("metrics", PORT)
              and get.get("scheme", "HTTP") == scheme,
              f"container: {probe} on {scheme.lower()} /healthz, port metrics")
    res = c.get("resources") or {}
    lim = memory_mi((res.get("limits") or {}).get("memory", ""))
    req = memory_mi((res.get("requests") or {}).get("memory", ""))
    check(lim is not None and lim >= MIN_MEMORY_LIMIT_MI,
          f"container: memory limit of at least {MIN_MEMORY_LIMIT_MI}Mi (maps + the agent with the flow map full)")
    check(req is not None and lim is not None and req <= lim, "container: memory request within the limit")
    check("cpu" not in (res.get("limits") or {}), "container: no CPU limit (a throttled poll misses closes)")
    return ds


def check_servicemonitor(kinds, ds, tls=False):
    svc = (kinds.get("Service") or [None])[0]
    sm = (kinds.get("ServiceMonitor") or [None])[0]
    check(svc is not None and sm is not None, "servicemonitor.yaml: a Service and a ServiceMonitor")
    if not (svc and sm):
        return
    check(sm["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor: monitoring.coreos.com/v1")
    if ds is not None:
        tlabels = ds["spec"]["template"]["metadata"].get("labels") or {}
        check(all(tlabels.get(k) == v for k, v in svc["spec"]["selector"].items()),
              "Service: selects the DaemonSet's pods")
        check(svc["metadata"].get("namespace") == ds["metadata"].get("namespace"),
              "Service: in the DaemonSet's namespace")
    check(svc["spec"].get("clusterIP") == "None", "Service: headless (one target per pod)")
    sport = next((p for p in svc["spec"].get("ports") or [] if p.get("name") == "metrics"), {})
    check(sport.get("port") == PORT and sport.get("targetPort") in ("metrics", PORT),
          f"Service: port 'metrics' {PORT}, to the pods' 'metrics' port")
    sann = svc["metadata"].get("annotations") or {}
    check(not any(k.startswith("prometheus.io/") for k in sann),
          "Service: no prometheus.io annotations (the ServiceMonitor scrapes it, once)")
    slabels = svc["metadata"].get("labels") or {}
    sel = sm["spec"]["selector"].get("matchLabels") or {}
    check(sel and all(slabels.get(k) == v for k, v in sel.items()),
          "ServiceMonitor: selects the Service")
    check("release" in (sm["metadata"].get("labels") or {}),
          "ServiceMonitor: has the `release` label kube-prometheus-stack selects on")
    ep = (sm["spec"].get("endpoints") or [{}])[0]
    check(ep.get("port") == "metrics" and ep.get("path", "/metrics") == "/metrics",
          "ServiceMonitor: scrapes /metrics on the 'metrics' port")
    nsel = (sm["spec"].get("namespaceSelector") or {}).get("matchNames")
    check(nsel is None or svc["metadata"].get("namespace") in nsel,
          "ServiceMonitor: its namespaceSelector includes the Service's namespace")
    if not tls:
        check(ep.get("scheme", "http") == "http" and "basicAuth" not in ep,
              "ServiceMonitor: plain http, as the agent serves without --web-config")
        return
    check(ep.get("scheme") == "https", "ServiceMonitor: scheme https")
    tc = ep.get("tlsConfig") or {}
    check((tc.get("ca") or {}).get("secret") == {"name": SCRAPE_SECRET, "key": "ca.crt"},
          f"ServiceMonitor: tlsConfig.ca from Secret {SCRAPE_SECRET}, key ca.crt")
    check(isinstance(tc.get("serverName"), str) and tc["serverName"]
          and not tc.get("insecureSkipVerify"),
          "ServiceMonitor: checks the certificate under one serverName (targets are node IPs)")
    ba = ep.get("basicAuth") or {}
    check(ba.get("username") == {"name": SCRAPE_SECRET, "key": "username"}
          and ba.get("password") == {"name": SCRAPE_SECRET, "key": "password"},
          f"ServiceMonitor: basicAuth username and password from Secret {SCRAPE_SECRET}")


def json_patch(doc, ops):
    """`doc` with the JSON patch `ops` applied (add and replace, as
    kustomize applies them); a path that does not resolve is a failed check."""
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~")
                          for p in op["path"].lstrip("/").split("/")]
        node = doc
        try:
            for p in parents:
                node = node[int(p)] if isinstance(node, list) else node[p]
            if isinstance(node, list):
                if last == "-":
                    node.append(op["value"])
                elif op["op"] == "add":
                    node.insert(int(last), op["value"])
                else:
                    node[int(last)] = op["value"]
            else:
                if op["op"] != "add":
                    check(last in node, f"tls/: patch {op['path']}: replaces a value")
                node[last] = op["value"]
        except (KeyError, IndexError, ValueError, TypeError):
            check(False, f"tls/: patch {op['path']}: resolves in the base")
    return doc


def check_web_config(path):
    """deploy/tls/web-config.yml: exporter-toolkit's keys, files beside it
    (the Secret's other keys), a bcrypt hash."""
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f) or {}
    check(set(cfg) <= WEB_CONFIG_KEYS, "web-config.yml: only exporter-toolkit's keys")
    t = cfg.get("tls_server_config") or {}
    check(t.get("cert_file") == "tls.crt" and t.get("key_file") == "tls.key",
          "web-config.yml: cert_file tls.crt and key_file tls.key, beside it "
          "(the Secret's keys, as kubernetes.io/tls names them)")
    users = cfg.get("basic_auth_users") or {}
    check(users and all(BCRYPT.match(str(h)) for h in users.values()),
          "web-config.yml: basic_auth_users holds bcrypt hashes")
    return t


def check_tls_overlay(ds_docs, sm_docs):
    """deploy/tls/: the plain deployment patched to serve and scrape over
    https with basic auth."""
    global prefix
    base = load("kustomization.yaml")[0]
    check(base.get("resources") == ["daemonset.yaml", "servicemonitor.yaml"],
          "kustomization.yaml: the DaemonSet and the ServiceMonitor")
    kust = load("tls/kustomization.yaml")[0]
    check(kust.get("resources") == [".."], "tls/kustomization.yaml: overlays deploy/")
    patches = {(p.get("target") or {}).get("kind"): p for p in kust.get("patches") or []}
    check(set(patches) == {"DaemonSet", "ServiceMonitor"}
          and all(p["target"].get("name") == "observer" for p in patches.values()),
          "tls/kustomization.yaml: patches the DaemonSet and the ServiceMonitor named observer")
    docs = {}
    for kind, base_docs in (("DaemonSet", ds_docs), ("ServiceMonitor", sm_docs)):
        ops = load(os.path.join("tls", (patches.get(kind) or {}).get("path", "missing")))
        ops = ops[0] if ops else []
        docs[kind] = [json_patch(d, ops) if d.get("kind") == kind else d for d in base_docs]
    prefix = "tls/: "
    try:
        ds = check_daemonset(by_kind(docs["DaemonSet"]), tls=True)
        check_servicemonitor(by_kind(docs["ServiceMonitor"]), ds, tls=True)
        if ds is None:
            return
        c = observer_container(ds) or {}
        mounts = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == WEB_MOUNT]
        check(len(mounts) == 1 and mounts[0].get("readOnly") is True
              and "subPath" not in mounts[0],
              f"container: the Secret mounted read-only at {WEB_MOUNT} (not subPath: "
              "a subPath mount never sees a renewed certificate)")
        web = [a.split("=", 1)[1] for a in c.get("args") or [] if a.startswith("--web-config=")]
        check(web == [f"{WEB_MOUNT}/web-config.yml"],
              f"container: --web-config={WEB_MOUNT}/web-config.yml, the Secret's key")
        vols = ds["spec"]["template"]["spec"].get("volumes") or []
        vol = next((v["secret"] for v in vols if "secret" in v), {})
        check(vol.get("defaultMode") == 0o400, "pod: the Secret's files are 0400 (root only)")
        check_web_config(os.path.join(HERE, "tls", "web-config.yml"))
    finally:
        prefix = ""


def promtool_config(promtool, path, what):
    """promtool check config on the file at `path`, as `what`."""
    r = subprocess.run([promtool, "check", "config", path], capture_output=True, text=True)
    check(r.returncode == 0, f"{what}: promtool check config"
          + ("" if r.returncode == 0 else ": " + (r.stdout + r.stderr).strip()))


def check_prometheus_yml():
    """prometheus.yml (hosts under systemd) as shipped, and
    prometheus-kubernetes.yml (the DaemonSet's pods)."""
    hosts = load("prometheus.yml")[0]
    check("alerts.yaml" in (hosts.get("rule_files") or []), "prometheus.yml: loads alerts.yaml")
    jobs = {j["job_name"]: j for j in hosts.get("scrape_configs") or []}
    check(list(jobs) == ["observer-hosts"] and jobs["observer-hosts"].get("static_configs"),
          "prometheus.yml: one job, the hosts' static targets")
    cfg = load("prometheus-kubernetes.yml")[0]
    jobs = {j["job_name"]: j for j in cfg.get("scrape_configs") or []}
    check(list(jobs) == ["observer"], "prometheus-kubernetes.yml: one job, the pods'")
    sd = jobs.get("observer") or {}
    names = [n for c in sd.get("kubernetes_sd_configs") or []
             for n in ((c.get("namespaces") or {}).get("names") or [])]
    check(names == ["observer"], "prometheus-kubernetes.yml: the pod job looks in namespace observer")
    check("alerts.yaml" in (cfg.get("rule_files") or []),
          "prometheus-kubernetes.yml: loads alerts.yaml")
    keep = {(tuple(r.get("source_labels") or []), r.get("regex"))
            for r in sd.get("relabel_configs") or [] if r.get("action") == "keep"}
    check(sd.get("kubernetes_sd_configs")
          and (("__meta_kubernetes_pod_label_app_kubernetes_io_name",), "observer") in keep
          and (("__meta_kubernetes_pod_container_port_name",), "metrics") in keep,
          "prometheus-kubernetes.yml: the pod job keeps observer pods on their 'metrics' port")
    promtool = tool("promtool")
    if not promtool:
        return
    # The hosts' file as shipped: it must pass any build's promtool.
    promtool_config(promtool, os.path.join(HERE, "prometheus.yml"), "prometheus.yml")
    # Debian's Prometheus is built without Kubernetes discovery: promtool
    # checks the rest of the pods' file.
    rest = dict(cfg, scrape_configs=[j for j in cfg["scrape_configs"]
                                     if "kubernetes_sd_configs" not in j],
                rule_files=[os.path.join(HERE, r) for r in cfg.get("rule_files") or []])
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump(rest, f)
    try:
        promtool_config(promtool, f.name, "prometheus-kubernetes.yml (but its discovery)")
    finally:
        os.unlink(f.name)


def unit_values(text, key):
    """Every value of `key=` in a unit file's text, split into words."""
    return [w for line in text.splitlines()
            if line.strip().startswith(key + "=")
            for w in line.split("=", 1)[1].split()]


def check_unit():
    unit = os.path.join(HERE, "observer.service")
    text = open(unit, encoding="utf-8").read()
    for key in ("AmbientCapabilities", "CapabilityBoundingSet"):
        check({"CAP_BPF", "CAP_PERFMON"} <= set(unit_values(text, key)),
              f"observer.service: {key} holds CAP_BPF and CAP_PERFMON")
    check("bpf" in unit_values(text, "SystemCallFilter"),
          "observer.service: SystemCallFilter allows bpf")
    check({"AF_INET", "AF_INET6", "AF_UNIX"} <= set(unit_values(text, "RestrictAddressFamilies")),
          "observer.service: RestrictAddressFamilies allows AF_INET, AF_INET6 (serving) and "
          "AF_UNIX (sd_notify)")
    check(unit_values(text, "Type") == ["notify"], "observer.service: Type=notify")
    check(not unit_values(text, "WatchdogSec"),
          "observer.service: no WatchdogSec (the agent does not ping the watchdog)")
    check(unit_values(text, "ExecStart")[1:3] == ["run", "$OBSERVER_OPTIONS"],
          "observer.service: ExecStart runs `observer run $OBSERVER_OPTIONS`")
    # The commented TLS variant: its credentials are the files web-config.yml
    # names beside itself, and OBSERVER_OPTIONS points into their folder.
    tls_lines = [l[1:] for l in text.splitlines() if l.startswith("#LoadCredential=")]
    creds = {l.split("=", 1)[1].split(":", 1)[0] for l in tls_lines}
    check(creds == {"web-config.yml", "tls.crt", "tls.key"},
          "observer.service: commented LoadCredential= lines for web-config.yml, tls.crt, tls.key")
    check(f"--web-config {CREDENTIALS}/web-config.yml" in text,
          f"observer.service: the TLS example's OBSERVER_OPTIONS reads {CREDENTIALS}/web-config.yml")
    analyze_unit(text, "")
    tls_text = "\n".join(l[1:] if l.startswith("#LoadCredential=") else l
                         for l in text.splitlines()) + "\n"
    analyze_unit(tls_text, " (TLS lines uncommented)")


def analyze_unit(text, variant):
    """systemd-analyze verify and security on the unit's `text`."""
    analyze = tool("systemd-analyze")
    if not analyze:
        return
    # verify needs ExecStart's binary to exist: point it at a stand-in.
    with tempfile.TemporaryDirectory() as d:
        stand_in = os.path.join(d, "observer")
        with open(stand_in, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(stand_in, 0o755)
        copy = os.path.join(d, "observer.service")
        with open(copy, "w") as f:
            f.write(text.replace("/usr/local/bin/observer", stand_in))
        r = subprocess.run([analyze, "verify", copy], capture_output=True, text=True)
        msgs = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
        check(r.returncode == 0 and not msgs,
              f"observer.service{variant}: systemd-analyze verify"
              + ("" if not msgs else ": " + " | ".join(msgs)))
        r = subprocess.run([analyze, "security", "--offline=true", "--no-pager", copy],
                           capture_output=True, text=True)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout + r.stderr)
        score = float(m.group(1)) if m else None
        check(score is not None and score <= MAX_EXPOSURE,
              f"observer.service{variant}: systemd-analyze security exposure {score} "
              f"<= {MAX_EXPOSURE}")


def podman_args():
    """The DaemonSet container's security context as podman flags."""
    kinds = by_kind(load("daemonset.yaml"))
    ds = kinds["DaemonSet"][0]
    pod = ds["spec"]["template"]["spec"]
    c = observer_container(ds)
    csc = c["securityContext"]
    args = [f"--user={csc['runAsUser']}:0"]
    caps = csc["capabilities"]
    if caps.get("drop") == ["ALL"]:
        args.append("--cap-drop=all")
    if caps.get("add"):
        args.append("--cap-add=" + ",".join(caps["add"]))
    if csc.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if csc.get("allowPrivilegeEscalation") is False:
        args.append("--security-opt=no-new-privileges")
    if pod.get("hostNetwork"):
        args.append("--network=host")
    if pod.get("hostPID"):
        args.append("--pid=host")
    return args


def seccomp_from(path):
    """A runtime's default seccomp profile (OCI JSON) that lets only
    CAP_SYS_ADMIN call bpf(2) and perf_event_open(2) (podman 4's
    containers-common, older CRI-O), changed as containerd's default profile
    has it: bpf(2) allowed to CAP_BPF, perf_event_open(2) to CAP_PERFMON.
    Both names leave the rule that denies them to everyone without
    CAP_SYS_ADMIN (an allow rule added beside it does not win); every other
    rule stays as it was."""
    with open(path, encoding="utf-8") as f:
        profile = json.load(f)
    gated = {"bpf": "CAP_BPF", "perf_event_open": "CAP_PERFMON"}
    rules = profile.get("syscalls") or []
    for r in rules:
        if r.get("action") == "SCMP_ACT_ERRNO":
            r["names"] = [n for n in r.get("names") or [] if n not in gated]
    profile["syscalls"] = [r for r in rules if r.get("names")]
    for name, cap in gated.items():
        profile["syscalls"].append(
            {"names": [name], "action": "SCMP_ACT_ALLOW", "includes": {"caps": [cap]}})
    return profile


def main():
    global require_tools
    require_tools = "--require-tools" in sys.argv[1:]
    if sys.argv[1:] == ["--podman-args"]:
        print(json.dumps(podman_args()))
        return 0
    if sys.argv[1:2] == ["--seccomp-from"] and len(sys.argv) == 3:
        print(json.dumps(seccomp_from(sys.argv[2]), indent=2))
        return 0
    ds_docs = load("daemonset.yaml")
    sm_docs = load("servicemonitor.yaml")
    for name, docs in (("daemonset.yaml", ds_docs), ("servicemonitor.yaml", sm_docs)):
        for d in docs:
            shape(d, f"{name} {d.get('kind')}")
    ds = check_daemonset(by_kind(ds_docs))
    check_servicemonitor(by_kind(sm_docs), ds)
    check_tls_overlay(ds_docs, sm_docs)
    check_prometheus_yml()
    check_unit()
    check_monitoring(check, tool)
    failed = [w for ok, w in results if not ok]
    # libtest's line shapes, which `cargo xtask test` counts.
    for ok, what in results:
        print(f"test deploy: {what} ... {'ok' if ok else 'FAILED'}")
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
