//! The fetching side of KIP-227 (Kafka's `FetchSessionHandler`): which partitions the next
//! Fetch to one broker must list, which it forgets, and its session id and epoch; what an
//! answer means for the session. A pure state machine over partitions named by topic name
//! (Fetch v7–v12); `D` is whatever a partition's request parameters are, compared to decide
//! whether the partition must be sent again.

use std::collections::{HashMap, HashSet};

use crate::protocol::error_codes as ec;
use crate::protocol::fetch_metadata::{FetchMetadata, INVALID_SESSION_ID};
use crate::types::TopicPartition;

/// What the next Fetch carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFetch<D> {
    pub metadata: FetchMetadata,
    /// Partitions to list: all of them in a full request; added or changed ones otherwise.
    pub to_send: Vec<(TopicPartition, D)>,
    /// Partitions to put in `forgotten_topics_data` (incremental requests only).
    pub to_forget: Vec<TopicPartition>,
}

/// One fetch session with one broker.
#[derive(Debug)]
pub struct FetchSessionHandler<D> {
    next: FetchMetadata,
    /// The session's partitions as last sent, in session order.
    order: Vec<TopicPartition>,
    partitions: HashMap<TopicPartition, D>,
}

impl<D> Default for FetchSessionHandler<D> {
    fn default() -> Self {
        FetchSessionHandler {
            next: FetchMetadata::INITIAL,
            order: Vec::new(),
            partitions: HashMap::new(),
        }
    }
}

