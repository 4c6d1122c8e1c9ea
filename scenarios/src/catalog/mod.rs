//! The scenarios: each one imposes a known constraint on real kernel TCP
//! across an emulated path, so observer's verdict has a ground truth.
//! Names are stable: scripts and dashboards use them. The sender-side
//! scenarios are in `sender`, the downloads judged from the receiver in
//! `receiver`, several flows to one peer judged as a group in `peers`;
//! what a scenario is, with the criteria a run is judged
//! by, is in `model`, the pieces the lists are written with in `parts`.

mod model;
mod parts;
mod peers;
mod receiver;
mod sender;

pub use model::{
    EMULATOR_TOLERANCE, Expect, GroupExpect, HttpClient, HttpServer, IDLE_LINK_USE, MIN_SHARE,
    RECEIVER_VERDICTS, RX_MIN_ACCURACY, RX_MIN_SAMPLES, SETTLE_S, Scenario, Traffic, View,
};

/// Every scenario, in running order: the sender side, the receiver, then
/// the groups of flows to one peer.
pub fn all() -> Vec<Scenario> {
    let mut v = sender::all();
    v.extend(receiver::all());
    v.extend(peers::all());
    for s in &mut v {
        s.path.seed = 7;
    }
    v
}

#[cfg(test)]
mod tests;
