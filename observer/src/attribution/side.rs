//! Which end of a flow a verdict is made from: a leaf, so the verdict and
//! the table of measured confidences (`calibration`) can both name it.

use serde::Serialize;

/// Which end of the flow the verdict was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// This host sends the data.
    Sender,
    /// This host receives the data.
    Receiver,
}
