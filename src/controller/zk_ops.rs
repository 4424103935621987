//! The controller's ZooKeeper I/O: the election multi, epoch-fenced writes (every state change
//! is a multi whose first op checks `/controller_epoch` at the version this controller set, so a
//! zombie's writes fail atomically, KAFKA-6082; retried across connection loss by
//! [`super::retry`], so a write applied whose reply was lost is recognised), and batched or concurrent reads for failover
//! (issued together over one session, not one round trip per znode).

use std::collections::{BTreeMap, BTreeSet};

use tokio::task::JoinSet;

use super::model::{LeaderAndIsr, Reassigning, RegisteredBroker, TopicInfo};
use crate::clock::now_ms;
use crate::types::{BrokerId, ControllerEpoch, ZkVersion};
use crate::zk::models::{BrokerRegistration, ControllerEpochZNode, ControllerZNode, TopicAssignment, ZNodePayload};
use crate::zk::paths;
use crate::zk::store::{CreateMode, Op, ZkError, ZkStore};

/// Why a controller ZooKeeper operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ControllerZkError {
    /// The `/controller_epoch` check failed: another controller was elected. Resign.
    #[error("the controller moved (the /controller_epoch check failed)")]
    ControllerMoved,
    #[error(transparent)]
    Zk(#[from] ZkError),
    #[error("znode {path} is malformed: {reason}")]
    Malformed { path: String, reason: String },
}

/// Each topic's `unclean.leader.election.enable` override in `/config/topics/<t>`, read live
/// (topics without one, or whose config cannot be read, are left out: the broker default
/// applies).
pub async fn unclean_overrides<S: ZkStore + Clone>(zk: &S, topics: BTreeSet<String>) -> BTreeMap<String, bool> {
    let client = crate::zk::KafkaZkClient::new(zk.clone());
    let mut out = BTreeMap::new();
    for topic in topics {
        let value = client.topic_config(&topic).await.ok().and_then(|c| unclean_value(&c));
        if let Some(v) = value {
            out.insert(topic, v);
        }
    }
    out
}

