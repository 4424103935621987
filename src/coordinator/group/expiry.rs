//! Which committed offsets have expired (`offsets.retention.minutes`), as Kafka 2.1+ decides
//! (KIP-211): the offsets of a group that manages membership expire only once the group has been
//! Empty for the retention time; those of a group that only stores offsets (no protocol type)
//! expire by their own commit time; an explicit expire timestamp (OffsetCommit v1–v4 with a
//! retention time) wins. A group left Empty with no offsets is then removed (tombstoned).

use super::state::{Group, GroupState};

impl Group {
    /// The partitions whose offsets expire at `now`.
    pub fn expired_offsets(&self, now: i64, retention_ms: i64) -> Vec<(String, i32)> {
        let empty_since = match (self.protocol_type.is_some(), self.state) {
            (true, GroupState::Empty) => Some(self.state_timestamp),
            // A group with members keeps its offsets while it is alive.
            (true, _) => return self.explicitly_expired(now),
            (false, _) => None,
        };
        self.offsets
            .iter()
            .filter(|(_, v)| match v.expire_timestamp {
                Some(expire) => now >= expire,
                None => now >= empty_since.unwrap_or(v.commit_timestamp).saturating_add(retention_ms),
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn explicitly_expired(&self, now: i64) -> Vec<(String, i32)> {
        self.offsets
            .iter()
            .filter(|(_, v)| v.expire_timestamp.is_some_and(|e| now >= e))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// An empty group with nothing committed has nothing left to keep.
    pub fn is_removable(&self) -> bool {
        self.is(GroupState::Empty) && self.offsets.is_empty() && self.members.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::OffsetValue;
    use super::*;

    fn offset(commit: i64, expire: Option<i64>) -> OffsetValue {
        OffsetValue {
            offset: 1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: commit,
            expire_timestamp: expire,
        }
    }

    #[test]
    fn standalone_offsets_expire_by_commit_time_and_explicit_expiry_wins() {
        let mut g = Group::new("g", 0);
        g.offsets.insert(("t".into(), 0), offset(100, None));
        g.offsets.insert(("t".into(), 1), offset(500, None));
        g.offsets.insert(("t".into(), 2), offset(900, Some(150)));
        assert_eq!(g.expired_offsets(1_099, 1_000), vec![("t".to_string(), 2)]);
        assert_eq!(
            g.expired_offsets(1_100, 1_000),
            vec![("t".to_string(), 0), ("t".to_string(), 2)]
        );
    }

    #[test]
    fn a_consumer_groups_offsets_expire_only_after_it_has_been_empty_long_enough() {
        let mut g = Group::new("g", 0);
        g.protocol_type = Some("consumer".into());
        g.offsets.insert(("t".into(), 0), offset(100, None));
        g.state = GroupState::Stable;
        assert!(
            g.expired_offsets(1_000_000, 1_000).is_empty(),
            "alive groups keep offsets"
        );
        g.state = GroupState::Empty;
        g.state_timestamp = 5_000;
        assert!(g.expired_offsets(5_999, 1_000).is_empty());
        assert_eq!(g.expired_offsets(6_000, 1_000), vec![("t".to_string(), 0)]);
        assert!(!g.is_removable());
        g.offsets.clear();
        assert!(g.is_removable());
    }
}
