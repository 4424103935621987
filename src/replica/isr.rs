//! The leader's replication rules as pure functions of what it knows and `now`: which followers
//! are caught up (Kafka's `lastCaughtUpTimeMs` bookkeeping), when the ISR shrinks or expands,
//! and where the high watermark may move. [`super::partition::Partition`] keeps the state and
//! calls these; nothing here does I/O.

use std::collections::HashMap;

use crate::types::BrokerId;

/// What the leader knows of one follower from its fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The follower's log end offset (its last fetch offset); -1 until it has fetched from this
    /// leader.
    pub leo: i64,
    /// The last time the follower was known to have everything the leader had.
    pub last_caught_up_ms: i64,
    /// The leader's LEO at the follower's previous fetch, and when that fetch came.
    pub last_fetch_leader_leo: i64,
    pub last_fetch_ms: i64,
    /// The follower's log start offset from its fetches (what DeleteRecords waits for); -1
    /// until it has told this leader.
    pub log_start: i64,
}

impl FollowerState {
    /// A follower as a new leader first sees it: ISR members count as caught up now (so they
    /// get `replica.lag.time.max.ms` to fetch), others as never.
    pub fn new(in_isr: bool, now_ms: i64) -> Self {
        FollowerState {
            leo: -1,
            last_caught_up_ms: if in_isr { now_ms } else { 0 },
            last_fetch_leader_leo: -1,
            last_fetch_ms: 0,
            log_start: -1,
        }
    }

    /// Records a fetch at `fetch_offset` while the leader's LEO is `leader_leo` (Kafka's
    /// `updateFetchState`): a fetch at the leader's LEO means caught up now; a fetch reaching
    /// what the leader had at the previous fetch means caught up as of that previous fetch.
    pub fn on_fetch(&mut self, fetch_offset: i64, leader_leo: i64, now_ms: i64) {
        if fetch_offset >= leader_leo {
            self.last_caught_up_ms = self.last_caught_up_ms.max(now_ms);
        } else if self.last_fetch_leader_leo >= 0 && fetch_offset >= self.last_fetch_leader_leo {
            self.last_caught_up_ms = self.last_caught_up_ms.max(self.last_fetch_ms);
        }
        self.leo = fetch_offset;
        self.last_fetch_leader_leo = leader_leo;
        self.last_fetch_ms = now_ms;
    }

    /// In sync: has the leader's LEO, or was caught up within `lag_max_ms`.
    pub fn is_caught_up(&self, leader_leo: i64, now_ms: i64, lag_max_ms: i64) -> bool {
        self.leo >= leader_leo || now_ms - self.last_caught_up_ms <= lag_max_ms
    }
}

/// ISR members (other than the leader) that fell out of sync: the ones to shrink away.
pub fn out_of_sync(
    isr: &[BrokerId],
    leader: BrokerId,
    followers: &HashMap<BrokerId, FollowerState>,
    leader_leo: i64,
    now_ms: i64,
    lag_max_ms: i64,
) -> Vec<BrokerId> {
    isr.iter()
        .copied()
        .filter(|id| *id != leader)
        .filter(|id| match followers.get(id) {
            Some(f) => !f.is_caught_up(leader_leo, now_ms, lag_max_ms),
            None => true,
        })
        .collect()
}

/// Whether a follower outside the ISR may join it: it has everything up to the HW and
/// everything of the leader's current epoch (KIP-101: otherwise it could still diverge).
pub fn may_join_isr(follower_leo: i64, high_watermark: i64, leader_epoch_start_offset: i64) -> bool {
    follower_leo >= high_watermark && follower_leo >= leader_epoch_start_offset
}

/// The ISR that counts for the minimum: at least one, at most the replication factor
/// (Kafka's effective min ISR = min(min.insync.replicas, replication factor)).
pub fn effective_min_isr(min_isr: i32, replication_factor: usize) -> usize {
    (min_isr.max(1) as usize).min(replication_factor.max(1))
}

