//! The tokio timers behind [`super::core::timers`]: the shell arms one task per
//! [`TimerKind`] (re-arming replaces it), which sleeps until the instant asked for and then
//! puts [`Event::Timer`] on the controller's queue. The core's term-bound timers go when the
//! controller resigns; every timer goes with the controller. It decides nothing.

use std::collections::BTreeMap;

use tokio::task::AbortHandle;

use super::core::timers::{Timer, TimerKind};
use super::event_manager::{Event, EventQueue};

/// The armed timers, by kind.
#[derive(Debug, Default)]
pub(super) struct ArmedTimers {
    tasks: BTreeMap<TimerKind, AbortHandle>,
}

impl ArmedTimers {
    /// Fires `timer.kind` on `queue` at `timer.at`, replacing that kind's earlier timer.
    pub(super) fn arm(&mut self, timer: Timer, queue: &EventQueue) {
        let queue = queue.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep_until(timer.at.into()).await;
            queue.put(Event::Timer(timer.kind));
        });
        if let Some(old) = self.tasks.insert(timer.kind, task.abort_handle()) {
            old.abort();
        }
    }

    /// Cancels the timers of the controller term that ended.
    pub(super) fn cancel_term_bound(&mut self) {
        self.tasks.retain(|kind, task| {
            if kind.term_bound() {
                task.abort();
            }
            !kind.term_bound()
        });
    }
}

impl Drop for ArmedTimers {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}
