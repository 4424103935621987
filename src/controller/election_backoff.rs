//! Backing off controller elections that keep failing, and recognising why they fail when the
//! ZooKeeper tree is gone.
//!
//! A failed failover resigns and deletes `/controller` (Kafka's `triggerControllerMove`), which
//! fires every broker's `/controller` watch; without a pause the brokers re-elect each other in
//! a tight loop whenever failover cannot succeed — e.g. when the tree under the chroot was
//! deleted (`deleteall`), hundreds of elections a second. [`ElectionBackoff`] spaces a broker's
//! attempts after its own failures (100 ms doubling to 5 s, reset by a successful failover);
//! [`missing_tree_path`] tells a deleted tree from other failures so it is reported once.
//! `Controller::elect_with_backoff` applies both to every election request.
//!
//! kastle does not re-create the tree while running: like Kafka, it creates the persistent
//! paths only at start-up. A wiped tree lost every topic's assignment, and re-creating an empty
//! one would let the controller treat the brokers' logs as strays. The brokers wait (retrying
//! with the backoff) until the tree is restored or they are restarted.

use std::time::{Duration, Instant};

use super::controller::Controller;
use super::store::ControllerStore;
use super::zk_ops::ControllerZkError;
use crate::zk::paths;
use crate::zk::store::ZkError;

/// The first pause after a failure.
pub const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// One broker's election attempts after failures. Pure: the caller passes `now`.
#[derive(Debug, Clone)]
pub struct ElectionBackoff {
    /// The pause the next failure imposes.
    next_delay: Duration,
    /// No attempt before this (set by a failure).
    not_before: Option<Instant>,
    /// A deferred attempt is already scheduled for `not_before`.
    scheduled: bool,
}

/// What to do with a request to elect (a `/controller` change, start-up, a new session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Try now.
    Now,
    /// Too soon after a failure: schedule one attempt at this instant.
    ScheduleAt(Instant),
    /// Too soon, and an attempt is already scheduled.
    AlreadyScheduled,
}

impl Default for ElectionBackoff {
    fn default() -> Self {
        ElectionBackoff {
            next_delay: MIN_BACKOFF,
            not_before: None,
            scheduled: false,
        }
    }
}

impl ElectionBackoff {
    pub fn on_request(&mut self, now: Instant) -> Attempt {
        match self.not_before {
            Some(t) if now < t => {
                if self.scheduled {
                    Attempt::AlreadyScheduled
                } else {
                    self.scheduled = true;
                    Attempt::ScheduleAt(t)
                }
            }
            _ => {
                self.scheduled = false;
                Attempt::Now
            }
        }
    }

    /// The attempt failed: pause before the next one, twice as long as the last pause.
    pub fn failed(&mut self, now: Instant) {
        self.not_before = Some(now + self.next_delay);
        self.next_delay = (self.next_delay * 2).min(MAX_BACKOFF);
    }

    /// The attempt succeeded (or another broker is the controller): no pause.
    pub fn succeeded(&mut self) {
        *self = ElectionBackoff {
            scheduled: self.scheduled,
            ..ElectionBackoff::default()
        };
    }
}

/// The persistent path whose absence made `err` happen, when `err` means the tree kastle
/// creates at start-up is gone: a missing top-level path (`/brokers/ids`, ...), or
/// `/controller_epoch` that cannot be created because the chroot itself is gone.
pub fn missing_tree_path(err: &ControllerZkError) -> Option<&str> {
    let ControllerZkError::Zk(e) = err else {
        return None;
    };
    match e.root() {
        ZkError::NoNode { path }
            if paths::PERSISTENT_PATHS.contains(&path.as_str())
                || path == paths::CONTROLLER_EPOCH
                || path == "/brokers" =>
        {
            Some(path)
        }
        _ => None,
    }
}

impl<S: ControllerStore> Controller<S> {
    /// `maybe_elect`, unless too soon after this broker's last failed attempt (then one attempt
    /// is scheduled for later). A failure because the ZooKeeper tree is gone is reported once.
    pub(super) async fn elect_with_backoff(&mut self) -> Result<(), ControllerZkError> {
        if self.active.is_none() {
            match self.backoff.on_request(Instant::now()) {
                Attempt::Now => {}
                Attempt::ScheduleAt(at) => {
                    let kind = crate::controller::core::timers::TimerKind::ControllerElection;
                    self.timers
                        .arm(crate::controller::core::timers::Timer { kind, at }, &self.events);
                    return Ok(());
                }
                Attempt::AlreadyScheduled => return Ok(()),
            }
        }
        let result = self.maybe_elect().await;
        match &result {
            Ok(()) if self.active.is_some() => {
                self.backoff.succeeded();
                if std::mem::take(&mut self.tree_missing_logged) {
                    tracing::info!("the ZooKeeper tree is back: this broker is the controller again");
                }
            }
            Ok(()) => {}
            Err(e) => {
                self.backoff.failed(Instant::now());
                if let Some(path) = missing_tree_path(e) {
                    if !std::mem::replace(&mut self.tree_missing_logged, true) {
                        let chroot = self.zk.chroot();
                        tracing::error!(
                            "ZooKeeper tree under {chroot} is missing {path}; was it deleted? kastle does not \
                             re-create it while running (like Kafka, it creates the persistent paths only at \
                             start-up): restore the tree or restart the brokers. Until then controller \
                             elections are retried every few seconds"
                        );
                    } else {
                        tracing::debug!(path, "controller election failed: the ZooKeeper tree is still missing");
                    }
                    return Ok(());
                }
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_attempt_is_immediate_and_failures_double_the_pause_up_to_the_cap() {
        let t0 = Instant::now();
        let mut b = ElectionBackoff::default();
        assert_eq!(b.on_request(t0), Attempt::Now);
        let mut now = t0;
        let mut pauses = Vec::new();
        for _ in 0..8 {
            b.failed(now);
            let Attempt::ScheduleAt(at) = b.on_request(now) else {
                panic!("a request right after a failure waits");
            };
            assert_eq!(
                b.on_request(now),
                Attempt::AlreadyScheduled,
                "one scheduled retry at a time"
            );
            pauses.push(at - now);
            now = at;
            assert_eq!(b.on_request(now), Attempt::Now);
        }
        let ms: Vec<u128> = pauses.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    }

    #[test]
    fn a_success_resets_the_pause() {
        let t0 = Instant::now();
        let mut b = ElectionBackoff::default();
        for _ in 0..5 {
            b.failed(t0);
        }
        b.succeeded();
        assert_eq!(b.on_request(t0), Attempt::Now);
        b.failed(t0);
        assert_eq!(b.on_request(t0), Attempt::ScheduleAt(t0 + MIN_BACKOFF));
    }

    #[test]
    fn only_missing_persistent_paths_count_as_a_missing_tree() {
        let no_node = |p: &str| ControllerZkError::Zk(ZkError::NoNode { path: p.into() });
        assert_eq!(missing_tree_path(&no_node("/brokers/ids")), Some("/brokers/ids"));
        assert_eq!(
            missing_tree_path(&no_node("/controller_epoch")),
            Some("/controller_epoch")
        );
        assert_eq!(
            missing_tree_path(&no_node("/brokers/topics/t/partitions/0/state")),
            None
        );
        assert_eq!(missing_tree_path(&ControllerZkError::ControllerMoved), None);
    }
}
