//! The controller: every broker runs one; the one that wins `/controller` decides leaders and
//! ISRs. One task owns the context; ZooKeeper watches and session changes only enqueue events
//! (Kafka's ControllerEventManager). Each step reads what it needs, decides with the pure
//! functions in [`super::election`], writes ZooKeeper in an epoch-fenced multi, then sends
//! LeaderAndIsr / UpdateMetadata. A failed epoch check means another controller exists: resign.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, watch};

use super::channel::{ControlRequest, ControllerChannel};
use super::decisions;
use super::requests::{self, ControllerContext};
use super::zk_ops::{self, ControllerZkError, StoredLeadership};
use crate::types::{BrokerId, ControllerEpoch, ZkVersion};
use crate::zk::paths;
use crate::zk::session::SessionEvent;
use crate::zk::store::{WatchEvent, WatchMode, ZkStore};
use crate::zk::ZkSession;

/// The answer to a ControlledShutdown: partitions the broker still leads, or an error code.
pub type ShutdownResult = Result<Vec<(String, i32)>, i16>;

/// Per-partition outcome of an ElectLeaders request (error code 0 = elected), or an error
/// for the whole request.
pub type ElectionOutcome = Result<Vec<((String, i32), i16)>, i16>;

/// Where a request's answer goes (shared so events stay `Clone`).
#[derive(Debug)]
struct Reply<T>(Arc<Mutex<Option<oneshot::Sender<T>>>>);

impl<T> Clone for Reply<T> {
    fn clone(&self) -> Self {
        Reply(self.0.clone())
    }
}

impl<T> Reply<T> {
    fn new() -> (Self, oneshot::Receiver<T>) {
        let (tx, rx) = oneshot::channel();
        (Reply(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    fn send(&self, result: T) {
        if let Some(tx) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(result);
        }
    }
}

/// What the controller reacts to.
#[derive(Debug, Clone)]
enum Event {
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
    /// The periodic leader-imbalance check (`auto.leader.rebalance.enable`).
    AutoPreferredReplicaLeaderElection,
    /// `/log_dir_event_notification` children changed: a broker lost a log dir.
    LogDirEventNotification,
    /// CreatePartitions for one topic: the new total and, optionally, the new partitions' replicas.
    CreatePartitions {
        topic: String,
        count: i32,
        assignment: Option<Vec<Vec<BrokerId>>>,
        validate_only: bool,
        reply: Reply<Result<(), i16>>,
    },
    /// A broker answered KAFKA_STORAGE_ERROR for these replicas.
    OfflineReplicas {
        broker: BrokerId,
        partitions: Vec<(String, i32)>,
    },
    Startup,
    /// `/controller` was created, changed or deleted: re-check, maybe elect.
    ControllerChange,
    BrokerChange,
    TopicChange,
    /// `/admin/delete_topics` children changed.
    TopicDeletion,
    SessionEnded,
    SessionEstablished,
}

/// Why a controlled shutdown could not be handled.
pub(super) enum ShutdownError {
    Code(i16),
    Zk(ControllerZkError),
}

/// Settings the controller needs.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub broker_id: BrokerId,
    pub inter_broker_listener: String,
    pub unclean_leader_election: bool,
    /// `auto.leader.rebalance.enable`.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds`.
    pub leader_imbalance_check_interval: std::time::Duration,
    /// `leader.imbalance.per.broker.percentage`.
    pub leader_imbalance_per_broker_percentage: u32,
}

/// The controller as the rest of the broker sees it.
#[derive(Debug, Clone)]
pub struct ControllerHandle {
    active: watch::Receiver<Option<ControllerEpoch>>,
    events: mpsc::UnboundedSender<Event>,
}

impl ControllerHandle {
    /// The epoch while this broker is the active controller.
    pub fn active_epoch(&self) -> Option<ControllerEpoch> {
        *self.active.borrow()
    }

    pub fn is_active(&self) -> bool {
        self.active.borrow().is_some()
    }

