//! The controller's event queue (Kafka's ControllerEventManager): the events the controller
//! reacts to, the queue every producer (ZooKeeper watches, session changes, RPC handlers,
//! broker responses) puts them on, and the ZooKeeper watches that only enqueue.
//!
//! The queue keeps Kafka's `EventQueueSize` gauge (incremented on enqueue, decremented on
//! dequeue) and `EventQueueTimeMs` timer (time from enqueue to dequeue). It must not process
//! events: [`super::controller`] owns the one task that does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};

use super::controller::{ElectionOutcome, ShutdownResult};
use super::stats;
use crate::types::BrokerId;
use crate::zk::store::{WatchEvent, WatchMode, WatchStream, ZkError, ZkStore};

/// Where a request's answer goes (shared so events stay `Clone`).
#[derive(Debug)]
pub(super) struct Reply<T>(Arc<Mutex<Option<oneshot::Sender<T>>>>);

impl<T> Clone for Reply<T> {
    fn clone(&self) -> Self {
        Reply(self.0.clone())
    }
}

impl<T> Reply<T> {
    pub(super) fn new() -> (Self, oneshot::Receiver<T>) {
        let (tx, rx) = oneshot::channel();
        (Reply(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    pub(super) fn send(&self, result: T) {
        if let Some(tx) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(result);
        }
    }
}

/// What the controller reacts to.
#[derive(Debug, Clone)]
pub(super) enum Event {
    /// A broker asks to move its leaderships away before it stops.
    ControlledShutdown {
        broker: BrokerId,
        broker_epoch: i64,
        reply: Reply<ShutdownResult>,
    },
    /// ElectLeaders API: `None` = every partition.
    ElectLeaders {
        partitions: Option<Vec<(String, i32)>>,
        unclean: bool,
        reply: Reply<ElectionOutcome>,
    },
    /// `/admin/preferred_replica_election` was written (legacy tools).
    PreferredReplicaElectionZNode,
    /// A timer armed by the core or the election backoff is due (`timer_tasks`).
    Timer(super::core::timers::TimerKind),
    /// `/log_dir_event_notification` children changed: a broker lost a log dir.
    LogDirEventNotification,
    /// `/isr_change_notification` children changed: leaders changed ISRs in state znodes.
    IsrChangeNotification,
    /// CreatePartitions for one topic: the new total and, optionally, the new partitions' replicas.
    CreatePartitions {
        topic: String,
        count: i32,
        assignment: Option<Vec<Vec<BrokerId>>>,
        validate_only: bool,
        reply: Reply<Result<(), super::error::ControllerError>>,
    },
    /// AlterPartitionReassignments (KIP-455): per partition its target replicas, `None` to cancel.
    AlterPartitionReassignments {
        reassignments: Vec<super::controller::ReassignmentRequest>,
        reply: Reply<super::controller::ReassignmentOutcome>,
    },
    /// ListPartitionReassignments: `None` = every partition being reassigned.
    ListPartitionReassignments {
        partitions: Option<Vec<(String, i32)>>,
        reply: Reply<super::controller::ReassignmentListing>,
    },
    /// `/admin/reassign_partitions` was created or changed (legacy tools).
    ReassignPartitionsZNode,
    /// The state znode of a partition being reassigned changed (Kafka's
    /// PartitionReassignmentIsrChangeHandler): its new replicas may have joined the ISR.
    /// (Consecutive ones are merged when dequeued.)
    ReassignmentIsrChange {
        partitions: Vec<(String, i32)>,
    },
    /// A broker answered KAFKA_STORAGE_ERROR for these replicas.
    OfflineReplicas {
        broker: BrokerId,
        partitions: Vec<(String, i32)>,
    },
    /// A broker answered a StopReplica(delete) sent in `controller_epoch` with `broker_epoch`.
    ReplicasDeleted {
        controller_epoch: i32,
        broker: BrokerId,
        broker_epoch: i64,
        results: Vec<((String, i32), i16)>,
    },
    Startup,
    /// `/controller` was created, changed or deleted: re-check, maybe elect.
    ControllerChange,
    BrokerChange,
    /// `/brokers/ids/<id>` data changed: the broker's endpoints, rack or features.
    BrokerModifications {
        broker: BrokerId,
    },
    TopicChange,
    /// `/brokers/topics/<t>` data changed: maybe partitions were added.
    PartitionModifications {
        topic: String,
    },
    /// `/admin/delete_topics` children changed.
    TopicDeletion,
    SessionEnded,
    SessionEstablished,
}

/// An event and when it was enqueued.
#[derive(Debug)]
pub(super) struct Queued {
    event: Event,
    enqueued: Instant,
}

/// The producer side of the queue. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct EventQueue {
    tx: mpsc::UnboundedSender<Queued>,
}

/// The consumer side, owned by the controller task.
#[derive(Debug)]
pub(super) struct EventReceiver {
    rx: mpsc::UnboundedReceiver<Queued>,
    /// The event after a run of ISR changes that [`EventReceiver::next`] merged.
    stashed: Option<Event>,
}

/// A new, empty queue.
pub(super) fn queue() -> (EventQueue, EventReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (EventQueue { tx }, EventReceiver { rx, stashed: None })
}

impl EventQueue {
    /// Enqueues `event`; `false` once the controller task is gone.
    pub(super) fn put(&self, event: Event) -> bool {
        stats::event_enqueued();
        let sent = self.tx.send(Queued {
            event,
            enqueued: Instant::now(),
        });
        if sent.is_err() {
            stats::event_dequeued(None);
        }
        sent.is_ok()
    }
}

impl EventReceiver {
    /// The next event, `None` when every producer is gone.
    ///
    /// ISR changes of partitions being reassigned queued one after another are merged into one
    /// event (moving many partitions at once completes them in a few batches rather than one
    /// ZooKeeper round of reads and writes each); the order of events is kept.
    pub(super) async fn next(&mut self) -> Option<Event> {
        let event = match self.stashed.take() {
            Some(e) => e,
            None => dequeued(self.rx.recv().await?),
        };
        let Event::ReassignmentIsrChange { mut partitions } = event else {
            return Some(event);
        };
        while let Ok(queued) = self.rx.try_recv() {
            match dequeued(queued) {
                Event::ReassignmentIsrChange { partitions: more } => {
                    for p in more {
                        if !partitions.contains(&p) {
                            partitions.push(p);
                        }
                    }
                }
                other => {
                    self.stashed = Some(other);
                    break;
                }
            }
        }
        Some(Event::ReassignmentIsrChange { partitions })
    }
}

fn dequeued(queued: Queued) -> Event {
    stats::event_dequeued(Some(queued.enqueued.elapsed()));
    queued.event
}

/// Which watch events enqueue the watch's controller event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// Every event (`/controller`: created, changed, deleted).
    Any,
    /// The child list changed (Kafka's ZNodeChildChangeHandler).
    Children,
    /// The znode was created or its data changed (an existence-checked ZNodeChangeHandler).
    CreatedOrData,
    /// The znode's data changed (Kafka's handleDataChange only).
    Data,
    /// The znode was created (Kafka's handleCreation only: `/admin/reassign_partitions`, which
    /// the controller itself trims as partitions finish).
    Created,
}