impl<D: Clone + PartialEq> FetchSessionHandler<D> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The session id and epoch the next request carries.
    pub fn next_metadata(&self) -> FetchMetadata {
        self.next
    }

    /// Kafka's `Builder.build`: the request for fetching exactly `wanted` next.
    pub fn build(&mut self, wanted: Vec<(TopicPartition, D)>) -> SessionFetch<D> {
        if self.next.is_full() {
            self.order = wanted.iter().map(|(tp, _)| tp.clone()).collect();
            self.partitions = wanted.iter().cloned().collect();
            return SessionFetch {
                metadata: self.next,
                to_send: wanted,
                to_forget: Vec::new(),
            };
        }
        let mut next: HashMap<TopicPartition, D> = HashMap::with_capacity(wanted.len());
        let mut next_order = Vec::with_capacity(wanted.len());
        for (tp, d) in wanted {
            if next.insert(tp.clone(), d).is_none() {
                next_order.push(tp);
            }
        }
        let mut altered = Vec::new();
        let mut to_forget = Vec::new();
        let mut kept = Vec::with_capacity(self.order.len());
        for tp in std::mem::take(&mut self.order) {
            match next.remove(&tp) {
                Some(d) => {
                    if self.partitions.get(&tp) != Some(&d) {
                        self.partitions.insert(tp.clone(), d.clone());
                        altered.push((tp.clone(), d));
                    }
                    kept.push(tp);
                }
                None => {
                    self.partitions.remove(&tp);
                    to_forget.push(tp);
                }
            }
        }
        let mut to_send = Vec::new();
        for tp in next_order {
            if let Some(d) = next.remove(&tp) {
                self.partitions.insert(tp.clone(), d.clone());
                kept.push(tp.clone());
                to_send.push((tp, d));
            }
        }
        to_send.extend(altered);
        self.order = kept;
        SessionFetch {
            metadata: self.next,
            to_send,
            to_forget,
        }
    }

    /// Kafka's `handleResponse`: whether the answer (its top-level error, session id and the
    /// partitions it carries) can be used. When it cannot, the next request is a full one.
    pub fn handle_response<'a>(
        &mut self,
        error_code: i16,
        session_id: i32,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> bool {
        if error_code != ec::NONE {
            self.next = if error_code == ec::FETCH_SESSION_ID_NOT_FOUND {
                FetchMetadata::INITIAL
            } else {
                self.next.next_close_existing_attempt_new()
            };
            return false;
        }
        let answered: HashSet<&TopicPartition> = partitions.into_iter().collect();
        let extra = answered.iter().any(|tp| !self.partitions.contains_key(*tp));
        if self.next.is_full() {
            let omitted = self.order.iter().any(|tp| !answered.contains(tp));
            if extra || omitted {
                self.next = FetchMetadata::INITIAL;
                return false;
            }
            self.next = if session_id == INVALID_SESSION_ID {
                FetchMetadata::INITIAL
            } else {
                FetchMetadata::new_incremental(session_id)
            };
            true
        } else {
            if extra {
                self.next = self.next.next_close_existing_attempt_new();
                return false;
            }
            self.next = if session_id == INVALID_SESSION_ID {
                // The broker closed the session.
                FetchMetadata::INITIAL
            } else {
                self.next.next_incremental()
            };
            true
        }
    }

    /// Kafka's `handleError`: the request failed (connection, timeout); start over with a full
    /// request that closes the session.
    pub fn handle_error(&mut self) {
        self.next = self.next.next_close_existing_attempt_new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: p,
        }
    }

    fn parts(v: &[(TopicPartition, i64)]) -> Vec<i32> {
        v.iter().map(|(t, _)| t.partition).collect()
    }

    #[test]
    fn full_then_incremental_sends_only_changes_and_forgets_removed_partitions() {
        let mut h = FetchSessionHandler::new();
        let r = h.build(vec![(tp(0), 0i64), (tp(1), 0), (tp(2), 0)]);
        assert_eq!(r.metadata, FetchMetadata::INITIAL);
        assert_eq!(parts(&r.to_send), vec![0, 1, 2]);
        assert!(h.handle_response(ec::NONE, 77, &[tp(0), tp(1), tp(2)]));
        assert_eq!(
            h.next_metadata(),
            FetchMetadata {
                session_id: 77,
                epoch: 1
            }
        );

        // p1 moved on, p2 gone, p3 new.
        let r = h.build(vec![(tp(0), 0), (tp(1), 5), (tp(3), 0)]);
        assert_eq!(
            r.metadata,
            FetchMetadata {
                session_id: 77,
                epoch: 1
            }
        );
        assert_eq!(parts(&r.to_send), vec![3, 1], "added first, then altered");
        assert_eq!(r.to_forget, vec![tp(2)]);
        assert!(h.handle_response(ec::NONE, 77, &[tp(1)]));
        assert_eq!(h.next_metadata().epoch, 2);

        // Nothing changed: an empty incremental request.
        let r = h.build(vec![(tp(0), 0), (tp(1), 5), (tp(3), 0)]);
        assert!(r.to_send.is_empty() && r.to_forget.is_empty());
        assert!(h.handle_response(ec::NONE, 77, std::iter::empty()));
        assert_eq!(h.next_metadata().epoch, 3);
    }

    #[test]
    fn session_errors_fall_back_to_a_full_fetch() {
        let mut h = FetchSessionHandler::new();
        h.build(vec![(tp(0), 0i64)]);
        assert!(h.handle_response(ec::NONE, 9, &[tp(0)]));
        h.build(vec![(tp(0), 0)]);
        assert!(!h.handle_response(ec::INVALID_FETCH_SESSION_EPOCH, 0, std::iter::empty()));
        assert_eq!(
            h.next_metadata(),
            FetchMetadata {
                session_id: 9,
                epoch: 0
            }
        );
        let r = h.build(vec![(tp(0), 1), (tp(1), 0)]);
        assert_eq!(parts(&r.to_send), vec![0, 1], "a full request lists everything");
        assert!(h.handle_response(ec::NONE, 10, &[tp(0), tp(1)]));
        h.build(vec![(tp(0), 1), (tp(1), 0)]);
        assert!(!h.handle_response(ec::FETCH_SESSION_ID_NOT_FOUND, 0, std::iter::empty()));
        assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
        h.handle_error();
        assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    }

    #[test]
    fn answers_that_do_not_fit_the_session_are_refused() {
        let mut h = FetchSessionHandler::new();
        h.build(vec![(tp(0), 0i64), (tp(1), 0)]);
        // A full answer omitting a partition.
        assert!(!h.handle_response(ec::NONE, 5, &[tp(0)]));
        assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
        h.build(vec![(tp(0), 0), (tp(1), 0)]);
        assert!(h.handle_response(ec::NONE, 5, &[tp(0), tp(1)]));
        // An incremental answer with a partition outside the session.
        h.build(vec![(tp(0), 0), (tp(1), 0)]);
        assert!(!h.handle_response(ec::NONE, 5, &[tp(7)]));
        assert_eq!(
            h.next_metadata(),
            FetchMetadata {
                session_id: 5,
                epoch: 0
            }
        );
        // No session given: stay sessionless-full.
        h.build(vec![(tp(0), 0)]);
        assert!(h.handle_response(ec::NONE, 0, &[tp(0)]));
        assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    }

    #[test]
    fn a_session_the_broker_closes_restarts_with_a_full_fetch() {
        let mut h = FetchSessionHandler::new();
        h.build(vec![(tp(0), 0i64)]);
        assert!(h.handle_response(ec::NONE, 5, &[tp(0)]));
        let r = h.build(vec![]);
        assert_eq!(r.to_forget, vec![tp(0)]);
        assert!(h.handle_response(ec::NONE, 0, std::iter::empty()));
        assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    }
}