    /// Handles a ControlledShutdown request (on the active controller): moves leaderships off
    /// `broker` and answers with the partitions it still leads.
    pub async fn controlled_shutdown(&self, broker: BrokerId, broker_epoch: i64) -> ShutdownResult {
        let (tx, rx) = oneshot::channel();
        let reply = Reply(Arc::new(Mutex::new(Some(tx))));
        if self
            .events
            .send(Event::ControlledShutdown {
                broker,
                broker_epoch,
                reply,
            })
            .is_err()
        {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Handles an ElectLeaders request (on the active controller).
    pub async fn elect_leaders(&self, partitions: Option<Vec<(String, i32)>>, unclean: bool) -> ElectionOutcome {
        let (reply, rx) = Reply::new();
        if self
            .events
            .send(Event::ElectLeaders {
                partitions,
                unclean,
                reply,
            })
            .is_err()
        {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Handles CreatePartitions for one topic (on the active controller).
    pub async fn create_partitions(
        &self,
        topic: String,
        count: i32,
        assignment: Option<Vec<Vec<BrokerId>>>,
        validate_only: bool,
    ) -> Result<(), i16> {
        let (reply, rx) = Reply::new();
        if self
            .events
            .send(Event::CreatePartitions {
                topic,
                count,
                assignment,
                validate_only,
                reply,
            })
            .is_err()
        {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Changes of the active state (for tests and metrics).
    pub fn subscribe(&self) -> watch::Receiver<Option<ControllerEpoch>> {
        self.active.clone()
    }
}

/// State while active.
pub(super) struct Active {
    pub(super) epoch_version: ZkVersion,
    pub(super) ctx: ControllerContext,
    pub(super) channel: ControllerChannel,
}

pub(super) struct Controller {
    pub(super) config: ControllerConfig,
    pub(super) zk: ZkSession,
    pub(super) active: Option<Active>,
    /// Its own queue, for callbacks that report back (offline replicas).
    events: mpsc::UnboundedSender<Event>,
    state: watch::Sender<Option<ControllerEpoch>>,
}

/// Starts the controller module of this broker.
pub async fn start(config: ControllerConfig, zk: ZkSession, mut stop: watch::Receiver<bool>) -> ControllerHandle {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (state, active) = watch::channel(None);
    for (path, mode, event) in [
        (paths::CONTROLLER, WatchMode::Persistent, Event::ControllerChange),
        (paths::BROKER_IDS, WatchMode::Persistent, Event::BrokerChange),
        (paths::BROKER_TOPICS, WatchMode::Persistent, Event::TopicChange),
        (paths::DELETE_TOPICS, WatchMode::Persistent, Event::TopicDeletion),
        (
            paths::PREFERRED_REPLICA_ELECTION,
            WatchMode::Persistent,
            Event::PreferredReplicaElectionZNode,
        ),
        (
            paths::LOG_DIR_EVENT_NOTIFICATION,
            WatchMode::Persistent,
            Event::LogDirEventNotification,
        ),
    ] {
        match zk.watch(path, mode).await {
            Ok(stream) => {
                tokio::spawn(forward_watch(stream, event, tx.clone()));
            }
            Err(e) => tracing::error!(path, error = %e, "controller cannot watch"),
        }
    }
    let mut session_events = zk.subscribe();
    let session_tx = tx.clone();
    tokio::spawn(async move {
        while let Ok(e) = session_events.recv().await {
            let event = match e {
                SessionEvent::Ended { .. } => Event::SessionEnded,
                SessionEvent::Established { .. } => Event::SessionEstablished,
            };
            if session_tx.send(event).is_err() {
                return;
            }
        }
    });
    let _ = tx.send(Event::Startup);
    let events = tx.clone();
    if config.auto_leader_rebalance {
        let (tx, every, mut stop) = (tx.clone(), config.leader_imbalance_check_interval, stop.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {},
                    _ = stop.changed() => return,
                }
                if tx.send(Event::AutoPreferredReplicaLeaderElection).is_err() {
                    return;
                }
            }
        });
    }
    let mut controller = Controller {
        config,
        zk,
        active: None,
        state,
        events: tx.clone(),
    };
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                e = rx.recv() => match e { Some(e) => e, None => return },
                _ = stop.changed() => {
                    controller.resign("broker shutting down");
                    return;
                }
            };
            controller.process(event).await;
        }
    });
    ControllerHandle { active, events }
}

pub(super) const NOT_CONTROLLER: i16 = 41;
pub(super) const BROKER_NOT_AVAILABLE: i16 = 8;
pub(super) const STALE_BROKER_EPOCH: i16 = 77;