impl Trigger {
    /// Whether `e` should enqueue the event. A re-armed watch always does: changes may have
    /// been missed while the session was being replaced.
    pub(super) fn fires_on(self, e: &WatchEvent) -> bool {
        matches!(
            (self, e),
            (_, WatchEvent::Rearmed)
                | (Trigger::Any, _)
                | (Trigger::Children, WatchEvent::ChildrenChanged { .. })
                | (
                    Trigger::CreatedOrData,
                    WatchEvent::Created { .. } | WatchEvent::DataChanged { .. }
                )
                | (Trigger::Data, WatchEvent::DataChanged { .. })
                | (Trigger::Created, WatchEvent::Created { .. })
        )
    }
}

/// Enqueues `event` for every watch event `trigger` fires on, until the watch or queue ends.
/// A `Rearmed` (the watch was lost and re-added; changes in between were not seen) re-reads
/// through the same handler and is counted as `kastle_controller_watch_rearms_total`.
pub(super) async fn forward_watch(mut stream: WatchStream, trigger: Trigger, event: Event, queue: EventQueue) {
    while let Some(e) = stream.recv().await {
        if e == WatchEvent::Rearmed {
            metrics::counter!("kastle_controller_watch_rearms_total").increment(1);
        }
        if trigger.fires_on(&e) && !queue.put(event.clone()) {
            return;
        }
    }
}

/// Per-znode data watches the active controller holds (Kafka's PartitionModificationsHandler
/// per topic, BrokerModificationsHandler per broker), keyed by path. Removing one (or dropping
/// the whole set at resignation) stops its forwarder, which removes the ZooKeeper watch.
#[derive(Debug, Default)]
pub(super) struct ZNodeWatches {
    forwarders: BTreeMap<String, AbortHandle>,
}

