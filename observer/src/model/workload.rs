//! The workload a flow belongs to, read from the path of its owner's
//! cgroup v2: the systemd unit, the container and the Kubernetes pod, as
//! the container runtimes and the kubelet name their cgroups.
//!
//! Path forms recognised (the systemd cgroup driver, then cgroupfs):
//!
//! | runtime | cgroup |
//! | --- | --- |
//! | systemd service, scope | `/system.slice/nginx.service`, `/user.slice/user-1000.slice/session-3.scope` |
//! | docker | `/system.slice/docker-<id>.scope`, `/docker/<id>` |
//! | containerd (CRI) | `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope`, `/kubepods/burstable/pod<uid>/<id>` |
//! | CRI-O | `.../crio-<id>.scope` (`crio-conmon-<id>.scope` is its monitor) |
//! | podman | `/machine.slice/libpod-<id>.scope`, `/libpod_parent/libpod-<id>` |
//!
//! `<id>` is the 64-hex-digit container id; `<uid>` the pod UID, with `_`
//! for `-` under systemd. A pod's QoS class is `besteffort` or `burstable`
//! from its parent slice, else `guaranteed`.

use serde::Serialize;

/// Where a flow's owner runs. Every field is empty when unknown; the JSON
/// keys are the field names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Workload {
    /// The cgroup v2 path, from the hierarchy's root (`/system.slice/...`).
    pub cgroup: String,
    /// The systemd unit (`nginx.service`, `docker-<id>.scope`): the
    /// deepest `.service` or `.scope` in the path.
    pub unit: String,
    /// The container id (64 hex digits).
    pub container_id: String,
    /// The Kubernetes pod UID.
    pub pod_uid: String,
    /// The pod's QoS class: `guaranteed`, `burstable` or `besteffort`.
    pub qos_class: String,
}

/// Container id prefixes of the runtimes' scopes (systemd driver).
const SCOPE_PREFIXES: [&str; 5] = [
    "cri-containerd-",
    "crio-",
    "docker-",
    "libpod-",
    "containerd-",
];

fn is_container_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The container id a path component names, if it names one.
fn container_id(component: &str) -> Option<&str> {
    if is_container_id(component) {
        return Some(component);
    }
    let stem = component.strip_suffix(".scope").unwrap_or(component);
    SCOPE_PREFIXES
        .iter()
        .find_map(|p| stem.strip_prefix(p))
        .filter(|id| is_container_id(id))
}

/// The pod UID a path component names (`pod<uid>`, or
/// `kubepods-<qos>-pod<uid>.slice` with `_` for `-`), if it names one.
fn pod_uid(component: &str) -> Option<String> {
    let stem = component.strip_suffix(".slice").unwrap_or(component);
    let at = stem.rfind("pod")?;
    let uid = &stem[at + 3..];
    let ok = uid.len() == 36
        && uid
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b'-' || b == b'_');
    ok.then(|| uid.replace('_', "-"))
}

impl Workload {
    /// The workload of cgroup `path` (from the hierarchy's root).
    pub fn from_path(path: &str) -> Workload {
        let mut w = Workload {
            cgroup: path.to_string(),
            ..Workload::default()
        };
        for c in path.split('/').filter(|c| !c.is_empty()) {
            if c.ends_with(".service") || c.ends_with(".scope") {
                w.unit = c.to_string();
            }
            if let Some(id) = container_id(c) {
                // A CRI-O monitor's scope is not the container.
                if !c.starts_with("crio-conmon-") {
                    w.container_id = id.to_string();
                }
            }
            if let Some(uid) = pod_uid(c) {
                w.pod_uid = uid;
            }
        }
        if !w.pod_uid.is_empty() {
            w.qos_class = if path.contains("besteffort") {
                "besteffort"
            } else if path.contains("burstable") {
                "burstable"
            } else {
                "guaranteed"
            }
            .to_string();
        }
        w
    }

