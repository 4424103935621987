//! The group APIs as the coordinator serves them, decoded from and encoded to the wire by
//! `server::apis::groups`: JoinGroup and SyncGroup (parked until the rebalance step completes),
//! Heartbeat, LeaveGroup, OffsetCommit (written with acks=all before the cache changes),
//! OffsetFetch, ListGroups, DescribeGroups, DeleteGroups and OffsetDelete.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::coordinator::{GroupCoordinator, Slot};
use super::errors::GroupError;
use super::membership::{JoinOutcome, JoinRequest, SyncOutcome, SyncRequest};
use super::schema::{self, OffsetValue};
use super::state::{GroupState, JoinResult, Member, SyncResult};
use crate::clock::now_ms;

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitEntry {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// What DescribeGroups reports of one group.
#[derive(Debug, Clone, Default)]
pub struct GroupSummary {
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    /// (member, metadata and assignment shown only when the group is Stable).
    pub members: Vec<(Member, Vec<u8>, Vec<u8>)>,
}

fn valid_group_id(id: &str) -> bool {
    !id.is_empty()
}

impl GroupCoordinator {
    /// JoinGroup: answered at once, or when the rebalance completes.
    pub async fn join(self: &Arc<Self>, group_id: &str, req: JoinRequest) -> JoinResult {
        if !valid_group_id(group_id) {
            return JoinResult::error(GroupError::InvalidGroupId, &req.member_id);
        }
        let known_member = !req.member_id.is_empty();
        let (tx, rx) = oneshot::channel();
        let limits = self.config.limits;
        let outcome = self.with_group(group_id, !known_member, move |g, effects, parked| {
            let out = g.join(req, now_ms(), &limits, effects);
            if let JoinOutcome::Parked { member_id } | JoinOutcome::Store { member_id, .. } = &out {
                if let Some(old) = parked.joins.insert((g.id.clone(), member_id.clone()), tx) {
                    let _ = old.send(JoinResult::error(GroupError::RebalanceInProgress, member_id));
                }
            }
            out
        });
        match outcome {
            Ok(JoinOutcome::Now(r)) => r,
            Ok(JoinOutcome::Parked { member_id }) => rx
                .await
                .unwrap_or_else(|_| JoinResult::error(GroupError::NotCoordinator, &member_id)),
            Ok(JoinOutcome::Store { member_id, rejoin }) => {
                // The new member id must be in __consumer_offsets before the member uses it.
                let stored = self.store_group(group_id).await;
                let _ = self.with_group(group_id, false, |g, effects, _| {
                    effects.extend(g.static_member_stored(&rejoin, stored, now_ms()));
                });
                rx.await
                    .unwrap_or_else(|_| JoinResult::error(GroupError::NotCoordinator, &member_id))
            }
            Err(GroupError::GroupIdNotFound) => JoinResult::error(GroupError::UnknownMemberId, ""),
            Err(error) => JoinResult::error(error, ""),
        }
    }

    /// SyncGroup: followers wait for the leader; the leader's assignment is stored first.
    pub async fn sync(self: &Arc<Self>, group_id: &str, req: SyncRequest) -> SyncResult {
        if !valid_group_id(group_id) {
            return SyncResult::error(GroupError::InvalidGroupId);
        }
        let member_id = req.member_id.clone();
        let (tx, rx) = oneshot::channel();
        let key = (group_id.to_string(), member_id.clone());
        let outcome = self.with_group(group_id, false, move |g, _, parked| {
            let out = g.sync(req, now_ms());
            if matches!(out, SyncOutcome::Parked | SyncOutcome::Store { .. }) {
                if let Some(old) = parked.syncs.insert(key, tx) {
                    let _ = old.send(SyncResult::error(GroupError::RebalanceInProgress));
                }
            }
            out
        });
        match outcome {
            Ok(SyncOutcome::Now(r)) => return r,
            Ok(SyncOutcome::Parked) => {}
            Ok(SyncOutcome::Store { generation }) => {
                let stored = self.store_group(group_id).await;
                let limits = self.config.limits;
                let _ = self.with_group(group_id, false, |g, effects, _| {
                    effects.extend(g.assignment_stored(generation, stored, now_ms(), &limits));
                });
            }
            Err(GroupError::GroupIdNotFound) => return SyncResult::error(GroupError::UnknownMemberId),
            Err(error) => return SyncResult::error(error),
        }
        rx.await
            .unwrap_or_else(|_| SyncResult::error(GroupError::NotCoordinator))
    }

    pub fn heartbeat(
        self: &Arc<Self>,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> Result<(), GroupError> {
        match self.with_group(group_id, false, |g, _, _| {
            g.heartbeat(member_id, instance, generation, now_ms())
        }) {
            Ok(answer) => answer,
            Err(GroupError::GroupIdNotFound) => Err(GroupError::UnknownMemberId),
            Err(error) => Err(error),
        }
    }

    /// LeaveGroup for several members (v3+ batches them): an error per member.
    pub fn leave(
        self: &Arc<Self>,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        let limits = self.config.limits;
        match self.with_group(group_id, false, |g, effects, _| {
            members
                .iter()
                .map(|(m, i)| g.leave(m, i.as_deref(), now_ms(), &limits, effects))
                .collect()
        }) {
            Err(GroupError::GroupIdNotFound) => Err(GroupError::UnknownMemberId),
            other => other,
        }
    }

    /// OffsetCommit: checks the member, writes the offsets, then makes them visible.
    pub async fn commit(
        self: &Arc<Self>,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        entries: Vec<CommitEntry>,
        retention_ms: Option<i64>,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        if !valid_group_id(group_id) {
            return Err(GroupError::InvalidGroupId);
        }
        match self.with_group(group_id, false, |g, _, _| {
            g.check_commit(member_id, instance, generation, now_ms())
        }) {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(error),
            Err(GroupError::GroupIdNotFound) if generation < 0 => {}
            Err(GroupError::GroupIdNotFound) => return Err(GroupError::IllegalGeneration),
            Err(error) => return Err(error),
        }
        let now = now_ms();
        let mut answers = Vec::with_capacity(entries.len());
        let mut records = Vec::new();
        let mut values = Vec::new();
        for e in &entries {
            let metadata = e.metadata.clone().unwrap_or_default();
            if metadata.len() > self.config.max_metadata_size {
                answers.push(Err(GroupError::OffsetMetadataTooLarge));
                continue;
            }
            answers.push(Ok(()));
            let value = OffsetValue {
                offset: e.offset,
                leader_epoch: e.leader_epoch,
                metadata,
                commit_timestamp: now,
                expire_timestamp: retention_ms.filter(|r| *r >= 0).map(|r| now + r),
            };
            records.push((
                schema::offset_key(group_id, &e.topic, e.partition),
                Some(schema::offset_value(&value)),
            ));
            values.push(((e.topic.clone(), e.partition), value));
        }
        let partition = self.partition_of(group_id);
        if let Err(error) = self.write(partition, records).await {
            return Ok(answers.into_iter().map(|c| c.and(Err(error.clone()))).collect());
        }
        self.with_group(group_id, true, |g, _, _| g.offsets.extend(values))?;
        Ok(answers)
    }

    /// OffsetFetch: the committed offset of each asked partition (`None` = all the group has).
    pub fn fetch_offsets(
        self: &Arc<Self>,
        group_id: &str,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<(String, i32, Option<OffsetValue>)>, GroupError> {
        let result = self.with_group(group_id, false, |g, _, _| match &partitions {
            Some(ps) => ps
                .iter()
                .map(|(t, p)| (t.clone(), *p, g.offsets.get(&(t.clone(), *p)).cloned()))
                .collect(),
            None => g
                .offsets
                .iter()
                .map(|((t, p), v)| (t.clone(), *p, Some(v.clone())))
                .collect(),
        });
        match result {
            Err(GroupError::GroupIdNotFound) => Ok(partitions
                .unwrap_or_default()
                .into_iter()
                .map(|(t, p)| (t, p, None))
                .collect()),
            other => other,
        }
    }

    /// ListGroups: every group this broker coordinates, optionally only in `states`.
    pub fn list_groups(&self, states: &[GroupState]) -> Result<Vec<(String, String, GroupState)>, GroupError> {
        let inner = self.lock();
        let mut out = Vec::new();
        for slot in inner.slots.values() {
            match slot {
                Slot::Loading { .. } => return Err(GroupError::CoordinatorLoadInProgress),
                Slot::Loaded { groups, .. } => out.extend(
                    groups
                        .values()
                        .filter(|g| states.is_empty() || states.contains(&g.state))
                        .map(|g| (g.id.clone(), g.protocol_type.clone().unwrap_or_default(), g.state)),
                ),
            }
        }
        Ok(out)
    }

    /// DescribeGroups for one group (a group it does not know is reported Dead).
    pub fn describe(self: &Arc<Self>, group_id: &str) -> Result<GroupSummary, GroupError> {
        let result = self.with_group(group_id, false, |g, _, _| {
            let protocol = g.protocol.clone().unwrap_or_default();
            let stable = g.is(GroupState::Stable);
            GroupSummary {
                state: g.state.name().to_string(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                protocol: if stable { protocol.clone() } else { String::new() },
                members: g
                    .members
                    .values()
                    .map(|m| {
                        let (meta, assignment) = if stable {
                            (m.metadata(&protocol), m.assignment.clone())
                        } else {
                            (Vec::new(), Vec::new())
                        };
                        (m.clone(), meta, assignment)
                    })
                    .collect(),
            }
        });
        match result {
            Err(GroupError::GroupIdNotFound) => Ok(GroupSummary {
                state: GroupState::Dead.name().to_string(),
                ..Default::default()
            }),
            other => other,
        }
    }

    /// DeleteGroups: only empty groups; their offsets and record are tombstoned.
    pub async fn delete_group(self: &Arc<Self>, group_id: &str) -> Result<(), GroupError> {
        let doomed = self.with_group(group_id, false, |g, _, _| {
            if !(g.is(GroupState::Empty) || g.is(GroupState::Dead)) {
                return Err(GroupError::NonEmptyGroup);
            }
            Ok(g.offsets.keys().cloned().collect::<Vec<_>>())
        });
        let offsets = match doomed {
            Ok(Ok(offsets)) => offsets,
            Ok(Err(error)) | Err(error) => return Err(error),
        };
        let mut records: Vec<(Vec<u8>, Option<Vec<u8>>)> = offsets
            .iter()
            .map(|(t, p)| (schema::offset_key(group_id, t, *p), None))
            .collect();
        records.push((schema::group_key(group_id), None));
        let partition = self.partition_of(group_id);
        self.write(partition, records).await?;
        if let Some(Slot::Loaded { groups, .. }) = self.lock().slots.get_mut(&partition) {
            if groups
                .get(group_id)
                .is_some_and(|g| g.is(GroupState::Empty) || g.is(GroupState::Dead))
            {
                groups.remove(group_id);
            }
        }
        tracing::info!(group = %group_id, offsets = offsets.len(), "group deleted");
        Ok(())
    }

    /// OffsetDelete: the group must be empty or not subscribed to the partitions' topics.
    pub async fn delete_offsets(
        self: &Arc<Self>,
        group_id: &str,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        let subscribed = self.with_group(group_id, false, |g, _, _| {
            if g.is(GroupState::Dead) {
                return Err(GroupError::GroupIdNotFound);
            }
            if g.protocol_type.as_deref() == Some("consumer") && !g.is(GroupState::Empty) {
                let protocol = g.protocol.clone().unwrap_or_default();
                let topics: Option<BTreeSet<String>> = g
                    .members
                    .values()
                    .map(|m| schema::subscribed_topics(&m.metadata(&protocol)))
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.into_iter().flatten().collect());
                return Ok(topics);
            }
            if !g.is(GroupState::Empty) {
                return Err(GroupError::NonEmptyGroup);
            }
            Ok(Some(BTreeSet::new()))
        });
        let subscribed = match subscribed {
            Ok(Ok(Some(s))) => s,
            Ok(Ok(None)) => return Err(GroupError::NonEmptyGroup),
            Ok(Err(error)) | Err(error) => return Err(error),
        };
        let answers: Vec<Result<(), GroupError>> = partitions
            .iter()
            .map(|(t, _)| {
                if subscribed.contains(t) {
                    Err(GroupError::GroupSubscribedToTopic)
                } else {
                    Ok(())
                }
            })
            .collect();
        let doomed: Vec<(String, i32)> = partitions
            .iter()
            .zip(&answers)
            .filter(|(_, c)| c.is_ok())
            .map(|(k, _)| k.clone())
            .collect();
        let records = doomed
            .iter()
            .map(|(t, p)| (schema::offset_key(group_id, t, *p), None))
            .collect();
        self.write(self.partition_of(group_id), records).await?;
        self.with_group(group_id, false, |g, _, _| {
            for k in &doomed {
                g.offsets.remove(k);
            }
        })
        .ok();
        Ok(answers)
    }
}
