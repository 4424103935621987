//! The soak's decisions, apart from the processes it drives (tests/soak.rs): which faults exist,
//! the seeded draw of the next fault, the unavailability window of one fault (the longest gap
//! between acknowledgements around it), the consumer group's anomalies, and the summary table.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::reliability::{table, Read};
use super::Rng;

/// A fault the soak can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    LeaderTerm,
    LeaderKill,
    LeaderPause,
    ControllerTerm,
    ControllerKill,
    ControllerPause,
    /// SIGSTOP a follower below the session timeout and the replica lag time.
    FollowerPauseShort,
    /// SIGSTOP ZooKeeper below the session timeout.
    ZooKeeperPauseShort,
    /// A follower cut from the other brokers (ZooKeeper still reachable) until it leaves the ISR.
    FollowerCut,
    /// The leader cut from every broker, ZooKeeper and the clients until it is replaced.
    LeaderCut,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::LeaderTerm,
        Kind::LeaderKill,
        Kind::LeaderPause,
        Kind::ControllerTerm,
        Kind::ControllerKill,
        Kind::ControllerPause,
        Kind::FollowerPauseShort,
        Kind::ZooKeeperPauseShort,
        Kind::FollowerCut,
        Kind::LeaderCut,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::LeaderTerm => "leader SIGTERM",
            Kind::LeaderKill => "leader SIGKILL",
            Kind::LeaderPause => "leader SIGSTOP past session",
            Kind::ControllerTerm => "controller SIGTERM",
            Kind::ControllerKill => "controller SIGKILL",
            Kind::ControllerPause => "controller SIGSTOP past session",
            Kind::FollowerPauseShort => "follower SIGSTOP short",
            Kind::ZooKeeperPauseShort => "ZooKeeper SIGSTOP short",
            Kind::FollowerCut => "netns: follower cut from brokers",
            Kind::LeaderCut => "netns: leader isolated",
        }
    }

    /// Needs the network lab (root and `ip netns`).
    pub fn needs_lab(self) -> bool {
        matches!(self, Kind::FollowerCut | Kind::LeaderCut)
    }

    /// The kinds that can run here.
    pub fn available(lab: bool) -> Vec<Kind> {
        Kind::ALL.into_iter().filter(|k| lab || !k.needs_lab()).collect()
    }
}

/// One drawn fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    pub kind: Kind,
    /// Which of the soak's topics chooses the leader or follower (0 or 1).
    pub topic: usize,
    /// How long a short pause lasts, or how long a cut follower stays cut after leaving the ISR.
    pub hold: Duration,
    /// The quiet time after recovery, before the next fault.
    pub rest: Duration,
}

/// The seeded generator for a soak seed (xorshift needs a non-zero state).
pub fn rng(seed: u64) -> Rng {
    Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
}

/// The next fault from `rng`, among `kinds`.
pub fn plan(rng: &mut Rng, kinds: &[Kind]) -> Planned {
    let kind = kinds[rng.index(kinds.len())];
    let topic = rng.index(2);
    let hold = match kind {
        // Below the 3 s session (and ZooKeeper's client read timeout, 2/3 of it).
        Kind::FollowerPauseShort | Kind::ZooKeeperPauseShort => 500 + rng.below(1_000),
        Kind::FollowerCut => 1_000 + rng.below(4_000),
        _ => 0,
    };
    Planned {
        kind,
        topic,
        hold: Duration::from_millis(hold),
        rest: Duration::from_millis(1_000 + rng.below(3_000)),
    }
}

/// The longest time without an acknowledgement around a fault from `from_ms` to `to_ms`
/// (ms since the epoch): between the last acknowledgement before `from_ms` (or `from_ms` itself)
/// and each later one up to `to_ms`, and from the last of those to `to_ms`. `times` sorted.
pub fn unavailability(times: &[i64], from_ms: i64, to_ms: i64) -> Duration {
    let before = times.iter().rev().find(|t| **t <= from_ms).copied().unwrap_or(from_ms);
    let mut last = before;
    let mut longest = 0;
    for t in times.iter().filter(|t| **t > from_ms && **t <= to_ms) {
        longest = longest.max(t - last);
        last = *t;
    }
    longest = longest.max(to_ms - last);
    Duration::from_millis(longest.max(0) as u64)
}

/// The median and the maximum of `d` (zero when empty).
pub fn median_max(d: &[Duration]) -> (Duration, Duration) {
    let mut d = d.to_vec();
    d.sort();
    match d.len() {
        0 => (Duration::ZERO, Duration::ZERO),
        n => (d[(n - 1) / 2], d[n - 1]),
    }
}

/// What the consumer group's members processed, judged against the final read of the topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupAnomalies {
    /// Records processed, counting redeliveries.
    pub processed: usize,
    /// Offsets processed more than once (at-least-once after a rebalance: not an anomaly).
    pub redelivered: usize,
    /// Offsets of the final read below the highest processed offset that no member processed.
    pub skipped: usize,
    /// Processed (offset, value) that the final read does not hold (a read above the high
    /// watermark, or of a truncated record).
    pub mismatched: usize,
    /// The members did not reach the end of the topic.
    pub behind: bool,
}

impl GroupAnomalies {
    pub fn anomalies(&self) -> usize {
        self.skipped + self.mismatched + usize::from(self.behind)
    }
}

/// The group's view of one single-partition topic: `processed` (offset, value) by every member,
/// `reads` the final read from offset 0.
pub fn group_check(processed: &[(i64, i64)], reads: &[Read]) -> GroupAnomalies {
    let at: HashMap<i64, i64> = reads.iter().map(|r| (r.offset, r.value)).collect();
    let mut times: BTreeMap<i64, usize> = BTreeMap::new();
    let mut mismatched = 0;
    for (offset, value) in processed {
        *times.entry(*offset).or_default() += 1;
        if at.get(offset) != Some(value) {
            mismatched += 1;
        }
    }
    let top = times.keys().next_back().copied().unwrap_or(-1);
    let skipped = reads
        .iter()
        .filter(|r| r.offset <= top && !times.contains_key(&r.offset))
        .count();
    let end = reads.iter().map(|r| r.offset).max().unwrap_or(-1);
    GroupAnomalies {
        processed: processed.len(),
        redelivered: times.values().filter(|n| **n > 1).count(),
        skipped,
        mismatched,
        behind: top < end,
    }
}

/// One fault as it ran: its kind and its unavailability window.
#[derive(Debug, Clone, Copy)]
pub struct Ran {
    pub kind: Kind,
    pub unavailable: Duration,
}

/// The faults table: per kind, how many ran and their unavailability median and maximum.
pub fn fault_table(ran: &[Ran]) -> String {
    let mut rows = vec!["fault\tcount\tunavailable median\tunavailable max".to_string()];
    let mut by_kind: BTreeMap<Kind, Vec<Duration>> = BTreeMap::new();
    for r in ran {
        by_kind.entry(r.kind).or_default().push(r.unavailable);
    }
    for (kind, windows) in &by_kind {
        let (median, max) = median_max(windows);
        rows.push(format!(
            "{}\t{}\t{:.1}s\t{:.1}s",
            kind.name(),
            windows.len(),
            median.as_secs_f64(),
            max.as_secs_f64()
        ));
    }
    let all: Vec<Duration> = ran.iter().map(|r| r.unavailable).collect();
    let (median, max) = median_max(&all);
    rows.push(format!(
        "all\t{}\t{:.1}s\t{:.1}s",
        ran.len(),
        median.as_secs_f64(),
        max.as_secs_f64()
    ));
    table(&rows)
}
