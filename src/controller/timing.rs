//! Timing lines the controller logs for operators and `scripts/bench-controller`: how long a
//! failover took until every live broker had answered its LeaderAndIsr, and how many ZooKeeper
//! requests it cost.

use std::time::Instant;

use super::channel::ControllerChannel;
use crate::types::BrokerId;

/// Logs "failover complete: …" once every broker in `brokers` has answered what was queued to it
/// so far (the failover's UpdateMetadata and LeaderAndIsr), without holding up the event loop.
/// `started` is the moment this controller was elected; `zk_round_trips` the ZooKeeper requests
/// the failover sent (a multi counts once).
pub(super) fn report_failover(
    channel: &ControllerChannel,
    brokers: impl Iterator<Item = BrokerId>,
    started: Instant,
    partitions: usize,
    zk_round_trips: u64,
) {
    let queued_ms = started.elapsed().as_millis() as u64;
    let barriers: Vec<_> = brokers.map(|b| channel.barrier(b)).collect();
    tokio::spawn(async move {
        let brokers = barriers.len();
        let mut answered = 0;
        for barrier in barriers {
            if barrier.await.is_ok() {
                answered += 1;
            }
        }
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if answered == brokers {
            tracing::info!(
                queued_ms,
                "failover complete: {partitions} partitions, LeaderAndIsr sent to {answered} brokers in {elapsed_ms} ms, ZK round trips {zk_round_trips}"
            );
        } else {
            tracing::warn!(
                queued_ms,
                "failover incomplete: {partitions} partitions, LeaderAndIsr answered by {answered} of {brokers} brokers after {elapsed_ms} ms, ZK round trips {zk_round_trips}"
            );
        }
    });
}
