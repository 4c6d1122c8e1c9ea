//! A run's figures as a Markdown block, and its place in docs/accuracy.md
//! (one block per seed, between markers the harness rewrites).

use std::fmt::Write as _;

use crate::score::{CALIBRATED_MIN, CALIBRATED_WITHIN, Report, Tally, calibrated};

fn pct(t: &Tally) -> String {
    if t.judged == 0 {
        "-".to_string()
    } else {
        format!("{}/{} ({:.0}%)", t.right, t.judged, 100.0 * t.share())
    }
}

/// The figures of `r` as Markdown (a level-3 heading per seed).
pub fn markdown(r: &Report) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "### Seed {} (commit {})\n\n{} situations, {} clear, {} unscored.\n",
        r.seed, r.commit, r.situations, r.clear, r.unscored
    );
    let _ = writeln!(m, "| ends | sender | receiver |\n| --- | --- | --- |");
    let _ = writeln!(
        m,
        "| clear | {} | {} |",
        pct(&r.ends.sender),
        pct(&r.ends.receiver)
    );
    for (cc, e) in &r.by_cc {
        let _ = writeln!(
            m,
            "| clear, {cc} | {} | {} |",
            pct(&e.sender),
            pct(&e.receiver)
        );
    }
    let _ = writeln!(
        m,
        "| matched | {} | {} |\n",
        pct(&r.matched.sender),
        pct(&r.matched.receiver)
    );
    let p = &r.pairs;
    let share = |right, judged| pct(&Tally { right, judged });
    let _ = writeln!(
        m,
        "Matched limits: {} of matched ends name both (verdict and `also`; \
         {} give an `also`); {} of clear ends give an `also`; {} of the \
         `also`s name one of the two tightest limits.\n",
        share(p.named_both, p.matched_ends),
        share(p.matched_with_also, p.matched_ends),
        share(p.clear_with_also, p.clear_ends),
        share(p.alsos_in_top_two, p.alsos),
    );
    let _ = writeln!(
        m,
        "| kind | situations | unscored | clear ends right |\n| --- | --- | --- | --- |"
    );
    for (k, s) in &r.kinds {
        let t = Tally {
            right: s.right,
            judged: s.n,
        };
        let _ = writeln!(
            m,
            "| {k} | {} | {} | {} |",
            s.situations,
            s.unscored,
            pct(&t)
        );
    }
    let _ = writeln!(
        m,
        "\n| confidence | verdicts | mean confidence | right |\n| --- | --- | --- | --- |"
    );
    for b in &r.calibration {
        let _ = writeln!(
            m,
            "| {:.1}-{:.1} | {} | {:.2} | {:.2} |",
            b.low, b.high, b.n, b.mean_confidence, b.right
        );
    }
    let _ = writeln!(
        m,
        "\nCalibration {} (every bin of {CALIBRATED_MIN} or more verdicts has its mean \
         confidence within {CALIBRATED_WITHIN} of its share right).",
        if calibrated(&r.calibration) {
            "holds"
        } else {
            "fails"
        },
    );
    let _ = writeln!(
        m,
        "\n| rule | ends | mean confidence | right |\n| --- | --- | --- | --- |"
    );
    for (rule, s) in &r.rules {
        let _ = writeln!(
            m,
            "| {rule} | {} | {:.2} | {:.2} |",
            s.n,
            s.mean_confidence,
            f64::from(s.right) / f64::from(s.n.max(1))
        );
    }
    let _ = writeln!(m, "\nBrier score {:.3}.", r.brier);
    let _ = writeln!(
        m,
        "Counterfactual: {} of {} sampled situations as predicted. What-if: {} of {} within 30%.\n",
        r.counterfactual.as_predicted,
        r.counterfactual.checked,
        r.what_if.within_30pct,
        r.what_if.checked
    );
    if !r.counterfactual.failed.is_empty() {
        let _ = writeln!(
            m,
            "Not as predicted (unscored):\n\n| situation | ceilings (Mbit/s) | Mbit/s | reruns (x the rate) |\n| --- | --- | --- | --- |"
        );
        for f in &r.counterfactual.failed {
            let reruns: Vec<String> = f
                .reruns
                .iter()
                .map(|(change, x)| format!("{change}: {x:.2}x"))
                .collect();
            let _ = writeln!(
                m,
                "| {} #{} | {} | {:.2} | {} |",
                f.what,
                f.index,
                f.ceilings,
                f.bps / 1e6,
                reruns.join("; ")
            );
        }
        let _ = writeln!(m);
    }
    for (key, rows) in &r.confusion {
        let _ = writeln!(m, "Confusion, {key} (expected: given x count): ");
        for (expected, given) in rows {
            let cells: Vec<String> = given.iter().map(|(g, n)| format!("{g} x{n}")).collect();
            let _ = writeln!(m, "- {expected}: {}", cells.join(", "));
        }
        let _ = writeln!(m);
    }
    if !r.worst.is_empty() {
        let _ = writeln!(
            m,
            "Worst misses:\n\n| situation | end | expected | given | confidence | ceilings (Mbit/s) |\n| --- | --- | --- | --- | --- | --- |"
        );
        for j in &r.worst {
            let _ = writeln!(
                m,
                "| {} #{} | {:?} | {} | {} ({}) | {:.2} | {} |",
                j.what,
                j.index,
                j.end,
                j.expected.join(" or "),
                j.given,
                j.rule,
                j.confidence,
                j.ceilings
            );
        }
    }
    m
}

/// The markers around seed `seed`'s block.
fn markers(seed: u64) -> (String, String) {
    (
        format!("<!-- accuracy seed {seed} begin -->"),
        format!("<!-- accuracy seed {seed} end -->"),
    )
}

/// `doc` with seed `seed`'s block replaced by `block`, or appended where
/// it has none yet.
pub fn splice(doc: &str, seed: u64, block: &str) -> String {
    let (begin, end) = markers(seed);
    let fresh = format!("{begin}\n{}{end}", block);
    match (doc.find(&begin), doc.find(&end)) {
        (Some(b), Some(e)) if e > b => format!("{}{fresh}{}", &doc[..b], &doc[e + end.len()..]),
        _ => format!("{}\n{fresh}\n", doc.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_replaces_one_seed_and_keeps_the_rest() {
        let doc = splice("# A\n", 1, "one\n");
        let doc = splice(&doc, 2, "two\n");
        let doc = splice(&doc, 1, "uno\n");
        assert_eq!(
            doc,
            "# A\n<!-- accuracy seed 1 begin -->\nuno\n<!-- accuracy seed 1 end -->\n\
             <!-- accuracy seed 2 begin -->\ntwo\n<!-- accuracy seed 2 end -->\n"
        );
    }
}