    /// A short name for a column or a label: `pod:<uid>`, else
    /// `container:<first 12 digits of the id>`, else the unit, else the
    /// cgroup path; empty when nothing is known.
    pub fn name(&self) -> String {
        if !self.pod_uid.is_empty() {
            format!("pod:{}", self.pod_uid)
        } else if !self.container_id.is_empty() {
            format!("container:{}", &self.container_id[..12])
        } else if !self.unit.is_empty() {
            self.unit.clone()
        } else {
            self.cgroup.clone()
        }
    }
}

/// A flow's workload as the flow carries it: shared between the flows of
/// one cgroup (resolved once per cgroup), `None` until resolved. It
/// serialises as the [`Workload`]'s fields (empty strings when unknown).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedWorkload(pub Option<std::sync::Arc<Workload>>);

/// What an unresolved workload serialises as.
static UNKNOWN: Workload = Workload {
    cgroup: String::new(),
    unit: String::new(),
    container_id: String::new(),
    pod_uid: String::new(),
    qos_class: String::new(),
};

impl SharedWorkload {
    /// The workload, or one with every field empty.
    pub fn get(&self) -> &Workload {
        self.0.as_deref().unwrap_or(&UNKNOWN)
    }

    /// Whether it has been resolved.
    pub fn is_resolved(&self) -> bool {
        self.0.is_some()
    }
}

impl Serialize for SharedWorkload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f4c5d6e7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d";
    const UID: &str = "5ab0c1d2-e3f4-4a5b-8c6d-7e8f9a0b1c2d";

    #[test]
    fn systemd_units() {
        let w = Workload::from_path("/system.slice/nginx.service");
        assert_eq!(
            (w.unit.as_str(), w.name()),
            ("nginx.service", "nginx.service".into())
        );
        assert!(w.container_id.is_empty() && w.pod_uid.is_empty());
        let s = Workload::from_path("/user.slice/user-1000.slice/session-3.scope");
        assert_eq!(s.unit, "session-3.scope");
        assert_eq!(Workload::from_path("/").name(), "/");
    }

    #[test]
    fn containers_of_every_runtime() {
        for path in [
            format!("/system.slice/docker-{ID}.scope"),
            format!("/docker/{ID}"),
            format!("/machine.slice/libpod-{ID}.scope"),
            format!("/libpod_parent/libpod-{ID}"),
            format!("/system.slice/crio-{ID}.scope"),
        ] {
            let w = Workload::from_path(&path);
            assert_eq!(w.container_id, ID, "{path}");
            assert_eq!(w.name(), format!("container:{}", &ID[..12]), "{path}");
            assert!(w.pod_uid.is_empty(), "{path}");
        }
        // CRI-O's monitor process is not the container.
        let conmon = Workload::from_path(&format!("/machine.slice/crio-conmon-{ID}.scope"));
        assert!(conmon.container_id.is_empty());
    }

    #[test]
    fn pods_with_their_qos_class() {
        let u = UID.replace('-', "_");
        let systemd = Workload::from_path(&format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope"
        ));
        assert_eq!(systemd.pod_uid, UID);
        assert_eq!(systemd.container_id, ID);
        assert_eq!(systemd.qos_class, "burstable");
        assert_eq!(systemd.unit, format!("cri-containerd-{ID}.scope"));
        assert_eq!(systemd.name(), format!("pod:{UID}"));
        let cgroupfs = Workload::from_path(&format!("/kubepods/besteffort/pod{UID}/{ID}"));
        assert_eq!(
            (cgroupfs.pod_uid.as_str(), cgroupfs.qos_class.as_str()),
            (UID, "besteffort")
        );
        let guaranteed = Workload::from_path(&format!(
            "/kubepods.slice/kubepods-pod{u}.slice/crio-{ID}.scope"
        ));
        assert_eq!(guaranteed.qos_class, "guaranteed");
        // Not a pod: a word that merely contains "pod".
        assert!(
            Workload::from_path("/system.slice/podman.service")
                .pod_uid
                .is_empty()
        );
    }
}
