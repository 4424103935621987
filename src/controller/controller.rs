//! The controller's event loop: every broker runs one; the one that wins `/controller` decides
//! leaders and ISRs. One task ([`super::handle::start`]) owns the context and the store it
//! runs on (any [`ControllerStore`]: the real session, or `FakeZk` in unit tests); ZooKeeper watches and session changes only enqueue events
//! (Kafka's ControllerEventManager). Each step reads what it needs, decides with the pure
//! functions in [`super::election`], writes ZooKeeper in an epoch-fenced multi, then sends
//! LeaderAndIsr / UpdateMetadata. A failed epoch check means another controller exists: resign.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use tokio::sync::watch;

use super::channel::{Answer, ControlRequest, ControllerChannel, Transport};
use super::decisions;
use super::election_backoff::{missing_tree_path, ElectionBackoff};
use super::error::ControllerError;
use super::event_manager::{Event, EventQueue, ZNodeWatches};
use super::handle::ControllerConfig;
use super::model::LeaderAndIsr;
use super::partition_state::PartitionState;
use super::replica_changes;
use super::requests::{self, ControllerContext};
use super::state_changes;
use super::stats;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::{BrokerId, ControllerEpoch, ZkVersion};
use crate::zk::paths;

/// The answer to a ControlledShutdown: partitions the broker still leads, or why not.
pub type ShutdownResult = Result<Vec<(String, i32)>, ControllerError>;

/// Per-partition outcome of an ElectLeaders request (`Ok` = elected), or an error for the
/// whole request.
pub type ElectionOutcome = Result<Vec<((String, i32), Result<(), ControllerError>)>, ControllerError>;

/// Why a controlled shutdown could not be handled.
pub(super) enum ShutdownError {
    Refused(ControllerError),
    Zk(ControllerZkError),
}

/// Decided leaderships by partition.
type Decided = Vec<((String, i32), LeaderAndIsr)>;

/// State while active.
pub(super) struct Active {
    pub(super) epoch_version: ZkVersion,
    pub(super) ctx: ControllerContext,
    pub(super) channel: ControllerChannel,
    /// Data watches on each topic's and each live broker's znode; dropped on resignation.
    pub(super) watches: ZNodeWatches,
}

/// The controller of one broker, owned by its event loop task ([`super::handle::start`]).
pub(super) struct Controller<S> {
    pub(super) config: ControllerConfig,
    pub(super) zk: S,
    pub(super) active: Option<Active>,
    /// Its own queue, for watches and callbacks that report back (offline replicas).
    pub(super) events: EventQueue,
    pub(super) state: watch::Sender<Option<ControllerEpoch>>,
    /// Spaces this broker's election attempts after failed ones.
    pub(super) backoff: ElectionBackoff,
    /// The missing ZooKeeper tree was reported (once, until a failover succeeds again).
    pub(super) tree_missing_logged: bool,
    /// How each term's channel reaches brokers.
    pub(super) transport: Transport,
}

pub(super) const NOT_CONTROLLER: ControllerError = ControllerError::NotController;

