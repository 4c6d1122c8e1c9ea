//! The veth pair of a plain veth path ([`crate::PathConfig::veth`]): the two
//! namespaces joined directly, the kernel forwarding with no model.

use crate::error::Result;
use crate::netns::{self, Namespace};
use crate::tun::TUN_NAME;

/// Creates a veth pair with one end, named [`TUN_NAME`], in each of `a`
/// and `b` (created inside `a`, its peer placed straight into `b`, so it
/// never appears in the calling namespace). Deleting either namespace
/// deletes the pair.
pub(crate) fn create_pair(a: &Namespace, b: &Namespace) -> Result<()> {
    netns::ip(&[
        "-n",
        a.name(),
        "link",
        "add",
        TUN_NAME,
        "type",
        "veth",
        "peer",
        "name",
        TUN_NAME,
        "netns",
        b.name(),
    ])
    .map(drop)
}
