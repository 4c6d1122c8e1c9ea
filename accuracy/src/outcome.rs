//! What one run of a situation gave: each end's verdict, the rate, and
//! the counterfactual reruns. One line of the run's checkpoint file.

use observer::attribution::Verdict;
use serde::{Deserialize, Serialize};

use crate::space::Situation;

/// One end's judgement of the situation's data flow(s), over their life,
/// as `observer flows` gives it at the close.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndVerdict {
    /// The verdict (the most common over the data flows where there are
    /// several: short transfers).
    pub verdict: String,
    /// Its confidence (0..=1; the mean over the flows that gave it).
    pub confidence: f64,
    /// The rule that decided it.
    pub rule: String,
    /// The explanation, with its arithmetic.
    pub explanation: String,
    /// The window the what-if asks for (bytes), where it gives one and
    /// says a larger window would help.
    pub what_if_window: Option<u64>,
    /// The rate that window promises (bits/s): its target, capped by the
    /// path the what-if saw.
    pub what_if_bps: Option<f64>,
    /// The window the what-if starts from (bytes): the binding window now.
    #[serde(default)]
    pub what_if_from: Option<u64>,
    /// The second limit observer named beside the verdict (`also`), of
    /// the flow that gave the explanation.
    #[serde(default)]
    pub also: Option<String>,
    /// Data flows judged.
    pub flows: u32,
}

impl EndVerdict {
    /// The verdict as the engine's type; `None` for a name it does not know.
    pub fn parsed(&self) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == self.verdict)
    }
}

/// The rate of one run and what was changed for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rerun {
    /// What was changed ("link x4", "tcp_rmem max 1048576"...).
    pub change: String,
    /// The goodput the receiver measured (bits/s).
    pub bps: f64,
}

/// Everything one situation gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The situation as drawn.
    pub situation: Situation,
    /// The goodput the receiving application measured (bits/s).
    pub bps: f64,
    /// The sending end's judgement, where a data flow was seen there.
    pub sender: Option<EndVerdict>,
    /// The receiving end's judgement.
    pub receiver: Option<EndVerdict>,
    /// Why the run could not be scored, where it could not.
    pub error: Option<String>,
    /// The tightest limit relaxed, then the second (counterfactual sample only).
    pub counterfactual: Vec<Rerun>,
    /// The what-if's setting applied, where a verdict gave a window what-if.
    pub what_if: Option<Rerun>,
}
