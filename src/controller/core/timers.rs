//! What the controller does on time. The core reads no clock: it asks for a [`Timer`] at
//! `now + d` ([`super::Effects::timers`]); the shell owns the actual timers and feeds
//! [`super::Input::Timer`] back when one is due, with that instant as `now`.
//!
//! The term's timer is Kafka's auto leader rebalance (`auto.leader.rebalance.enable`): armed
//! when the failover is done, every `leader.imbalance.check.interval.seconds` it checks each
//! broker's share of the partitions it should lead (first assigned replica) but does not, and
//! when that exceeds `leader.imbalance.per.broker.percentage` runs preferred elections for
//! them ([`super::elect_leaders`]); then it arms itself again. The shell's own timer (the
//! controller-election backoff, while this broker is not the controller) shares
//! [`TimerKind`] so one mechanism fires both.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{elect_leaders, Effects, Key};
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;

/// Which timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimerKind {
    /// The periodic leader-imbalance check (this controller term's).
    AutoLeaderRebalance,
    /// Retry the controller election after a failed attempt (the shell's, between terms).
    ControllerElection,
}

impl TimerKind {
    /// Whether the timer belongs to one controller term (and goes when it resigns).
    pub fn term_bound(self) -> bool {
        matches!(self, TimerKind::AutoLeaderRebalance)
    }
}

/// Fire `kind` at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timer {
    pub kind: TimerKind,
    pub at: Instant,
}

/// The auto leader rebalance's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoRebalance {
    /// `leader.imbalance.check.interval.seconds`.
    pub interval: Duration,
    /// `leader.imbalance.per.broker.percentage`.
    pub imbalance_percentage: u32,
}

/// The failover is done: arm the first imbalance check one interval from now.
pub fn failover_done(ctx: &mut ControllerContext, now: Instant, fx: &mut Effects) {
    if let Some(a) = ctx.auto_rebalance {
        fx.timers.push(Timer {
            kind: TimerKind::AutoLeaderRebalance,
            at: now + a.interval,
        });
    }
}

pub fn fired(ctx: &mut ControllerContext, kind: TimerKind, now: Instant, fx: &mut Effects) {
    match kind {
        TimerKind::AutoLeaderRebalance => {
            let Some(a) = ctx.auto_rebalance else { return };
            // Armed again first: a failed check must not stop the next one (Kafka's `finally`).
            fx.timers.push(Timer {
                kind,
                at: now + a.interval,
            });
            let wanted = imbalanced(ctx, a.imbalance_percentage);
            if !wanted.is_empty() {
                let how = elect_leaders::How::preferred(elect_leaders::Trigger::Auto);
                elect_leaders::start(ctx, wanted, how, now, fx);
            }
        }
        TimerKind::ControllerElection => {
            tracing::warn!("controller core: the controller-election timer is the shell's")
        }
    }
}

/// Kafka's `checkAndTriggerAutoLeaderRebalance`: for each live broker not shutting down, if more
/// than `percentage` % of the partitions it should lead (it is their first assigned replica;
/// topics being deleted left out) are led by someone else, those partitions.
pub fn imbalanced(ctx: &ControllerContext, percentage: u32) -> Vec<Key> {
    // Per preferred broker: its partitions and whether it leads each.
    let mut preferred_of: BTreeMap<BrokerId, Vec<(Key, bool)>> = BTreeMap::new();
    for key in ctx.all_partitions() {
        if ctx.is_queued_for_deletion(&key.0) {
            continue;
        }
        let Some(head) = ctx.replicas(&key.0, key.1).first().copied() else {
            continue;
        };
        let led = ctx.leaderships.get(&key).is_some_and(|l| l.leader == Some(head));
        preferred_of.entry(head).or_default().push((key, led));
    }
    let mut wanted = Vec::new();
    for (broker, partitions) in preferred_of {
        if !ctx.is_live(broker) || ctx.shutting_down.contains(&broker) {
            continue;
        }
        let imbalanced: Vec<Key> = partitions
            .iter()
            .filter(|(_, led)| !led)
            .map(|(k, _)| k.clone())
            .collect();
        let ratio = imbalanced.len() as f64 * 100.0 / partitions.len().max(1) as f64;
        if ratio > f64::from(percentage) {
            wanted.extend(imbalanced);
        }
    }
    wanted
}