async fn forward_watch(mut stream: crate::zk::store::WatchStream, event: Event, tx: mpsc::UnboundedSender<Event>) {
    while let Some(e) = stream.recv().await {
        let relevant = matches!(event, Event::ControllerChange)
            || matches!(e, WatchEvent::ChildrenChanged { .. } | WatchEvent::Rearmed)
            || matches!(
                (&event, &e),
                (
                    Event::PreferredReplicaElectionZNode,
                    WatchEvent::Created { .. } | WatchEvent::DataChanged { .. }
                )
            );
        if relevant && tx.send(event.clone()).is_err() {
            return;
        }
    }
}

impl Controller {
    async fn process(&mut self, event: Event) {
        let result = match event {
            Event::Startup | Event::ControllerChange | Event::SessionEstablished => self.maybe_elect().await,
            Event::SessionEnded => {
                self.resign("ZooKeeper session ended");
                Ok(())
            }
            Event::BrokerChange => match self.on_broker_change().await {
                // A returning replica may unblock a deletion.
                Ok(()) => self.on_topic_deletion().await,
                Err(e) => Err(e),
            },
            Event::TopicDeletion => self.on_topic_deletion().await,
            Event::ElectLeaders {
                partitions,
                unclean,
                reply,
            } => match self.on_elect_leaders(partitions, unclean).await {
                Ok(outcome) => {
                    reply.send(Ok(outcome));
                    Ok(())
                }
                Err(e) => {
                    reply.send(Err(NOT_CONTROLLER));
                    Err(e)
                }
            },
            Event::PreferredReplicaElectionZNode => self.on_preferred_replica_election_znode().await,
            Event::AutoPreferredReplicaLeaderElection => self.on_auto_rebalance().await,
            Event::LogDirEventNotification => self.on_log_dir_event().await,
            Event::CreatePartitions {
                topic,
                count,
                assignment,
                validate_only,
                reply,
            } => {
                match self
                    .on_create_partitions(&topic, count, assignment, validate_only)
                    .await
                {
                    Ok(result) => {
                        reply.send(result);
                        Ok(())
                    }
                    Err(e) => {
                        reply.send(Err(NOT_CONTROLLER));
                        Err(e)
                    }
                }
            }
            Event::OfflineReplicas { broker, partitions } => self.on_offline_replicas(broker, partitions).await,
            Event::ControlledShutdown {
                broker,
                broker_epoch,
                reply,
            } => {
                let result = self.on_controlled_shutdown(broker, broker_epoch).await;
                match result {
                    Ok(remaining) => {
                        reply.send(Ok(remaining));
                        Ok(())
                    }
                    Err(ShutdownError::Code(code)) => {
                        reply.send(Err(code));
                        Ok(())
                    }
                    Err(ShutdownError::Zk(e)) => {
                        reply.send(Err(NOT_CONTROLLER));
                        Err(e)
                    }
                }
            }
            Event::TopicChange => self.on_topic_change().await,
        };
        match result {
            Ok(()) => {}
            Err(ControllerZkError::ControllerMoved) => self.resign("another controller was elected"),
            Err(e) => tracing::error!(error = %e, "controller event failed"),
        }
        self.update_gauges();
    }

    /// The controller gauges with Kafka's JMX-exporter names (zero on a non-active controller,
    /// as in Kafka, so the cluster-wide sum is the truth).
    fn update_gauges(&self) {
        let (topics, partitions, offline, brokers, imbalance) = match &self.active {
            None => (0, 0, 0, 0, 0),
            Some(a) => {
                let ctx = &a.ctx;
                let all = ctx.all_partitions();
                let offline = all
                    .iter()
                    .filter(|k| {
                        ctx.leaderships
                            .get(*k)
                            .is_none_or(|l| l.leader < 0 || !ctx.is_live(BrokerId(l.leader)))
                    })
                    .count();
                let imbalance = all
                    .iter()
                    .filter(|k| {
                        let head = ctx.replicas(&k.0, k.1).first().map(|b| b.0);
                        ctx.leaderships.get(*k).is_some_and(|l| Some(l.leader) != head)
                    })
                    .count();
                (ctx.topics.len(), all.len(), offline, ctx.live_brokers.len(), imbalance)
            }
        };
        metrics::gauge!("kafka_controller_kafkacontroller_globaltopiccount").set(topics as f64);
        metrics::gauge!("kafka_controller_kafkacontroller_globalpartitioncount").set(partitions as f64);
        metrics::gauge!("kafka_controller_kafkacontroller_offlinepartitionscount").set(offline as f64);
        metrics::gauge!("kafka_controller_kafkacontroller_activebrokercount").set(brokers as f64);
        metrics::gauge!("kafka_controller_kafkacontroller_preferredreplicaimbalancecount").set(imbalance as f64);
    }

