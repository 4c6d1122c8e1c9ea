//! Column widths that hold still. top widens ADVICE, VERDICT and NETNS to
//! their widest cell on screen; measured afresh at each frame, the
//! columns after them jumped left and right as flows came and went and
//! advice changed, between two refreshes a second apart. [`Steady`]
//! keeps each measure at its most over the last [`FRAMES`] frames, so a
//! column narrows only once nothing has needed its width for that long.

use std::collections::VecDeque;

/// How many frames a width is kept for after the cell that needed it
/// went: about ten seconds at the default interval.
pub const FRAMES: usize = 10;

/// The widest cells of the last [`FRAMES`] frames.
#[derive(Clone, Debug, Default)]
pub struct Steady {
    recent: VecDeque<Widest>,
}

/// The widest cells of one frame: ADVICE, VERDICT and NETNS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Widest {
    /// The widest ADVICE text.
    pub advice: u16,
    /// The widest VERDICT cell.
    pub verdict: u16,
    /// The widest `ip netns` name (0: none).
    pub netns: u16,
}

impl Steady {
    /// Takes this frame's widest cells; returns the widest of the last
    /// [`FRAMES`] frames, this one included.
    pub fn hold(&mut self, now: Widest) -> Widest {
        if self.recent.len() == FRAMES {
            self.recent.pop_front();
        }
        self.recent.push_back(now);
        self.recent.iter().fold(Widest::default(), |a, w| Widest {
            advice: a.advice.max(w.advice),
            verdict: a.verdict.max(w.verdict),
            netns: a.netns.max(w.netns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_width_holds_for_a_few_frames_then_follows_the_cells() {
        let mut s = Steady::default();
        let wide = Widest {
            advice: 30,
            verdict: 20,
            netns: 0,
        };
        let narrow = Widest {
            advice: 12,
            verdict: 4,
            netns: 0,
        };
        assert_eq!(s.hold(wide), wide);
        // The wide cell went: its width stays while it is recent.
        for _ in 1..FRAMES {
            assert_eq!(s.hold(narrow), wide);
        }
        assert_eq!(s.hold(narrow), narrow);
        // A wider cell widens at once.
        let netns = Widest { netns: 9, ..narrow };
        assert_eq!(s.hold(netns), netns);
    }
}
