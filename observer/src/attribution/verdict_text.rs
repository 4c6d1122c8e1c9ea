//! Each verdict in words: what it means and what to do about it. One
//! table for every reader: docs/attribution.md's table of verdicts is
//! [`Verdict::markdown_table`] (a test holds them equal) and
//! observer-flows(1)'s VERDICTS section is made from the same texts.

use super::verdict::Verdict;

impl Verdict {
    /// What the verdict means, in plain words (Markdown: names of
    /// settings and fields in backticks).
    pub const fn meaning(self) -> &'static str {
        match self {
            Verdict::ReceiveWindow => {
                "The receiver's advertised window is full: the sender has sent all the peer \
                 allows and waits for it to open. Seen from the receiver, this host's own \
                 advertised window is what holds the sender back."
            }
            Verdict::SendBuffer => {
                "The sender's socket buffer is full: the application could give more, but the \
                 kernel will not queue it (SO_SNDBUF or `net.ipv4.tcp_wmem` too small for this \
                 bandwidth-delay product)."
            }
            Verdict::Application => {
                "The sending application does not supply data fast enough: the connection is \
                 idle much of the time, or the delivery-rate samples are application-limited \
                 while the windows allow far more."
            }
            Verdict::CongestionWindow => {
                "The sender's congestion window binds while the path still has room (no \
                 standing queue: srtt is near min_rtt): slow start, recovery after a loss, a \
                 small or clamped cwnd, loss-sensitive congestion control on a lossy path. \
                 From the receiving end: data arrives in bursts or with pauses, below the rate \
                 the path has shown, and out-of-order arrivals show the loss that holds the \
                 sender's window down."
            }
            Verdict::Path => {
                "The bottleneck link is full: the sender is window- or pacing-bound and a \
                 queue stands in the path (srtt well above min_rtt), or it is busy without any \
                 window limit, sending at the rate its congestion control measures for the \
                 path (BBR)."
            }
            Verdict::ReceiverApplication => {
                "From the receiving end: this host's application does not read fast enough. \
                 Unread bytes fill the receive buffer and the advertised window shrinks or \
                 closes."
            }
            Verdict::Sender => {
                "From the receiving end: the sending host itself holds the flow back (its \
                 application, its send buffer or a rate limit): data arrives in bursts or with \
                 pauses while this host's window is open, and nothing on the path is lost."
            }
            Verdict::Unknown => {
                "Too little to say: fewer than `min_bytes` (32 KiB) moved, or the interval \
                 spans fewer than 4 round trips."
            }
        }
    }

    /// What to do about it, in one or two sentences (Markdown, as
    /// [`Verdict::meaning`]).
    pub const fn remedy(self) -> &'static str {
        match self {
            Verdict::ReceiveWindow => {
                "More window would go faster: a larger receive buffer at the receiver (this \
                 host's `net.ipv4.tcp_rmem` or SO_RCVBUF when judged from here), a larger \
                 window-scale shift. The what-if says how large."
            }
            Verdict::SendBuffer => {
                "Raise SO_SNDBUF or `net.ipv4.tcp_wmem` to the bandwidth-delay product; the \
                 what-if says how large."
            }
            Verdict::Application => {
                "The network is not the problem: look at what the sending application waits \
                 for."
            }
            Verdict::CongestionWindow => {
                "Find what holds the window down: the loss behind it (RETRANS, out-of-order \
                 arrivals) or a clamp. A larger receive window will not help."
            }
            Verdict::Path => {
                "More window will not help; more capacity (or fewer competing flows) would."
            }
            Verdict::ReceiverApplication => {
                "A bigger buffer would not help, a faster reader would: look at the reading \
                 process on this host."
            }
            Verdict::Sender => "Look at the server: nothing on this host or the path holds it.",
            Verdict::Unknown => {
                "Nothing yet: wait for the flow to move more data, or collect for longer."
            }
        }
    }

    /// The Markdown table of every verdict, its meaning and its remedy,
    /// as docs/attribution.md's "Verdicts" section holds it.
    pub fn markdown_table() -> String {
        let mut t =
            String::from("| verdict | in plain words | what to do |\n| --- | --- | --- |\n");
        for v in Verdict::ALL {
            t.push_str(&format!(
                "| `{}` | {} | {} |\n",
                v.name(),
                v.meaning(),
                v.remedy()
            ));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/attribution.md's table of verdicts is the one the code makes,
    /// so the manual page and the document say the same.
    #[test]
    fn the_documented_verdicts_are_the_codes() {
        let doc = include_str!("../../../docs/attribution.md");
        let table: String = doc
            .split_once("\n## Verdicts\n")
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            table,
            Verdict::markdown_table(),
            "docs/attribution.md's \"## Verdicts\" table must be Verdict::markdown_table()"
        );
    }

    #[test]
    fn every_verdict_has_words() {
        for v in Verdict::ALL {
            assert!(v.meaning().ends_with('.'), "{v}");
            assert!(v.remedy().ends_with('.'), "{v}");
            assert!(
                !v.meaning().contains('|') && !v.remedy().contains('|'),
                "{v}"
            );
        }
    }
}
