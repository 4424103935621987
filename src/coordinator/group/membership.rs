//! The classic group protocol's requests applied to a [`Group`]: JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, and the membership check of OffsetCommit. Pure: each returns an
//! immediate answer (or says the request is parked, or parked until the group record is stored)
//! plus the effects for other members.
//! The rules and error codes are those of Kafka 3.9's `GroupCoordinator`.

use super::errors::GroupError;
use super::state::{Effect, Group, GroupLimits, GroupState, JoinResult, Member, SyncResult};

/// A JoinGroup request, decoded.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Vec<u8>)>,
    /// v4+: a new dynamic member must first get a member id (KIP-394).
    pub require_known_member_id: bool,
    /// v9+: a static leader rejoining a stable group keeps the assignment (KIP-814).
    pub supports_skip_assignment: bool,
}

/// A SyncGroup request, decoded.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Vec<u8>)>,
}

/// What a JoinGroup did: an answer now, or parked (the coordinator keeps the request under
/// `member_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinOutcome {
    Now(JoinResult),
    Parked {
        member_id: String,
    },
    /// A static member rejoined a Stable group without a rebalance: park the request under
    /// `member_id`, store the group, then call [`Group::static_member_stored`].
    Store {
        member_id: String,
        rejoin: StaticRejoin,
    },
}

/// A static member's replacement waiting for the group record to be stored: what to answer
/// and what to restore if the write fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticRejoin {
    /// The member as it was before (old member id, protocols and timeouts).
    pub old: Member,
    pub new_member_id: String,
    /// The leader before the replacement.
    pub old_leader: Option<String>,
    pub supports_skip_assignment: bool,
}

/// What a SyncGroup did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncOutcome {
    Now(SyncResult),
    Parked,
    /// The leader's assignment was taken; park it and store the group, then call
    /// [`Group::assignment_stored`].
    Store {
        generation: i32,
    },
}

/// How long a new member may wait in its first JoinGroup (Kafka's `NewMemberJoinTimeoutMs`).
pub const NEW_MEMBER_JOIN_TIMEOUT_MS: i64 = 5 * 60 * 1000;

fn new_member_id(client_id: &str, instance: Option<&str>) -> String {
    format!("{}-{}", instance.unwrap_or(client_id), uuid::Uuid::new_v4())
}

impl Group {
    /// Checks the static member `instance` is `member_id` (not fenced by a newer one).
    fn fenced(&self, member_id: &str, instance: Option<&str>) -> bool {
        instance.is_some_and(|i| self.static_members.get(i).is_some_and(|m| m != member_id))
    }

    /// JoinGroup (Kafka's `handleJoinGroup`).
    pub fn join(&mut self, req: JoinRequest, now: i64, limits: &GroupLimits, effects: &mut Vec<Effect>) -> JoinOutcome {
        let fail = |error: GroupError, id: &str| JoinOutcome::Now(JoinResult::error(error, id));
        if req.session_timeout_ms < limits.min_session_timeout_ms
            || req.session_timeout_ms > limits.max_session_timeout_ms
        {
            return fail(GroupError::InvalidSessionTimeout, &req.member_id);
        }
        if self.is(GroupState::Dead) {
            return fail(GroupError::CoordinatorNotAvailable, &req.member_id);
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return fail(GroupError::InconsistentGroupProtocol, &req.member_id);
        }
        if req.member_id.is_empty() {
            self.join_unknown(req, now, limits, effects)
        } else {
            self.join_known(req, now, limits, effects)
        }
    }

    fn join_unknown(
        &mut self,
        req: JoinRequest,
        now: i64,
        limits: &GroupLimits,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        let instance = req.group_instance_id.clone();
        if let Some(old_id) = instance.as_ref().and_then(|i| self.static_members.get(i)).cloned() {
            return self.replace_static_member(&old_id, req, now, limits, effects);
        }
        if self.members.len() >= limits.max_size {
            return JoinOutcome::Now(JoinResult::error(GroupError::GroupMaxSizeReached, ""));
        }
        let member_id = new_member_id(&req.client_id, instance.as_deref());
        if req.require_known_member_id && instance.is_none() {
            // KIP-394: hand out the id; the member must come back with it.
            let deadline = now + i64::from(req.session_timeout_ms);
            self.pending_members.insert(member_id.clone(), deadline);
            return JoinOutcome::Now(JoinResult::error(GroupError::MemberIdRequired, &member_id));
        }
        self.add_member_and_rebalance(member_id, req, now, limits, effects)
    }