impl<S: ControllerStore> Controller<S> {
    pub(super) async fn process(&mut self, event: Event) {
        let result = match event {
            Event::Startup | Event::ControllerChange | Event::SessionEstablished => self.elect_with_backoff().await,
            Event::SessionEnded => {
                self.resign("ZooKeeper session ended");
                Ok(())
            }
            Event::BrokerChange => match self.on_broker_change().await {
                // A returning replica may unblock a deletion.
                Ok(()) => self.on_topic_deletion(true).await,
                Err(e) => Err(e),
            },
            Event::TopicDeletion => self.on_topic_deletion(true).await,
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
            Event::IsrChangeNotification => self.on_isr_change_notification().await,
            Event::BrokerModifications { broker } => self.on_broker_modifications(broker).await,
            Event::PartitionModifications { topic } => self.on_partition_modifications(&topic).await,
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
            Event::ReplicasDeleted {
                controller_epoch,
                broker,
                broker_epoch,
                results,
            } => {
                self.on_replicas_deleted(controller_epoch, broker, broker_epoch, &results)
                    .await
            }
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
                    Err(ShutdownError::Refused(e)) => {
                        reply.send(Err(e));
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
        stats::ControllerGauges::of(self.active.as_ref().map(|a| &a.ctx)).publish();
    }

    pub(super) fn resign(&mut self, why: &str) {
        if let Some(mut active) = self.active.take() {
            tracing::warn!(broker = %self.config.broker_id, epoch = active.ctx.epoch, why, "resigning as controller");
            active.channel.clear();
            self.state.send_replace(None);
            metrics::gauge!("kafka_controller_kafkacontroller_activecontrollercount").set(0.0);
        }
    }

    pub(super) async fn maybe_elect(&mut self) -> Result<(), ControllerZkError> {
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
        stats::election_attempt();
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
        let controller_epoch = epoch.0;
        let on_answer: super::channel::AnswerCallback = std::sync::Arc::new(move |broker, answer| {
            events.put(match answer {
                Answer::OfflineReplicas(partitions) => Event::OfflineReplicas { broker, partitions },
                Answer::ReplicasDeleted { broker_epoch, results } => Event::ReplicasDeleted {
                    controller_epoch,
                    broker,
                    broker_epoch,
                    results,
                },
            });
        });
        self.active = Some(Active {
            epoch_version,
            ctx,
            channel: ControllerChannel::with_transport(on_answer, self.transport.clone()),
            watches: ZNodeWatches::default(),
        });
        // Active before the failover, as Kafka sets activeControllerId before
        // onControllerFailover: the failover's UpdateMetadata names this broker as controller,
        // and a client that reads it and sends CreateTopics at once must not get NOT_CONTROLLER.
        // What such a request starts reaches this task's queue behind the failover.
        self.state.send_replace(Some(epoch));
        if let Err(e) = self.on_failover().await {
            if missing_tree_path(&e).is_none() {
                tracing::error!(error = %e, "controller failover failed; moving the controller");
            }
            self.resign("failover failed");
            let _ = self.zk.delete(paths::CONTROLLER, None).await;
            return Err(e);
        }
        metrics::gauge!("kafka_controller_kafkacontroller_activecontrollercount").set(1.0);
        Ok(())
    }

    /// Loads the cluster from ZooKeeper, tells every broker, and elects what needs a leader
    /// (Kafka's onControllerFailover).
    async fn on_failover(&mut self) -> Result<(), ControllerZkError> {
        let (started, zk_before) = (Instant::now(), self.zk.requests());
        // The full read below covers whatever they announced, and every replica gets
        // LeaderAndIsr (a replica in a failed log dir answers KAFKA_STORAGE_ERROR to it).
        self.delete_stale_notifications().await?;
        let brokers = zk_ops::live_brokers(&self.zk).await?;
        let names = zk_ops::topic_names(&self.zk).await?;
        // Watch before reading, so an edit in between is not missed.
        self.watch_topics(&names).await;
        let topics = zk_ops::topic_infos(&self.zk, &names).await?;
        let partitions: Vec<(String, i32)> = topics
            .iter()
            .flat_map(|(t, i)| i.assignment.keys().map(move |p| (t.clone(), *p)))
            .collect();
        let leaderships = zk_ops::leaderships(&self.zk, &partitions).await?;
        // Deletions queued before this controller took over: no elections for them.
        let doomed = zk_ops::topics_to_delete(&self.zk).await?;
        let listener = self.config.inter_broker_listener.clone();
        let me = self.config.broker_id;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        active.ctx.topics_to_delete = doomed.into_iter().filter(|t| topics.contains_key(t)).collect();
        active.ctx.topics = topics;
        active.ctx.leaderships = leaderships;
        for (id, b) in &brokers {
            if let Some(addr) = requests::broker_address(b, &listener) {
                active.channel.add_broker(*id, addr, me);
            }
        }
        let ids: Vec<BrokerId> = brokers.keys().copied().collect();
        active.ctx.live_brokers = brokers;
        active.ctx.initialize_partition_states();
        active.ctx.initialize_replica_states();
        self.watch_brokers(&ids).await;
        // Every broker learns the cluster first, then leaders are (re)announced and elected.
        let all = match self.active.as_ref() {
            Some(active) => active.ctx.all_partitions(),
            None => return Ok(()),
        };
        self.send_update_metadata(&all);
        // Kafka's replica state machine start-up: LeaderAndIsr for every partition with a
        // state, to each of its live replicas.
        let with_state: Vec<(String, i32)> = match self.active.as_ref() {
            Some(active) => all
                .iter()
                .filter(|k| active.ctx.leaderships.contains_key(*k))
                .cloned()
                .collect(),
            None => return Ok(()),
        };
        self.send_leader_and_isr(&with_state, false);
        self.elect_partitions(&all).await?;
        // Resume deletions queued before this controller took over.
        self.on_topic_deletion(true).await?;
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
        for id in &dead {
            active.watches.unwatch(&paths::broker_id(*id));
        }
        active.ctx.live_brokers = now;
        // A bounced broker fails and starts again, as in Kafka's processBrokerChange.
        let failed: Vec<BrokerId> = dead.iter().chain(&bounced).copied().collect();
        let started: Vec<BrokerId> = new.iter().chain(&bounced).copied().collect();
        let lost = active.ctx.broker_replicas(&failed);
        active.ctx.replicas_went_offline(&lost);
        active.ctx.replicas_came_online(&started);
        active.ctx.mark_leaderless_offline();
        let all = active.ctx.all_partitions();
        // Kafka's OfflineReplica transition reads the state znodes of every replica the failed
        // brokers hosted: a leader may have taken one back into its ISR moments ago (say, during
        // a controlled shutdown) and announced it only to ZooKeeper so far.
        let hosted: BTreeSet<(String, i32)> = lost.iter().map(replica_changes::key_of).collect();
        self.watch_brokers(&new).await;
        self.refresh_leaderships(hosted.into_iter().collect()).await?;
        // Dead brokers leave the ISRs (and leadership); partitions without a leader are elected.
        self.elect_partitions(&all).await?;
        // Restarted brokers learn everything and get LeaderAndIsr for their replicas (not for
        // topics being deleted: those get StopReplica from deletion, and a LeaderAndIsr after
        // it would bring an already deleted log back).
        self.send_update_metadata(&all);
        if let Some(active) = self.active.as_ref() {
            for id in &started {
                let theirs: Vec<(String, i32)> = all
                    .iter()
                    .filter(|(t, p)| active.ctx.replicas(t, *p).contains(id) && !active.ctx.is_queued_for_deletion(t))
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
        self.watch_topics(&new).await;
        let infos = zk_ops::topic_infos(&self.zk, &new).await?;
        let partitions: Vec<(String, i32)> = infos
            .iter()
            .flat_map(|(t, i)| i.assignment.keys().map(move |p| (t.clone(), *p)))
            .collect();
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        active.ctx.topics.extend(infos);
        tracing::info!(topics = ?new, partitions = partitions.len(), "new topics");
        self.on_new_partitions(&partitions).await
    }

    /// Kafka's onNewPartitionCreation for partitions just added to the context's assignment.
    /// Normally they have no state yet; one written by hand (or left by an earlier controller)
    /// is taken as it is and announced. The rest get leaders from their live replicas.
    pub(super) async fn on_new_partitions(&mut self, partitions: &[(String, i32)]) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        // A partition that already exists is refused here, so it is not created twice.
        let partitions = active.ctx.change_states(partitions, PartitionState::New);
        active.ctx.create_replicas(&partitions);
        // One listing per topic, then reads only where a partition znode exists.
        let existing = zk_ops::existing_leaderships(&self.zk, &partitions).await?;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let mut announced = Vec::new();
        for (key, l) in existing {
            let online = active.ctx.replica_online(&key, l.leader);
            if online {
                announced.push(key.clone());
            }
            active.ctx.leaderships.insert(key.clone(), l);
            active
                .ctx
                .change_states(std::slice::from_ref(&key), state_changes::state_for(online));
        }
        self.send_leader_and_isr(&announced, true);
        self.send_update_metadata(&announced);
        self.elect_partitions(&partitions).await?;
        if let Some(active) = self.active.as_mut() {
            active.ctx.start_new_replicas(&partitions);
        }
        Ok(())
    }

    /// Decides every partition in `partitions` that needs a change (new, leaderless, or with a
    /// dead member in its ISR), writes ZooKeeper (fenced, batched), and announces the result.
    pub(super) async fn elect_partitions(&mut self, partitions: &[(String, i32)]) -> Result<(), ControllerZkError> {
        let started = Instant::now();
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        // Decide on the cache, re-read the partitions that need a change, decide those again,
        // with the live topic configs of those that could only get an unclean leader.
        let (_, first) = self.decide_elections(&active.ctx, partitions, &BTreeMap::new());
        self.refresh_leaderships(first.into_iter().map(|(k, _)| k).collect())
            .await?;
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let live: BTreeSet<BrokerId> = active.ctx.live_brokers.keys().copied().collect();
        let stuck: BTreeSet<String> = partitions
            .iter()
            .filter(|k| {
                active
                    .ctx
                    .leaderships
                    .get(*k)
                    .is_some_and(|l| decisions::needs_unclean_choice(l, &live))
            })
            .map(|(t, _)| t.clone())
            .collect();
        let broker_unclean = if stuck.is_empty() {
            None
        } else {
            zk_ops::unclean_broker_default(&self.zk, self.config.broker_id).await
        };
        let mut unclean = zk_ops::unclean_overrides(&self.zk, stuck.clone()).await;
        // The topic override wins; else the live broker-level value, else the static one.
        if let Some(v) = broker_unclean {
            for topic in stuck {
                unclean.entry(topic).or_insert(v);
            }
        }
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let (creates, updates) = self.decide_elections(&active.ctx, partitions, &unclean);
        if creates.is_empty() && updates.is_empty() {
            return Ok(());
        }
        self.write_and_announce(started, creates, updates).await
    }

    /// New leaderships for `partitions` that need one (new, leaderless, or with a dead member in
    /// the ISR): (state znodes to create, state znodes to update).
    fn decide_elections(
        &self,
        ctx: &ControllerContext,
        partitions: &[(String, i32)],
        unclean_overrides: &BTreeMap<String, bool>,
    ) -> (Decided, Decided) {
        let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
        let mut creates = Vec::new();
        let mut updates = Vec::new();
        // A topic being deleted keeps its leaders until it is gone (Kafka skips it too): a
        // LeaderAndIsr after its StopReplica(delete) would bring a deleted log back.
        for key in partitions.iter().filter(|k| !ctx.is_queued_for_deletion(&k.0)) {
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
                    let unclean = unclean_overrides
                        .get(&key.0)
                        .copied()
                        .unwrap_or(self.config.unclean_leader_election);
                    if let Some(l) = decisions::existing_partition(&assignment, current, &live, unclean, ctx.epoch) {
                        updates.push((key.clone(), l));
                    }
                }
            }
        }
        (creates, updates)
    }

    /// Writes decided leaderships — new state znodes for `creates`, conditional updates (on each
    /// znode's version) for `updates` — fenced by the controller epoch and in batches well under
    /// ZooKeeper's 1 MB request limit; records them; sends LeaderAndIsr and UpdateMetadata.
    /// A step that elected leaders counts in the election timer, from `started` (when the
    /// step began deciding) to now.
    pub(super) async fn write_and_announce(
        &mut self,
        started: Instant,
        creates: Vec<((String, i32), LeaderAndIsr)>,
        updates: Vec<((String, i32), LeaderAndIsr)>,
    ) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        // The partition state machine vets every decision before it is written.
        let ctx = &active.ctx;
        let legal = |(key, l): &((String, i32), LeaderAndIsr)| ctx.may_change(key, ctx.state_after(key, l));
        let creates: Vec<_> = creates.into_iter().filter(legal).collect();
        let updates: Vec<_> = updates.into_iter().filter(legal).collect();
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
        let (mut elected, mut unclean) = (0, 0);
        for (key, l) in written {
            if l.leader.is_none() {
                metrics::counter!("kastle_controller_offline_partitions_total").increment(1);
            }
            match decisions::leader_change(active.ctx.leaderships.get(&key), &l) {
                decisions::LeaderChange::NotElected => {}
                decisions::LeaderChange::Clean => elected += 1,
                decisions::LeaderChange::Unclean => {
                    tracing::warn!(topic = %key.0, partition = key.1, leader = ?l.leader, "unclean leader election");
                    elected += 1;
                    unclean += 1;
                }
            }
            let state = active.ctx.state_after(&key, &l);
            active.ctx.leaderships.insert(key.clone(), l);
            active.ctx.change_states(std::slice::from_ref(&key), state);
            changed.push(key);
        }
        if elected > 0 {
            stats::leader_election(started.elapsed(), unclean);
        }
        tracing::info!(partitions = changed.len(), elected, "leaders and ISRs written");
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