fn unclean_value(config: &BTreeMap<String, String>) -> Option<bool> {
    match config
        .get("unclean.leader.election.enable")?
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The dynamic broker-level `unclean.leader.election.enable` in force on controller `id`, read
/// live: its own `/config/brokers/<id>`, else `/config/brokers/<default>` (Kafka's controller
/// sees them through its `DynamicBrokerConfig`); `None` if neither sets it (the static config
/// applies).
pub async fn unclean_broker_default<S: ZkStore + Clone>(zk: &S, id: BrokerId) -> Option<bool> {
    let client = crate::zk::KafkaZkClient::new(zk.clone());
    for entity in [id.to_string(), "<default>".to_string()] {
        if let Some(v) = client
            .entity_config("brokers", &entity)
            .await
            .ok()
            .and_then(|c| unclean_value(&c))
        {
            return Some(v);
        }
    }
    None
}

/// Who `/controller` names, if anyone.
pub async fn active_controller<S: ZkStore>(zk: &S) -> Result<Option<BrokerId>, ControllerZkError> {
    match zk.get_data(paths::CONTROLLER).await {
        Ok((data, _)) => {
            ControllerZNode::decode(&data)
                .map(|c| Some(c.brokerid))
                .map_err(|e| ControllerZkError::Malformed {
                    path: paths::CONTROLLER.into(),
                    reason: e.to_string(),
                })
        }
        Err(ZkError::NoNode { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Tries to become the controller: one multi creating the ephemeral `/controller` and bumping
/// `/controller_epoch` at its expected version. Returns the new epoch and the epoch znode's
/// version (the fencing token), or `None` if someone else won.
pub async fn elect<S: ZkStore>(
    zk: &S,
    me: BrokerId,
) -> Result<Option<(ControllerEpoch, ZkVersion)>, ControllerZkError> {
    if active_controller(zk).await?.is_some() {
        return Ok(None);
    }
    let (epoch, version) = match zk.get_data(paths::CONTROLLER_EPOCH).await {
        Ok((data, stat)) => {
            let epoch = ControllerEpochZNode::decode(&data).map_err(|e| ControllerZkError::Malformed {
                path: paths::CONTROLLER_EPOCH.into(),
                reason: e.to_string(),
            })?;
            (epoch.0, stat.version)
        }
        Err(ZkError::NoNode { .. }) => {
            match zk.create(paths::CONTROLLER_EPOCH, b"0", CreateMode::Persistent).await {
                Ok(_) | Err(ZkError::NodeExists { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            let (data, stat) = zk.get_data(paths::CONTROLLER_EPOCH).await?;
            let epoch = ControllerEpochZNode::decode(&data).map_err(|e| ControllerZkError::Malformed {
                path: paths::CONTROLLER_EPOCH.into(),
                reason: e.to_string(),
            })?;
            (epoch.0, stat.version)
        }
        Err(e) => return Err(e.into()),
    };
    let new_epoch = ControllerEpoch(epoch.0 + 1);
    let payload = ControllerZNode {
        version: 1,
        brokerid: me,
        timestamp: now_ms(),
        kraft_controller_epoch: None,
    };
    let ops = vec![
        Op::Create {
            path: paths::CONTROLLER.into(),
            data: payload.encode(),
            mode: CreateMode::Ephemeral,
        },
        Op::SetData {
            path: paths::CONTROLLER_EPOCH.into(),
            data: ControllerEpochZNode(new_epoch).encode(),
            version: Some(version),
        },
    ];
    match super::retry::multi(zk, ops).await {
        Ok(results) => {
            let stat_version = results
                .iter()
                .find_map(|r| match r {
                    crate::zk::store::OpResult::SetData { stat } => Some(stat.version),
                    _ => None,
                })
                .unwrap_or(ZkVersion(version.0 + 1));
            Ok(Some((new_epoch, stat_version)))
        }
        Err(e) if matches!(e.root(), ZkError::NodeExists { .. } | ZkError::BadVersion { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Runs `ops` after checking `/controller_epoch` is still at `epoch_version`, retried across
/// connection loss within the session and idempotently ([`super::retry`]).
pub async fn fenced<S: ZkStore>(
    zk: &S,
    epoch_version: ZkVersion,
    ops: Vec<Op>,
) -> Result<Vec<crate::zk::store::OpResult>, ControllerZkError> {
    let mut all = Vec::with_capacity(ops.len() + 1);
    all.push(Op::Check {
        path: paths::CONTROLLER_EPOCH.into(),
        version: epoch_version,
    });
    all.extend(ops);
    match super::retry::multi(zk, all).await {
        Ok(mut results) => {
            results.remove(0);
            Ok(results)
        }
        Err(ZkError::MultiFailed { index: 0, .. }) => Err(ControllerZkError::ControllerMoved),
        Err(e) => Err(e.into()),
    }
}

/// Live brokers with their registrations and epochs, read concurrently.
pub async fn live_brokers<S: ZkStore + Clone>(
    zk: &S,
) -> Result<BTreeMap<BrokerId, RegisteredBroker>, ControllerZkError> {
    let ids = zk.children(paths::BROKER_IDS).await?;
    let mut reads = JoinSet::new();
    for id in ids.iter().filter_map(|c| c.parse::<i32>().ok()) {
        let zk = zk.clone();
        reads.spawn(async move { (id, zk.get_data(&paths::broker_id(BrokerId(id))).await) });
    }
    let mut brokers = BTreeMap::new();
    while let Some(joined) = reads.join_next().await {
        let Ok((id, result)) = joined else { continue };
        match result {
            Ok((data, stat)) => {
                let path = paths::broker_id(BrokerId(id));
                let registration = BrokerRegistration::decode(&data).map_err(|e| ControllerZkError::Malformed {
                    path,
                    reason: e.to_string(),
                })?;
                brokers.insert(
                    BrokerId(id),
                    RegisteredBroker {
                        id: BrokerId(id),
                        registration,
                        epoch: stat.czxid,
                    },
                );
            }
            Err(ZkError::NoNode { .. }) => {} // gone between the listing and the read
            Err(e) => return Err(e.into()),
        }
    }
    Ok(brokers)
}

/// One broker's registration, if it is registered.
pub async fn broker<S: ZkStore>(zk: &S, id: BrokerId) -> Result<Option<RegisteredBroker>, ControllerZkError> {
    let path = paths::broker_id(id);
    let (data, stat) = match zk.get_data(&path).await {
        Ok(r) => r,
        Err(ZkError::NoNode { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let registration = BrokerRegistration::decode(&data).map_err(|e| ControllerZkError::Malformed {
        path,
        reason: e.to_string(),
    })?;
    Ok(Some(RegisteredBroker {
        id,
        registration,
        epoch: stat.czxid,
    }))
}

/// Topic names under `/brokers/topics`.
pub async fn topic_names<S: ZkStore>(zk: &S) -> Result<Vec<String>, ControllerZkError> {
    Ok(zk.children(paths::BROKER_TOPICS).await?)
}

/// Assignments of `topics`, read concurrently.
pub async fn topic_infos<S: ZkStore + Clone>(
    zk: &S,
    topics: &[String],
) -> Result<BTreeMap<String, TopicInfo>, ControllerZkError> {
    use base64::Engine;
    let mut reads = JoinSet::new();
    for t in topics {
        let (zk, t) = (zk.clone(), t.clone());
        reads.spawn(async move {
            let r = zk.get_data(&paths::topic(&t)).await;
            (t, r)
        });
    }
    let mut out = BTreeMap::new();
    while let Some(joined) = reads.join_next().await {
        let Ok((topic, result)) = joined else { continue };
        let data = match result {
            Ok((data, _)) => data,
            Err(ZkError::NoNode { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let path = paths::topic(&topic);
        let parsed = TopicAssignment::decode(&data).map_err(|e| ControllerZkError::Malformed {
            path,
            reason: e.to_string(),
        })?;
        let id = parsed
            .topic_id
            .as_deref()
            .and_then(|s| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok())
            .and_then(|b| uuid::Uuid::from_slice(&b).ok())
            .unwrap_or_else(uuid::Uuid::nil);
        let assignment = parsed
            .partitions
            .iter()
            .filter_map(|(p, r)| Some((p.parse().ok()?, r.clone())))
            .collect();
        let reassigning = reassigning_of(&parsed);
        out.insert(
            topic,
            TopicInfo {
                id,
                assignment,
                reassigning,
            },
        );
    }
    Ok(out)
}

/// The partitions a topic znode shows being reassigned: those with adding or removing replicas.
fn reassigning_of(parsed: &TopicAssignment) -> BTreeMap<i32, Reassigning> {
    let mut out: BTreeMap<i32, Reassigning> = BTreeMap::new();
    let lists = |m: &Option<BTreeMap<String, Vec<BrokerId>>>| -> Vec<(i32, Vec<BrokerId>)> {
        m.iter()
            .flatten()
            .filter(|(_, r)| !r.is_empty())
            .filter_map(|(p, r)| Some((p.parse().ok()?, r.clone())))
            .collect()
    };
    for (p, adding) in lists(&parsed.adding_replicas) {
        out.entry(p).or_default().adding = adding;
    }
    for (p, removing) in lists(&parsed.removing_replicas) {
        out.entry(p).or_default().removing = removing;
    }
    out.retain(|p, _| parsed.partitions.contains_key(&p.to_string()));
    out
}

/// The state znodes of `partitions`, read in batches (`multiRead`: a few requests for thousands
/// of partitions, all sent before the first answer is awaited); absent ones are left out.
pub async fn leaderships<S: ZkStore + Clone>(
    zk: &S,
    partitions: &[(String, i32)],
) -> Result<BTreeMap<(String, i32), LeaderAndIsr>, ControllerZkError> {
    let paths: Vec<String> = partitions.iter().map(|(t, p)| paths::partition_state(t, *p)).collect();
    let results = zk.get_data_many(&paths).await?;
    let mut out = BTreeMap::new();
    for (((topic, partition), path), result) in partitions.iter().zip(&paths).zip(results) {
        let (data, stat) = match result {
            Ok(r) => r,
            Err(ZkError::NoNode { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let l = LeaderAndIsr::from_znode(&data, stat.version).map_err(|reason| ControllerZkError::Malformed {
            path: path.clone(),
            reason,
        })?;
        out.insert((topic.clone(), *partition), l);
    }
    Ok(out)
}

/// The partition znodes under `/brokers/topics/<t>/partitions` of each of `topics`, listed
/// concurrently (one request per topic); a topic without that znode is left out.
pub async fn partition_znodes<S: ZkStore + Clone>(
    zk: &S,
    topics: &[String],
) -> Result<BTreeMap<String, BTreeSet<i32>>, ControllerZkError> {
    let mut reads = JoinSet::new();
    for t in topics {
        let (zk, t) = (zk.clone(), t.clone());
        reads.spawn(async move {
            let r = zk.children(&paths::topic_partitions(&t)).await;
            (t, r)
        });
    }
    let mut out = BTreeMap::new();
    while let Some(joined) = reads.join_next().await {
        let Ok((topic, result)) = joined else { continue };
        match result {
            Ok(children) => {
                out.insert(topic, children.iter().filter_map(|c| c.parse().ok()).collect());
            }
            Err(ZkError::NoNode { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// The state znodes of `partitions` that have one, reading only partitions whose partition
/// znode exists (new topics normally have none: one request per topic, not per partition).
pub async fn existing_leaderships<S: ZkStore + Clone>(
    zk: &S,
    partitions: &[(String, i32)],
) -> Result<BTreeMap<(String, i32), LeaderAndIsr>, ControllerZkError> {
    let topics: Vec<String> = partitions
        .iter()
        .map(|(t, _)| t.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let existing = partition_znodes(zk, &topics).await?;
    let present: Vec<(String, i32)> = partitions
        .iter()
        .filter(|(t, p)| existing.get(t).is_some_and(|ps| ps.contains(p)))
        .cloned()
        .collect();
    leaderships(zk, &present).await
}

/// The state znode payload for a leadership decided in `controller_epoch`.
pub fn state_payload(l: &LeaderAndIsr, controller_epoch: i32) -> Vec<u8> {
    l.to_znode(controller_epoch)
}

/// Partitions per multi: ~500 × 3 small ops stay well under ZooKeeper's 1 MB request limit.
const WRITE_BATCH: usize = 500;

/// Creates the state znodes of new partitions (with their parents), fenced. Which parents exist
/// is learnt with one listing per topic (concurrent), missing `partitions` znodes are created in
/// one multi, then the partitions in multis of [`WRITE_BATCH`], all in flight together so that
/// ZooKeeper commits them in one or a few log syncs.
pub async fn create_partition_states<S: ZkStore + Clone>(
    zk: &S,
    epoch: ControllerEpoch,
    epoch_version: ZkVersion,
    states: &[((String, i32), LeaderAndIsr)],
) -> Result<(), ControllerZkError> {
    let topics: Vec<String> = states
        .iter()
        .map(|((t, _), _)| t.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let existing = partition_znodes(zk, &topics).await?;
    let parents: Vec<Op> = topics
        .iter()
        .filter(|t| !existing.contains_key(*t))
        .map(|t| Op::Create {
            path: paths::topic_partitions(t),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        })
        .collect();
    for batch in parents.chunks(WRITE_BATCH * 2) {
        fenced(zk, epoch_version, batch.to_vec()).await?;
    }
    let batches = states.chunks(WRITE_BATCH).map(|chunk| {
        let mut ops = Vec::with_capacity(chunk.len() * 2);
        for ((topic, partition), l) in chunk {
            if !existing.get(topic).is_some_and(|ps| ps.contains(partition)) {
                ops.push(Op::Create {
                    path: paths::topic_partition(topic, *partition),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                });
            }
            ops.push(Op::Create {
                path: paths::partition_state(topic, *partition),
                data: state_payload(l, epoch.0),
                mode: CreateMode::Persistent,
            });
        }
        ops
    });
    fenced_pipelined(zk, epoch_version, batches.collect()).await.map(|_| ())
}

/// Writes new leaderships over existing state znodes (conditional on each zkVersion), fenced, in
/// multis of [`WRITE_BATCH`] all in flight together. Returns the new zkVersions, in order.
pub async fn update_partition_states<S: ZkStore + Clone>(
    zk: &S,
    epoch: ControllerEpoch,
    epoch_version: ZkVersion,
    states: &[((String, i32), LeaderAndIsr)],
) -> Result<Vec<i32>, ControllerZkError> {
    let batches = states
        .chunks(WRITE_BATCH)
        .map(|chunk| {
            chunk
                .iter()
                .map(|((t, p), l)| Op::SetData {
                    path: paths::partition_state(t, *p),
                    data: state_payload(l, epoch.0),
                    version: Some(ZkVersion(l.zk_version)),
                })
                .collect()
        })
        .collect();
    let results = fenced_pipelined(zk, epoch_version, batches).await?;
    Ok(results
        .into_iter()
        .flatten()
        .map(|r| match r {
            crate::zk::store::OpResult::SetData { stat } => stat.version.0,
            _ => -1,
        })
        .collect())
}

/// Runs each batch as its own fenced multi, all concurrently; the results in batch order, or the
/// first batch's error (others may have been applied: each batch is atomic, not the whole).
async fn fenced_pipelined<S: ZkStore + Clone>(
    zk: &S,
    epoch_version: ZkVersion,
    batches: Vec<Vec<Op>>,
) -> Result<Vec<Vec<crate::zk::store::OpResult>>, ControllerZkError> {
    let mut writes = JoinSet::new();
    for (i, ops) in batches.into_iter().enumerate().filter(|(_, ops)| !ops.is_empty()) {
        let zk = zk.clone();
        writes.spawn(async move { (i, fenced(&zk, epoch_version, ops).await) });
    }
    let mut done = BTreeMap::new();
    while let Some(joined) = writes.join_next().await {
        let (i, result) = joined.map_err(|e| ZkError::Other {
            path: "/".into(),
            reason: format!("a ZooKeeper write task failed: {e}"),
        })?;
        done.insert(i, result);
    }
    done.into_values().collect()
}

/// Topics queued for deletion under `/admin/delete_topics`.
pub async fn topics_to_delete<S: ZkStore>(zk: &S) -> Result<Vec<String>, ControllerZkError> {
    match zk.children(paths::DELETE_TOPICS).await {
        Ok(c) => Ok(c),
        Err(ZkError::NoNode { .. }) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Removes a deleted topic's znodes (state znodes, partitions, the topic, its config, the
/// deletion marker) in one fenced multi.
pub async fn delete_topic_znodes<S: ZkStore>(
    zk: &S,
    epoch_version: ZkVersion,
    topic: &str,
    partitions: &[i32],
) -> Result<(), ControllerZkError> {
    let mut ops = Vec::new();
    for p in partitions {
        for path in [paths::partition_state(topic, *p), paths::topic_partition(topic, *p)] {
            if zk.exists(&path).await?.is_some() {
                ops.push(Op::Delete { path, version: None });
            }
        }
    }
    for path in [
        paths::topic_partitions(topic),
        paths::topic(topic),
        paths::config_entity("topics", topic),
        paths::delete_topic(topic),
    ] {
        if zk.exists(&path).await?.is_some() {
            ops.push(Op::Delete { path, version: None });
        }
    }
    fenced(zk, epoch_version, ops).await.map(|_| ())
}

/// Rewrites the partitions of `/brokers/topics/<t>` (conditional on its version, fenced),
/// keeping its topic id: how Kafka's admin path adds partitions, and how the controller puts
/// back an assignment edited while the topic is being deleted.
pub async fn write_assignment<S: ZkStore>(
    zk: &S,
    epoch_version: ZkVersion,
    topic: &str,
    assignment: &BTreeMap<i32, Vec<BrokerId>>,
    reassigning: &BTreeMap<i32, Reassigning>,
) -> Result<(), ControllerZkError> {
    let path = paths::topic(topic);
    let (data, stat) = zk.get_data(&path).await?;
    let mut parsed = TopicAssignment::decode(&data).map_err(|e| ControllerZkError::Malformed {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    parsed.partitions = assignment.iter().map(|(p, r)| (p.to_string(), r.clone())).collect();
    // Version 2+ carries the reassignment state (KIP-455); Kafka writes both maps, empty when idle.
    parsed.version = parsed.version.max(2);
    let map = |f: fn(&Reassigning) -> &Vec<BrokerId>| {
        Some(
            reassigning
                .iter()
                .filter(|(_, r)| !f(r).is_empty())
                .map(|(p, r)| (p.to_string(), f(r).clone()))
                .collect(),
        )
    };
    parsed.adding_replicas = map(|r| &r.adding);
    parsed.removing_replicas = map(|r| &r.removing);
    let op = Op::SetData {
        path,
        data: parsed.encode(),
        version: Some(stat.version),
    };
    fenced(zk, epoch_version, vec![op]).await.map(|_| ())
}

/// The children of a notification parent (`/isr_change_notification`,
/// `/log_dir_event_notification`); none if the parent does not exist.
pub async fn notification_names<S: ZkStore>(zk: &S, parent: &str) -> Result<Vec<String>, ControllerZkError> {
    match zk.children(parent).await {
        Ok(names) => Ok(names),
        Err(ZkError::NoNode { .. }) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The payloads of `parent`'s children `names`, read concurrently; ones gone meanwhile are
/// left out.
pub async fn notification_payloads<S: ZkStore + Clone>(
    zk: &S,
    parent: &str,
    names: &[String],
) -> Result<Vec<(String, Vec<u8>)>, ControllerZkError> {
    let mut reads = JoinSet::new();
    for name in names {
        let (zk, name, path) = (zk.clone(), name.clone(), paths::child(parent, name));
        reads.spawn(async move { (name, zk.get_data(&path).await) });
    }
    let mut out = Vec::with_capacity(names.len());
    while let Some(joined) = reads.join_next().await {
        let Ok((name, result)) = joined else { continue };
        match result {
            Ok((data, _)) => out.push((name, data)),
            Err(ZkError::NoNode { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    out.sort();
    Ok(out)
}

/// Deletes `parent`'s children `names`, fenced, in multis well under ZooKeeper's 1 MB request
/// limit. One already gone (an operator, or a notification handled twice) does not stop the
/// rest: that batch is retried one znode at a time, ignoring the missing ones, as Kafka's
/// separate deletes do.
pub async fn delete_notifications<S: ZkStore>(
    zk: &S,
    epoch_version: ZkVersion,
    parent: &str,
    names: &[String],
) -> Result<(), ControllerZkError> {
    for chunk in names.chunks(1000) {
        let ops: Vec<Op> = chunk
            .iter()
            .map(|n| Op::Delete {
                path: paths::child(parent, n),
                version: None,
            })
            .collect();
        match fenced(zk, epoch_version, ops.clone()).await {
            Ok(_) => {}
            Err(ControllerZkError::Zk(e)) if matches!(e.root(), ZkError::NoNode { .. }) => {
                for op in ops {
                    match fenced(zk, epoch_version, vec![op]).await {
                        Ok(_) => {}
                        Err(ControllerZkError::Zk(e)) if matches!(e.root(), ZkError::NoNode { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `/admin/preferred_replica_election`'s data, `None` when it does not exist.
pub async fn preferred_replica_election<S: ZkStore>(zk: &S) -> Result<Option<Vec<u8>>, ControllerZkError> {
    match zk.get_data(paths::PREFERRED_REPLICA_ELECTION).await {
        Ok((data, _)) => Ok(Some(data)),
        Err(ZkError::NoNode { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Deletes `/admin/preferred_replica_election`, fenced; already gone counts as deleted.
pub async fn delete_preferred_replica_election<S: ZkStore>(
    zk: &S,
    epoch_version: ZkVersion,
) -> Result<(), ControllerZkError> {
    let op = Op::Delete {
        path: paths::PREFERRED_REPLICA_ELECTION.into(),
        version: None,
    };
    match fenced(zk, epoch_version, vec![op]).await {
        Err(ControllerZkError::Zk(e)) if matches!(e.root(), ZkError::NoNode { .. }) => Ok(()),
        result => result.map(|_| ()),
    }
}

/// `/admin/reassign_partitions`' data, `None` when it does not exist.
pub async fn reassign_partitions<S: ZkStore>(zk: &S) -> Result<Option<Vec<u8>>, ControllerZkError> {
    match zk.get_data(paths::REASSIGN_PARTITIONS).await {
        Ok((data, _)) => Ok(Some(data)),
        Err(ZkError::NoNode { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Sets `/admin/reassign_partitions` to `data`, or deletes it (`None`; already gone counts as
/// deleted), fenced. A znode deleted meanwhile is not re-created: the tool that wrote it is done.
pub async fn write_reassign_partitions<S: ZkStore>(
    zk: &S,
    epoch_version: ZkVersion,
    data: Option<Vec<u8>>,
) -> Result<(), ControllerZkError> {
    let path = paths::REASSIGN_PARTITIONS.to_string();
    let op = match data {
        Some(data) => Op::SetData {
            path,
            data,
            version: None,
        },
        None => Op::Delete { path, version: None },
    };
    match fenced(zk, epoch_version, vec![op]).await {
        Err(ControllerZkError::Zk(e)) if matches!(e.root(), ZkError::NoNode { .. }) => Ok(()),
        result => result.map(|_| ()),
    }
}

/// [`write_assignment`] for several topics at once (a reassignment of many).
pub async fn write_assignments<S: ZkStore + Clone>(
    zk: &S,
    epoch_version: ZkVersion,
    writes: &[super::core::AssignmentWrite],
) -> Result<(), ControllerZkError> {
    let mut all = JoinSet::new();
    for w in writes.iter().cloned() {
        let zk = zk.clone();
        all.spawn(async move { write_assignment(&zk, epoch_version, &w.topic, &w.assignment, &w.reassigning).await });
    }
    let mut first = Ok(());
    while let Some(joined) = all.join_next().await {
        let result = joined.unwrap_or_else(|e| {
            Err(ControllerZkError::Zk(ZkError::Other {
                path: paths::BROKER_TOPICS.into(),
                reason: e.to_string(),
            }))
        });
        // A fencing failure wins: the shell must resign, whatever else failed.
        if first.is_ok() || matches!(result, Err(ControllerZkError::ControllerMoved)) {
            first = result;
        }
    }
    first
}