    fn join_known(
        &mut self,
        req: JoinRequest,
        now: i64,
        limits: &GroupLimits,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        let member_id = req.member_id.clone();
        if self.pending_members.remove(&member_id).is_some() {
            return self.add_member_and_rebalance(member_id, req, now, limits, effects);
        }
        if self.fenced(&member_id, req.group_instance_id.as_deref()) {
            return JoinOutcome::Now(JoinResult::error(GroupError::FencedInstanceId, &member_id));
        }
        let Some(member) = self.members.get(&member_id) else {
            return JoinOutcome::Now(JoinResult::error(GroupError::UnknownMemberId, &member_id));
        };
        let unchanged = member.protocols == req.protocols;
        let is_leader = self.leader.as_deref() == Some(member_id.as_str());
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member(&member_id, &req, now);
                self.maybe_complete_join(now, limits, effects);
                self.parked_or_done(member_id, effects)
            }
            GroupState::CompletingRebalance if unchanged => {
                // The JoinGroup response was lost: send it again, to the leader with the
                // members it must assign (librdkafka leaders do send a second JoinGroup).
                JoinOutcome::Now(self.current_join_result(&member_id, is_leader))
            }
            GroupState::Stable if unchanged && !is_leader => {
                self.touch(&member_id, now);
                JoinOutcome::Now(self.current_join_result(&member_id, false))
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member(&member_id, &req, now);
                self.prepare_rebalance(now, limits, effects);
                self.maybe_complete_join(now, limits, effects);
                self.parked_or_done(member_id, effects)
            }
            GroupState::Empty | GroupState::Dead => {
                JoinOutcome::Now(JoinResult::error(GroupError::UnknownMemberId, &member_id))
            }
        }
    }

    /// A static member came back with a new process (Kafka's `updateStaticMemberAndRebalance`):
    /// it takes over the old member id's place and assignment, and the old id is fenced. In a
    /// Stable group whose protocol stays the same there is no rebalance: the group is stored
    /// (so a new coordinator knows the new id) and the member then syncs its old assignment,
    /// whatever its metadata and whether or not it leads.
    fn replace_static_member(
        &mut self,
        old_id: &str,
        req: JoinRequest,
        now: i64,
        limits: &GroupLimits,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        let Some(old) = self.members.remove(old_id) else {
            return JoinOutcome::Now(JoinResult::error(GroupError::UnknownMemberId, ""));
        };
        let current_leader = self.leader.clone();
        let new_id = new_member_id(&req.client_id, req.group_instance_id.as_deref());
        if old.awaiting_join {
            effects.push(Effect::JoinDone {
                member_id: old_id.to_string(),
                result: JoinResult::error(GroupError::FencedInstanceId, old_id),
            });
        }
        if old.awaiting_sync {
            effects.push(Effect::SyncDone {
                member_id: old_id.to_string(),
                result: SyncResult::error(GroupError::FencedInstanceId),
            });
        }
        let mut member = old.clone();
        member.member_id = new_id.clone();
        member.awaiting_join = false;
        member.awaiting_sync = false;
        self.members.insert(new_id.clone(), member);
        if let Some(i) = &req.group_instance_id {
            self.static_members.insert(i.clone(), new_id.clone());
        }
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.clone());
        }
        // The new process waits in JoinGroup like any member (Kafka's updateMember with a callback).
        self.update_member(&new_id, &req, now);
        match self.state {
            GroupState::Stable if self.select_protocol() == self.protocol => {
                tracing::info!(
                    group = %self.id,
                    instance = ?req.group_instance_id,
                    member = %new_id,
                    generation = self.generation,
                    "static member rejoined a stable group: it keeps its assignment, no rebalance"
                );
                let mut old = old;
                old.awaiting_join = false;
                old.awaiting_sync = false;
                JoinOutcome::Store {
                    member_id: new_id.clone(),
                    rejoin: StaticRejoin {
                        old,
                        new_member_id: new_id,
                        old_leader: current_leader,
                        supports_skip_assignment: req.supports_skip_assignment,
                    },
                }
            }
            GroupState::PreparingRebalance => {
                self.maybe_complete_join(now, limits, effects);
                self.parked_or_done(new_id, effects)
            }
            // The protocol would change, or the leader may already be assigning for the old
            // member id (CompletingRebalance): a new rebalance.
            _ => {
                self.prepare_rebalance(now, limits, effects);
                self.maybe_complete_join(now, limits, effects);
                self.parked_or_done(new_id, effects)
            }
        }
    }

    /// The group record written for a static member's rejoin (`JoinOutcome::Store`) was stored
    /// (`Ok`) or not (`Err`): the parked JoinGroup gets the current generation, or the
    /// replacement is undone and it gets the error. Nothing happens if a rebalance took the
    /// request over meanwhile (it answers it) or the member was replaced again.
    pub fn static_member_stored(
        &mut self,
        rejoin: &StaticRejoin,
        outcome: Result<(), GroupError>,
        now: i64,
    ) -> Vec<Effect> {
        let id = rejoin.new_member_id.clone();
        let waiting = self.is(GroupState::Stable) && self.members.get(&id).is_some_and(|m| m.awaiting_join);
        if !waiting {
            return Vec::new();
        }
        if let Some(m) = self.members.get_mut(&id) {
            m.awaiting_join = false;
        }
        let result = match outcome {
            Ok(()) if rejoin.supports_skip_assignment => {
                // JoinGroup v9+ (KIP-814): a static leader learns it leads but skips assigning.
                let is_leader = self.leader.as_deref() == Some(id.as_str());
                JoinResult {
                    skip_assignment: is_leader,
                    ..self.current_join_result(&id, is_leader)
                }
            }
            // Before v9 the old leader id is returned, so that a restarted leader does not see
            // itself as leader and assign for a generation that is already stable.
            Ok(()) => JoinResult {
                leader: rejoin.old_leader.clone().unwrap_or_default(),
                ..self.current_join_result(&id, false)
            },
            Err(error) => {
                tracing::warn!(group = %self.id, %error, "storing a static member's rejoin failed; undone");
                self.members.remove(&id);
                let mut old = rejoin.old.clone();
                old.heartbeat_deadline = now + i64::from(old.session_timeout_ms);
                if let Some(i) = &old.group_instance_id {
                    self.static_members.insert(i.clone(), old.member_id.clone());
                }
                if self.leader.as_deref() == Some(id.as_str()) {
                    self.leader = Some(old.member_id.clone());
                }
                self.members.insert(old.member_id.clone(), old);
                JoinResult {
                    error: Some(error),
                    generation: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol.clone(),
                    leader: rejoin.old_leader.clone().unwrap_or_default(),
                    ..Default::default()
                }
            }
        };
        vec![Effect::JoinDone { member_id: id, result }]
    }

    fn add_member_and_rebalance(
        &mut self,
        member_id: String,
        req: JoinRequest,
        now: i64,
        limits: &GroupLimits,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if let Some(i) = &req.group_instance_id {
            self.static_members.insert(i.clone(), member_id.clone());
        }
        self.members.insert(
            member_id.clone(),
            Member {
                member_id: member_id.clone(),
                group_instance_id: req.group_instance_id.clone(),
                client_id: req.client_id.clone(),
                client_host: req.client_host.clone(),
                rebalance_timeout_ms: req.rebalance_timeout_ms,
                session_timeout_ms: req.session_timeout_ms,
                protocols: req.protocols.clone(),
                assignment: Vec::new(),
                awaiting_join: true,
                awaiting_sync: false,
                // Kafka's NewMemberJoinTimeoutMs: a new member parked in JoinGroup has five
                // minutes, not its session, for the rebalance to complete (a slow rebalance
                // must not expire the very member that started it).
                heartbeat_deadline: now + NEW_MEMBER_JOIN_TIMEOUT_MS,
                is_new: true,
            },
        );
        if let Some(delay) = self.initial_delay.as_mut() {
            delay.new_member_added = true;
        }
        match self.state {
            GroupState::PreparingRebalance => {}
            _ => self.prepare_rebalance(now, limits, effects),
        }
        if let Some(delay) = self.initial_delay.as_mut() {
            // The member that starts the delay is not "added during" it.
            delay.new_member_added = delay.new_member_added && self.members.len() > 1;
        }
        self.maybe_complete_join(now, limits, effects);
        self.parked_or_done(member_id, effects)
    }

    fn update_member(&mut self, member_id: &str, req: &JoinRequest, now: i64) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.protocols = req.protocols.clone();
            m.session_timeout_ms = req.session_timeout_ms;
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            m.client_id = req.client_id.clone();
            m.client_host = req.client_host.clone();
            m.awaiting_join = true;
            m.heartbeat_deadline = now + i64::from(req.session_timeout_ms);
        }
    }

    /// If the join completed while handling this request, its answer is among `effects`:
    /// take it out and answer now; else the request stays parked.
    fn parked_or_done(&self, member_id: String, effects: &mut Vec<Effect>) -> JoinOutcome {
        let found = effects
            .iter()
            .position(|e| matches!(e, Effect::JoinDone { member_id: m, .. } if *m == member_id));
        match found.map(|i| effects.remove(i)) {
            Some(Effect::JoinDone { result, .. }) => JoinOutcome::Now(result),
            _ => JoinOutcome::Parked { member_id },
        }
    }

    /// The current generation's JoinGroup answer; `with_members` for the leader's view.
    fn current_join_result(&self, member_id: &str, with_members: bool) -> JoinResult {
        let protocol = self.protocol.clone().unwrap_or_default();
        JoinResult {
            error: None,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            members: if with_members {
                self.members
                    .values()
                    .map(|m| (m.member_id.clone(), m.group_instance_id.clone(), m.metadata(&protocol)))
                    .collect()
            } else {
                Vec::new()
            },
            skip_assignment: false,
        }
    }

    fn touch(&mut self, member_id: &str, now: i64) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.heartbeat_deadline = now + i64::from(m.session_timeout_ms);
        }
    }

    /// Checks a request from a member of the current generation: `Err` when it is not.
    fn check_member(&self, member_id: &str, instance: Option<&str>, generation: i32) -> Result<(), GroupError> {
        if self.fenced(member_id, instance) {
            return Err(GroupError::FencedInstanceId);
        }
        if !self.members.contains_key(member_id) {
            return Err(GroupError::UnknownMemberId);
        }
        if generation != self.generation {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(())
    }

    /// SyncGroup (Kafka's `handleSyncGroup`).
    pub fn sync(&mut self, req: SyncRequest, now: i64) -> SyncOutcome {
        let fail = |error| SyncOutcome::Now(SyncResult::error(error));
        if self.is(GroupState::Dead) {
            return fail(GroupError::CoordinatorNotAvailable);
        }
        if self.is(GroupState::Empty) {
            return fail(GroupError::UnknownMemberId);
        }
        if let Err(error) = self.check_member(&req.member_id, req.group_instance_id.as_deref(), req.generation) {
            return fail(error);
        }
        let type_mismatch = req
            .protocol_type
            .as_ref()
            .is_some_and(|t| Some(t) != self.protocol_type.as_ref());
        let name_mismatch = req
            .protocol_name
            .as_ref()
            .is_some_and(|n| Some(n) != self.protocol.as_ref());
        if type_mismatch || name_mismatch {
            return fail(GroupError::InconsistentGroupProtocol);
        }
        self.touch(&req.member_id, now);
        match self.state {
            GroupState::PreparingRebalance => fail(GroupError::RebalanceInProgress),
            GroupState::CompletingRebalance => {
                if let Some(m) = self.members.get_mut(&req.member_id) {
                    m.awaiting_sync = true;
                }
                if self.leader.as_deref() != Some(req.member_id.as_str()) {
                    return SyncOutcome::Parked;
                }
                for m in self.members.values_mut() {
                    m.assignment = req
                        .assignments
                        .iter()
                        .find(|(id, _)| *id == m.member_id)
                        .map(|(_, a)| a.clone())
                        .unwrap_or_default();
                }
                SyncOutcome::Store {
                    generation: self.generation,
                }
            }
            GroupState::Stable => SyncOutcome::Now(self.sync_result(&req.member_id)),
            GroupState::Empty | GroupState::Dead => fail(GroupError::UnknownMemberId),
        }
    }

    fn sync_result(&self, member_id: &str) -> SyncResult {
        SyncResult {
            error: None,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            assignment: self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    /// The group record of `generation` was written (`Ok`) or not (`Err`): the group
    /// becomes Stable and every parked SyncGroup gets its assignment, or they all fail and the
    /// group rebalances. Nothing happens if the group moved on meanwhile.
    pub fn assignment_stored(
        &mut self,
        generation: i32,
        outcome: Result<(), GroupError>,
        now: i64,
        limits: &GroupLimits,
    ) -> Vec<Effect> {
        let mut effects = Vec::new();
        if generation != self.generation || !self.is(GroupState::CompletingRebalance) {
            return effects;
        }
        match outcome {
            Ok(()) => {
                self.transition(GroupState::Stable, now);
                self.sync_deadline = None;
                let ids: Vec<String> = self
                    .members
                    .values()
                    .filter(|m| m.awaiting_sync)
                    .map(|m| m.member_id.clone())
                    .collect();
                for id in ids {
                    let result = self.sync_result(&id);
                    if let Some(m) = self.members.get_mut(&id) {
                        // Its session was on hold while it waited: a fresh one starts now.
                        m.awaiting_sync = false;
                        m.heartbeat_deadline = now + i64::from(m.session_timeout_ms);
                    }
                    effects.push(Effect::SyncDone { member_id: id, result });
                }
            }
            Err(error) => {
                self.reset_syncs(error, now, &mut effects);
                self.prepare_rebalance(now, limits, &mut effects);
                self.maybe_complete_join(now, limits, &mut effects);
            }
        }
        effects
    }

    /// Heartbeat (Kafka's `handleHeartbeat`).
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        match self.state {
            GroupState::Dead => return Err(GroupError::CoordinatorNotAvailable),
            GroupState::Empty => return Err(GroupError::UnknownMemberId),
            _ => {}
        }
        self.check_member(member_id, instance, generation)?;
        self.touch(member_id, now);
        if self.is(GroupState::PreparingRebalance) {
            Err(GroupError::RebalanceInProgress)
        } else {
            Ok(())
        }
    }

    /// LeaveGroup for one member, identified by member id or (static) instance id.
    pub fn leave(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        now: i64,
        limits: &GroupLimits,
        effects: &mut Vec<Effect>,
    ) -> Result<(), GroupError> {
        if self.is(GroupState::Dead) {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let id = match instance {
            Some(i) => match self.static_members.get(i) {
                Some(known) if member_id.is_empty() || known == member_id => known.clone(),
                Some(_) => return Err(GroupError::FencedInstanceId),
                None => return Err(GroupError::UnknownMemberId),
            },
            None => member_id.to_string(),
        };
        if self.pending_members.remove(&id).is_some() {
            self.maybe_complete_join(now, limits, effects);
            return Ok(());
        }
        if !self.members.contains_key(&id) {
            return Err(GroupError::UnknownMemberId);
        }
        self.member_left(&id, now, limits, effects);
        Ok(())
    }

    /// Whether an OffsetCommit from this member may go ahead (Kafka's `handleCommitOffsets`):
    /// an empty group committed to without a generation (a consumer with `assign()`) always may.
    pub fn check_commit(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        if self.is(GroupState::Dead) {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if generation < 0 && self.is(GroupState::Empty) {
            return Ok(());
        }
        self.check_member(member_id, instance, generation)?;
        if self.is(GroupState::CompletingRebalance) {
            return Err(GroupError::RebalanceInProgress);
        }
        self.touch(member_id, now);
        Ok(())
    }
}