    fn resign(&mut self, why: &str) {
        if let Some(mut active) = self.active.take() {
            tracing::warn!(broker = %self.config.broker_id, epoch = active.ctx.epoch, why, "resigning as controller");
            active.channel.clear();
            self.state.send_replace(None);
            metrics::gauge!("kafka_controller_kafkacontroller_activecontrollercount").set(0.0);
        }
    }

    async fn maybe_elect(&mut self) -> Result<(), ControllerZkError> {
        let current = zk_ops::active_controller(&self.zk).await?;
        if current.is_some_and(|c| c != self.config.broker_id) {
            self.resign("another broker is the controller");
            return Ok(());
        }
        if current == Some(self.config.broker_id) && self.active.is_some() {
            return Ok(());
        }
        if current == Some(self.config.broker_id) {
            // A /controller of ours from an earlier session or run: let it go and elect anew.
            let _ = self.zk.delete(paths::CONTROLLER, None).await;
            return Ok(());
        }
        let Some((epoch, epoch_version)) = zk_ops::elect(&self.zk, self.config.broker_id).await? else {
            return Ok(());
        };
        tracing::info!(broker = %self.config.broker_id, epoch = epoch.0, "elected controller");
        let ctx = ControllerContext {
            controller: self.config.broker_id,
            epoch: epoch.0,
            ..Default::default()
        };
        let events = self.events.clone();
        let on_offline: super::channel::OfflineReplicasCallback = std::sync::Arc::new(move |broker, partitions| {
            let _ = events.send(Event::OfflineReplicas { broker, partitions });
        });
        self.active = Some(Active {
            epoch_version,
            ctx,
            channel: ControllerChannel::new(on_offline),
        });
        if let Err(e) = self.on_failover().await {
            tracing::error!(error = %e, "controller failover failed; moving the controller");
            self.resign("failover failed");
            let _ = self.zk.delete(paths::CONTROLLER, None).await;
            return Err(e);
        }
        self.state.send_replace(Some(epoch));
        metrics::gauge!("kafka_controller_kafkacontroller_activecontrollercount").set(1.0);
        Ok(())
    }

    /// Loads the cluster from ZooKeeper, tells every broker, and elects what needs a leader.
    async fn on_failover(&mut self) -> Result<(), ControllerZkError> {
        let (started, zk_before) = (std::time::Instant::now(), self.zk.requests());
        let brokers = zk_ops::live_brokers(&self.zk).await?;
        let names = zk_ops::topic_names(&self.zk).await?;
        let topics = zk_ops::topic_infos(&self.zk, &names).await?;
        let partitions: Vec<(String, i32)> = topics
            .iter()
            .flat_map(|(t, i)| i.assignment.keys().map(move |p| (t.clone(), *p)))
            .collect();
        let leaderships = zk_ops::leaderships(&self.zk, &partitions).await?;
        let listener = self.config.inter_broker_listener.clone();
        let me = self.config.broker_id;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        active.ctx.topics = topics;
        active.ctx.leaderships = leaderships;
        for (id, b) in &brokers {
            if let Some(addr) = requests::broker_address(b, &listener) {
                active.channel.add_broker(*id, addr, me);
            }
        }
        active.ctx.live_brokers = brokers;
        // Every broker learns the cluster first, then leaders are (re)announced and elected.
        let all = active.ctx.all_partitions();
        self.send_update_metadata(&all);
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let online: Vec<(String, i32)> = {
            let ctx = &active.ctx;
            all.iter()
                .filter(|k| {
                    ctx.leaderships
                        .get(*k)
                        .is_some_and(|l| l.leader >= 0 && ctx.is_live(BrokerId(l.leader)))
                })
                .cloned()
                .collect()
        };
        self.send_leader_and_isr(&online, false);
        self.elect_partitions(&all).await?;
        // Resume deletions queued before this controller took over.
        self.on_topic_deletion().await?;
        if let Some(active) = self.active.as_ref() {
            let brokers = active.ctx.live_brokers.keys().copied();
            let round_trips = self.zk.requests() - zk_before;
            super::timing::report_failover(&active.channel, brokers, started, all.len(), round_trips);
        }
        Ok(())
    }