impl ZNodeWatches {
    /// Watches each `(path, event)` not watched yet (firing on `trigger`), registering them concurrently.
    /// A watch that cannot be registered is logged and left out: only hand edits of that znode
    /// go unnoticed, which is no reason to fail the step that found it.
    pub(super) async fn watch_data<S: ZkStore + Clone>(
        &mut self,
        zk: &S,
        wanted: Vec<(String, Event)>,
        trigger: Trigger,
        queue: &EventQueue,
    ) {
        let mut registrations = JoinSet::new();
        for (path, event) in wanted {
            if self.forwarders.contains_key(&path) {
                continue;
            }
            let zk = zk.clone();
            registrations.spawn(async move {
                let stream: Result<WatchStream, ZkError> = zk.watch(&path, WatchMode::Persistent).await;
                (path, event, stream)
            });
        }
        while let Some(joined) = registrations.join_next().await {
            let Ok((path, event, stream)) = joined else { continue };
            match stream {
                Ok(stream) => {
                    let task = tokio::spawn(forward_watch(stream, trigger, event, queue.clone()));
                    self.forwarders.insert(path, task.abort_handle());
                }
                Err(e) => tracing::warn!(%path, error = %e, "controller cannot watch a znode"),
            }
        }
    }

    /// Stops watching `path`.
    pub(super) fn unwatch(&mut self, path: &str) {
        if let Some(task) = self.forwarders.remove(path) {
            task.abort();
        }
    }
}

impl Drop for ZNodeWatches {
    fn drop(&mut self) {
        for task in self.forwarders.values() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of queued ISR changes of moving partitions comes out as one event; whatever
    /// follows the run keeps its place.
    #[tokio::test]
    async fn consecutive_reassignment_isr_changes_are_merged_in_order() {
        let (q, mut rx) = queue();
        let change = |p: i32| Event::ReassignmentIsrChange {
            partitions: vec![("t".to_string(), p)],
        };
        for e in [change(0), change(1), change(0), Event::BrokerChange, change(2)] {
            assert!(q.put(e));
        }
        let names = |e: Option<Event>| match e {
            Some(Event::ReassignmentIsrChange { partitions }) => partitions.into_iter().map(|(_, p)| p).collect(),
            Some(Event::BrokerChange) => vec![-1],
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(names(rx.next().await), vec![0, 1]);
        assert_eq!(names(rx.next().await), vec![-1]);
        assert_eq!(names(rx.next().await), vec![2]);
    }

    fn p() -> String {
        "/p".to_string()
    }

    /// Which handler each watch stands for decides what wakes it: child handlers (BrokerChange,
    /// TopicChange, notifications) on child lists, PartitionModifications / BrokerModifications
    /// on data only (creation and deletion are BrokerChange's and TopicChange's business).
    #[test]
    fn triggers_fire_on_the_events_of_kafkas_handlers() {
        let events = [
            WatchEvent::Created { path: p() },
            WatchEvent::Deleted { path: p() },
            WatchEvent::DataChanged { path: p() },
            WatchEvent::ChildrenChanged { path: p() },
            WatchEvent::Rearmed,
        ];
        let cases: [(Trigger, [bool; 5]); 5] = [
            (Trigger::Any, [true, true, true, true, true]),
            (Trigger::Children, [false, false, false, true, true]),
            (Trigger::CreatedOrData, [true, false, true, false, true]),
            (Trigger::Data, [false, false, true, false, true]),
            (Trigger::Created, [true, false, false, false, true]),
        ];
        for (trigger, want) in cases {
            for (e, want) in events.iter().zip(want) {
                assert_eq!(trigger.fires_on(e), want, "{trigger:?} on {e:?}");
            }
        }
    }

    #[tokio::test]
    async fn events_come_out_in_order_and_stop_when_producers_are_gone() {
        let (queue, mut rx) = queue();
        assert!(queue.put(Event::BrokerChange));
        assert!(queue.put(Event::TopicChange));
        drop(queue);
        assert!(matches!(rx.next().await, Some(Event::BrokerChange)));
        assert!(matches!(rx.next().await, Some(Event::TopicChange)));
        assert!(rx.next().await.is_none());
    }

    #[tokio::test]
    async fn a_queue_without_its_controller_refuses_events() {
        let (queue, rx) = queue();
        drop(rx);
        assert!(!queue.put(Event::BrokerChange));
    }
}