/// The high watermark the leader may move to, if it moves forward: the minimum LEO over the
/// maximal ISR (committed ISR plus a follower being added, KIP-497). Frozen while the committed
/// ISR is below the effective minimum (KAFKA-15583) or while an ISR member has not fetched yet.
pub fn next_high_watermark(
    maximal_isr: &[BrokerId],
    committed_isr_len: usize,
    min_isr: usize,
    leader: BrokerId,
    leader_leo: i64,
    followers: &HashMap<BrokerId, FollowerState>,
    current_hw: i64,
) -> Option<i64> {
    if committed_isr_len < min_isr {
        return None;
    }
    let mut hw = leader_leo;
    for id in maximal_isr.iter().filter(|id| **id != leader) {
        let leo = followers.get(id).map_or(-1, |f| f.leo);
        if leo < 0 {
            return None;
        }
        hw = hw.min(leo);
    }
    (hw > current_hw).then_some(hw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(ids: &[i32]) -> Vec<BrokerId> {
        ids.iter().map(|i| BrokerId(*i)).collect()
    }

    #[test]
    fn a_fetch_at_the_leader_end_is_caught_up_now() {
        let mut f = FollowerState::new(false, 0);
        f.on_fetch(10, 10, 5_000);
        assert_eq!(f.last_caught_up_ms, 5_000);
        assert!(f.is_caught_up(20, 15_000, 10_000));
        assert!(!f.is_caught_up(20, 15_001, 10_000));
    }

    #[test]
    fn reaching_the_previous_leader_end_counts_from_the_previous_fetch() {
        let mut f = FollowerState::new(false, 0);
        f.on_fetch(5, 10, 1_000); // behind: not caught up
        assert_eq!(f.last_caught_up_ms, 0);
        f.on_fetch(10, 20, 2_000); // has what the leader had at 1 000
        assert_eq!(f.last_caught_up_ms, 1_000);
        assert_eq!(f.leo, 10);
    }

    #[test]
    fn a_slow_follower_that_never_catches_up_falls_out() {
        let mut followers = HashMap::new();
        let mut slow = FollowerState::new(true, 0);
        let mut fast = FollowerState::new(true, 0);
        let mut leader_leo = 0;
        for t in 1..=40 {
            leader_leo += 10;
            slow.on_fetch(leader_leo - 15, leader_leo, t * 1_000);
            fast.on_fetch(leader_leo, leader_leo, t * 1_000);
        }
        followers.insert(BrokerId(2), slow);
        followers.insert(BrokerId(3), fast);
        let out = out_of_sync(&b(&[1, 2, 3]), BrokerId(1), &followers, leader_leo, 40_000, 30_000);
        assert_eq!(out, b(&[2]));
    }

    #[test]
    fn a_follower_that_never_fetched_leaves_after_the_lag_time() {
        let followers = HashMap::from([(BrokerId(2), FollowerState::new(true, 1_000))]);
        assert!(out_of_sync(&b(&[1, 2]), BrokerId(1), &followers, 0, 31_000, 30_000).is_empty());
        assert!(out_of_sync(&b(&[1, 2]), BrokerId(1), &followers, 5, 31_001, 30_000) == b(&[2]));
        // At the leader's end (nothing produced) a follower is caught up whatever the time.
        let mut idle = FollowerState::new(true, 0);
        idle.on_fetch(0, 0, 0);
        let followers = HashMap::from([(BrokerId(2), idle)]);
        assert!(out_of_sync(&b(&[1, 2]), BrokerId(1), &followers, 0, 99_000, 30_000).is_empty());
    }

    #[test]
    fn joining_needs_the_hw_and_the_current_epoch() {
        assert!(may_join_isr(10, 10, 8));
        assert!(!may_join_isr(9, 10, 8));
        assert!(!may_join_isr(10, 5, 12));
    }

    #[test]
    fn hw_is_the_minimum_over_the_maximal_isr_and_only_moves_forward() {
        let mut followers = HashMap::new();
        let mut f2 = FollowerState::new(true, 0);
        f2.on_fetch(7, 10, 0);
        let mut f3 = FollowerState::new(true, 0);
        f3.on_fetch(9, 10, 0);
        followers.insert(BrokerId(2), f2);
        followers.insert(BrokerId(3), f3);
        let isr = b(&[1, 2, 3]);
        assert_eq!(next_high_watermark(&isr, 3, 2, BrokerId(1), 10, &followers, 0), Some(7));
        assert_eq!(next_high_watermark(&isr, 3, 2, BrokerId(1), 10, &followers, 7), None);
        assert_eq!(
            next_high_watermark(&b(&[1, 3]), 2, 2, BrokerId(1), 10, &followers, 7),
            Some(9)
        );
    }

    #[test]
    fn hw_is_frozen_below_min_isr_and_until_every_member_fetched() {
        let followers = HashMap::from([(BrokerId(2), FollowerState::new(true, 0))]);
        assert_eq!(
            next_high_watermark(&b(&[1]), 1, 2, BrokerId(1), 10, &followers, 0),
            None
        );
        assert_eq!(
            next_high_watermark(&b(&[1]), 1, 1, BrokerId(1), 10, &followers, 0),
            Some(10)
        );
        assert_eq!(
            next_high_watermark(&b(&[1, 2]), 2, 1, BrokerId(1), 10, &followers, 0),
            None
        );
    }

    #[test]
    fn effective_min_isr_is_capped_by_the_replication_factor() {
        assert_eq!(effective_min_isr(2, 3), 2);
        assert_eq!(effective_min_isr(2, 1), 1);
        assert_eq!(effective_min_isr(0, 3), 1);
    }
}