    async fn on_broker_change(&mut self) -> Result<(), ControllerZkError> {
        if self.active.is_none() {
            return Ok(());
        }
        let now = zk_ops::live_brokers(&self.zk).await?;
        let listener = self.config.inter_broker_listener.clone();
        let me = self.config.broker_id;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let known = &active.ctx.live_brokers;
        let dead: Vec<BrokerId> = known.keys().filter(|id| !now.contains_key(id)).copied().collect();
        let bounced: Vec<BrokerId> = now
            .iter()
            .filter(|(id, b)| known.get(id).is_some_and(|k| k.epoch != b.epoch))
            .map(|(id, _)| *id)
            .collect();
        let new: Vec<BrokerId> = now.keys().filter(|id| !known.contains_key(id)).copied().collect();
        if dead.is_empty() && bounced.is_empty() && new.is_empty() {
            return Ok(());
        }
        tracing::info!(?new, ?dead, ?bounced, "broker change");
        for id in dead.iter().chain(&bounced) {
            active.channel.remove_broker(*id);
        }
        for id in new.iter().chain(&bounced) {
            if let Some(addr) = now.get(id).and_then(|b| requests::broker_address(b, &listener)) {
                active.channel.add_broker(*id, addr, me);
            }
        }
        for id in dead.iter().chain(&bounced) {
            active.ctx.shutting_down.remove(id);
            // A restarted broker reopens its log dirs; its replicas count as online again.
            active.ctx.offline_replicas.retain(|(_, _, b)| b != id);
        }
        active.ctx.live_brokers = now;
        let all = active.ctx.all_partitions();
        // Dead brokers leave the ISRs (and leadership); partitions without a leader are elected.
        self.elect_partitions(&all).await?;
        // Restarted brokers learn everything and get LeaderAndIsr for their replicas.
        self.send_update_metadata(&all);
        if let Some(active) = self.active.as_ref() {
            for id in new.iter().chain(&bounced) {
                let theirs: Vec<(String, i32)> = all
                    .iter()
                    .filter(|(t, p)| active.ctx.replicas(t, *p).contains(id))
                    .cloned()
                    .collect();
                self.send_leader_and_isr_to_inner(active, *id, &theirs, false);
            }
        }
        Ok(())
    }

    async fn on_topic_change(&mut self) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let names = zk_ops::topic_names(&self.zk).await?;
        let new: Vec<String> = names
            .into_iter()
            .filter(|t| !active.ctx.topics.contains_key(t))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let infos = zk_ops::topic_infos(&self.zk, &new).await?;
        let partitions: Vec<(String, i32)> = infos
            .iter()
            .flat_map(|(t, i)| i.assignment.keys().map(move |p| (t.clone(), *p)))
            .collect();
        // Normally new partitions have no state yet; one written by hand (or left by an earlier
        // controller) is taken as it is.
        let existing = zk_ops::existing_leaderships(&self.zk, &partitions).await?;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        active.ctx.topics.extend(infos);
        let mut announced = Vec::new();
        for (key, l) in existing {
            if l.leader >= 0 && active.ctx.is_live(BrokerId(l.leader)) {
                announced.push(key.clone());
            }
            active.ctx.leaderships.insert(key, l);
        }
        tracing::info!(topics = ?new, partitions = partitions.len(), "new topics");
        self.send_leader_and_isr(&announced, true);
        self.send_update_metadata(&announced);
        self.elect_partitions(&partitions).await
    }

    /// Decides every partition in `partitions` that needs a change (new, leaderless, or with a
    /// dead member in its ISR), writes ZooKeeper (fenced, batched), and announces the result.
    pub(super) async fn elect_partitions(&mut self, partitions: &[(String, i32)]) -> Result<(), ControllerZkError> {
        let unclean = self.config.unclean_leader_election;
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let ctx = &active.ctx;
        let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
        let mut creates = Vec::new();
        let mut updates = Vec::new();
        for key in partitions {
            let assignment = ctx.replicas(&key.0, key.1);
            // A replica in a failed log dir cannot lead or stay in sync.
            let live: BTreeSet<BrokerId> = live
                .iter()
                .copied()
                .filter(|b| !ctx.offline_replicas.contains(&(key.0.clone(), key.1, *b)))
                .collect();
            match ctx.leaderships.get(key) {
                None => {
                    if let Some(l) = decisions::new_partition(&assignment, &live, ctx.epoch) {
                        creates.push((key.clone(), l));
                    }
                }
                Some(current) => {
                    if let Some(l) = decisions::existing_partition(&assignment, current, &live, unclean, ctx.epoch) {
                        updates.push((key.clone(), l));
                    }
                }
            }
        }
        if creates.is_empty() && updates.is_empty() {
            return Ok(());
        }
        self.write_and_announce(creates, updates).await
    }

    /// Writes decided leaderships — new state znodes for `creates`, conditional updates (on each
    /// znode's version) for `updates` — fenced by the controller epoch and in batches well under
    /// ZooKeeper's 1 MB request limit; records them; sends LeaderAndIsr and UpdateMetadata.
    pub(super) async fn write_and_announce(
        &mut self,
        creates: Vec<((String, i32), StoredLeadership)>,
        updates: Vec<((String, i32), StoredLeadership)>,
    ) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        if creates.is_empty() && updates.is_empty() {
            return Ok(());
        }
        let (epoch, version) = (ControllerEpoch(active.ctx.epoch), active.epoch_version);
        zk_ops::create_partition_states(&self.zk, epoch, version, &creates).await?;
        let is_new = !creates.is_empty();
        let mut written = creates;
        let versions = zk_ops::update_partition_states(&self.zk, epoch, version, &updates).await?;
        for ((key, mut l), v) in updates.into_iter().zip(versions) {
            l.zk_version = v;
            written.push((key, l));
        }
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let mut changed = Vec::with_capacity(written.len());
        for (key, l) in written {
            if l.leader < 0 {
                metrics::counter!("kastle_controller_offline_partitions_total").increment(1);
            }
            active.ctx.leaderships.insert(key.clone(), l);
            changed.push(key);
        }
        tracing::info!(partitions = changed.len(), "leaders and ISRs written");
        self.send_leader_and_isr(&changed, is_new);
        self.send_update_metadata(&changed);
        Ok(())
    }

    /// UpdateMetadata for `partitions` to every live broker.
    pub(super) fn send_update_metadata(&self, partitions: &[(String, i32)]) {
        let Some(active) = &self.active else { return };
        for (id, b) in &active.ctx.live_brokers {
            let request = requests::update_metadata(&active.ctx, partitions, b.epoch);
            active.channel.send(*id, ControlRequest::UpdateMetadata(request));
        }
    }

    /// LeaderAndIsr for `partitions` to each of their live replicas.
    pub(super) fn send_leader_and_isr(&self, partitions: &[(String, i32)], is_new: bool) {
        let Some(active) = &self.active else { return };
        let mut per_broker: BTreeMap<BrokerId, Vec<(String, i32)>> = BTreeMap::new();
        for (t, p) in partitions {
            for r in active.ctx.replicas(t, *p) {
                if active.ctx.is_live(r) {
                    per_broker.entry(r).or_default().push((t.clone(), *p));
                }
            }
        }
        for (broker, theirs) in per_broker {
            self.send_leader_and_isr_to_inner(active, broker, &theirs, is_new);
        }
    }

    pub(super) fn send_leader_and_isr_to_inner(
        &self,
        active: &Active,
        broker: BrokerId,
        partitions: &[(String, i32)],
        is_new: bool,
    ) {
        let Some(b) = active.ctx.live_brokers.get(&broker) else {
            return;
        };
        if partitions.is_empty() {
            return;
        }
        let request = requests::leader_and_isr(
            &active.ctx,
            partitions,
            b.epoch,
            &self.config.inter_broker_listener,
            is_new,
        );
        active.channel.send(broker, ControlRequest::LeaderAndIsr(request));
    }
}
