//! One consumer group as Kafka's classic coordinator keeps it (`GroupMetadata` plus the state
//! transitions of `GroupCoordinator`), as pure logic: every method takes `now` in milliseconds
//! and returns what the caller must do (answer a parked JoinGroup or SyncGroup, store the group
//! record) instead of doing I/O. The coordinator (`coordinator.rs`) owns the parked requests,
//! the timers and the writes to `__consumer_offsets`.
//!
//! States: Empty → PreparingRebalance → CompletingRebalance → Stable, and Dead once deleted or
//! unloaded. Membership rules (`membership.rs`) follow Kafka 3.9's classic protocol, including
//! KIP-394 (MEMBER_ID_REQUIRED), KIP-345 (static members) and the initial rebalance delay.

use std::collections::BTreeMap;

use super::errors::GroupError;
use super::schema::{GroupValue, OffsetValue, StoredMember};

/// Kafka's group states, with the names DescribeGroups and ListGroups report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    pub fn parse(name: &str) -> Option<GroupState> {
        [
            GroupState::Empty,
            GroupState::PreparingRebalance,
            GroupState::CompletingRebalance,
            GroupState::Stable,
            GroupState::Dead,
        ]
        .into_iter()
        .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}

/// One member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// (protocol name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Vec<u8>)>,
    pub assignment: Vec<u8>,
    /// A JoinGroup of this member is parked until the rebalance completes.
    pub awaiting_join: bool,
    /// A SyncGroup of this member is parked until the leader's assignment is stored.
    pub awaiting_sync: bool,
    /// The member is removed when this passes without a heartbeat (or any other request).
    pub heartbeat_deadline: i64,
    /// Joined in the current rebalance: it leaves if it does not rejoin before its session ends.
    pub is_new: bool,
}

impl Member {
    /// Whether its session can end now (Kafka's `hasSatisfiedHeartbeat`): a member parked in
    /// JoinGroup or SyncGroup is alive, unless it is new and never came back to join.
    pub fn session_counts(&self) -> bool {
        self.is_new || !(self.awaiting_join || self.awaiting_sync)
    }

    pub fn metadata(&self, protocol: &str) -> Vec<u8> {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

/// The initial rebalance delay of a group that was empty (Kafka's `InitialDelayedJoin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitialDelay {
    pub deadline: i64,
    pub remaining_ms: i64,
    pub new_member_added: bool,
}

/// Group settings from the broker config.
#[derive(Debug, Clone, Copy)]
pub struct GroupLimits {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i32,
    pub max_size: usize,
}

impl Default for GroupLimits {
    fn default() -> Self {
        GroupLimits {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: usize::MAX,
        }
    }
}

/// What JoinGroup answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JoinResult {
    /// None: joined.
    pub error: Option<GroupError>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// The leader's view: (member id, instance id, metadata of the chosen protocol).
    pub members: Vec<(String, Option<String>, Vec<u8>)>,
    pub skip_assignment: bool,
}

impl JoinResult {
    pub fn error(error: GroupError, member_id: &str) -> Self {
        JoinResult {
            error: Some(error),
            generation: -1,
            member_id: member_id.to_string(),
            ..Default::default()
        }
    }
}

/// What SyncGroup answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncResult {
    /// None: synced.
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Vec<u8>,
}

impl SyncResult {
    pub fn error(error: GroupError) -> Self {
        SyncResult {
            error: Some(error),
            ..Default::default()
        }
    }
}

/// Something the coordinator must do after a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Answer the parked JoinGroup of `member_id`.
    JoinDone { member_id: String, result: JoinResult },
    /// Answer the parked SyncGroup of `member_id`.
    SyncDone { member_id: String, result: SyncResult },
    /// Write the group's record (a new generation, or the group became empty).
    Store { generation: i32 },
}

/// One group: membership, the current generation and the committed offsets.
#[derive(Debug, Clone)]
pub struct Group {
    pub id: String,
    pub state: GroupState,
    pub state_timestamp: i64,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// group.instance.id → member id of the static members.
    pub static_members: BTreeMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, with the deadline to join by (KIP-394).
    pub pending_members: BTreeMap<String, i64>,
    pub offsets: BTreeMap<(String, i32), OffsetValue>,
    /// PreparingRebalance ends at this point even if members are missing.
    pub rebalance_deadline: Option<i64>,
    pub initial_delay: Option<InitialDelay>,
    /// CompletingRebalance: members that have not synced by then leave (Kafka's pending sync).
    pub sync_deadline: Option<i64>,
}

impl Group {
    pub fn new(id: &str, now: i64) -> Self {
        Group {
            id: id.to_string(),
            state: GroupState::Empty,
            state_timestamp: now,
            protocol_type: None,
            protocol: None,
            generation: 0,
            leader: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_members: BTreeMap::new(),
            offsets: BTreeMap::new(),
            rebalance_deadline: None,
            initial_delay: None,
            sync_deadline: None,
        }
    }

    /// A group read back from its record: members keep their assignment and get a full
    /// session from `now` to show up (Kafka loads such groups as Stable).
    pub fn from_stored(id: &str, v: GroupValue, now: i64) -> Self {
        let mut g = Group::new(id, now);
        g.protocol_type = Some(v.protocol_type).filter(|t| !t.is_empty());
        g.generation = v.generation;
        g.protocol = v.protocol;
        g.leader = v.leader;
        if v.current_state_timestamp >= 0 {
            g.state_timestamp = v.current_state_timestamp;
        }
        for m in v.members {
            if let Some(instance) = &m.group_instance_id {
                g.static_members.insert(instance.clone(), m.member_id.clone());
            }
            let protocol = g.protocol.clone().unwrap_or_default();
            g.members.insert(
                m.member_id.clone(),
                Member {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout_ms: if m.rebalance_timeout_ms < 0 {
                        m.session_timeout_ms
                    } else {
                        m.rebalance_timeout_ms
                    },
                    session_timeout_ms: m.session_timeout_ms,
                    protocols: vec![(protocol, m.subscription)],
                    assignment: m.assignment,
                    awaiting_join: false,
                    awaiting_sync: false,
                    heartbeat_deadline: now + i64::from(m.session_timeout_ms),
                    is_new: false,
                },
            );
        }
        g.state = if g.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        g
    }

    /// The record to store for the current generation.
    pub fn to_stored(&self) -> GroupValue {
        let protocol = self.protocol.clone().unwrap_or_default();
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_timestamp,
            members: self
                .members
                .values()
                .map(|m| StoredMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    pub(super) fn transition(&mut self, state: GroupState, now: i64) {
        self.state = state;
        self.state_timestamp = now;
    }

    pub fn is(&self, state: GroupState) -> bool {
        self.state == state
    }

    /// Which protocol every member supports and most members prefer (Kafka's `selectProtocol`:
    /// each member votes for its first candidate; ties go to the first member's preference).
    pub fn select_protocol(&self) -> Option<String> {
        let mut candidates: Vec<String> = self
            .members
            .values()
            .next()?
            .protocols
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        candidates.retain(|c| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == c)));
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some((name, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
                *votes.entry(name.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        candidates.into_iter().find(|c| votes.get(c.as_str()) == Some(&best))
    }

    /// Whether a joining member's protocols fit the group (Kafka's `supportsProtocols`).
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Vec<u8>)]) -> bool {
        if protocols.is_empty() || protocol_type.is_empty() {
            return false;
        }
        if self.members.is_empty() {
            return true;
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|(n, _)| self.members.values().all(|m| m.protocols.iter().any(|(mn, _)| mn == n)))
    }

    fn max_rebalance_timeout(&self) -> i64 {
        self.members
            .values()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// Every member has a JoinGroup parked and no handed-out member id is still to come.
    pub fn all_members_joined(&self) -> bool {
        self.members.values().all(|m| m.awaiting_join) && self.pending_members.is_empty()
    }

    /// Starts a rebalance (Kafka's `prepareRebalance`): parked syncs fail with
    /// REBALANCE_IN_PROGRESS; an empty group waits `group.initial.rebalance.delay.ms` first.
    pub(super) fn prepare_rebalance(&mut self, now: i64, limits: &GroupLimits, effects: &mut Vec<Effect>) {
        if self.is(GroupState::CompletingRebalance) {
            self.reset_syncs(GroupError::RebalanceInProgress, now, effects);
        }
        let timeout = self.max_rebalance_timeout();
        if self.is(GroupState::Empty) {
            let delay = i64::from(limits.initial_rebalance_delay_ms).min(timeout);
            self.initial_delay = Some(InitialDelay {
                deadline: now + delay,
                remaining_ms: (timeout - i64::from(limits.initial_rebalance_delay_ms)).max(0),
                new_member_added: false,
            });
            self.rebalance_deadline = None;
        } else {
            self.initial_delay = None;
            self.rebalance_deadline = Some(now + timeout);
        }
        self.sync_deadline = None;
        tracing::info!(group = %self.id, generation = self.generation, members = self.members.len(), "preparing to rebalance");
        self.transition(GroupState::PreparingRebalance, now);
    }

    /// Fails every parked SyncGroup and clears assignments (Kafka's `resetAndPropagateAssignmentError`);
    /// the members answered start a new session.
    pub(super) fn reset_syncs(&mut self, error: GroupError, now: i64, effects: &mut Vec<Effect>) {
        for m in self.members.values_mut() {
            m.assignment.clear();
            if m.awaiting_sync {
                m.awaiting_sync = false;
                m.heartbeat_deadline = now + i64::from(m.session_timeout_ms);
                effects.push(Effect::SyncDone {
                    member_id: m.member_id.clone(),
                    result: SyncResult::error(error.clone()),
                });
            }
        }
    }

    /// Ends PreparingRebalance if it can (everyone joined and no initial delay runs, or the
    /// deadline passed): members that did not rejoin leave, a new generation starts, and every
    /// parked JoinGroup is answered.
    pub(super) fn maybe_complete_join(&mut self, now: i64, limits: &GroupLimits, effects: &mut Vec<Effect>) {
        if !self.is(GroupState::PreparingRebalance) {
            return;
        }
        if let Some(delay) = self.initial_delay {
            if now < delay.deadline {
                return;
            }
            if delay.new_member_added && delay.remaining_ms > 0 {
                let step = i64::from(limits.initial_rebalance_delay_ms).min(delay.remaining_ms);
                self.initial_delay = Some(InitialDelay {
                    deadline: now + step,
                    remaining_ms: (delay.remaining_ms - i64::from(limits.initial_rebalance_delay_ms)).max(0),
                    new_member_added: false,
                });
                return;
            }
        } else {
            let expired = self.rebalance_deadline.is_some_and(|d| now >= d);
            if !self.all_members_joined() && !expired {
                return;
            }
        }
        self.complete_join(now, effects);
    }

    fn complete_join(&mut self, now: i64, effects: &mut Vec<Effect>) {
        self.initial_delay = None;
        self.rebalance_deadline = None;
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.awaiting_join)
            .map(|m| m.member_id.clone())
            .collect();
        for id in gone {
            self.remove_member(&id);
        }
        self.pending_members.clear();
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol = None;
            self.leader = None;
            self.transition(GroupState::Empty, now);
            effects.push(Effect::Store {
                generation: self.generation,
            });
            return;
        }
        self.protocol = self.select_protocol();
        if self.leader.as_ref().is_none_or(|l| !self.members.contains_key(l)) {
            self.leader = self.members.keys().next().cloned();
        }
        self.transition(GroupState::CompletingRebalance, now);
        tracing::info!(
            group = %self.id,
            generation = self.generation,
            members = self.members.len(),
            protocol = ?self.protocol,
            "stabilized group: new generation, waiting for the leader's assignment"
        );
        let protocol = self.protocol.clone().unwrap_or_default();
        let everyone: Vec<(String, Option<String>, Vec<u8>)> = self
            .members
            .values()
            .map(|m| (m.member_id.clone(), m.group_instance_id.clone(), m.metadata(&protocol)))
            .collect();
        let leader = self.leader.clone().unwrap_or_default();
        let mut sync_timeout = 0;
        for m in self.members.values_mut() {
            m.awaiting_join = false;
            m.is_new = false;
            m.heartbeat_deadline = now + i64::from(m.session_timeout_ms);
            sync_timeout = sync_timeout.max(i64::from(m.rebalance_timeout_ms));
            effects.push(Effect::JoinDone {
                member_id: m.member_id.clone(),
                result: JoinResult {
                    error: None,
                    generation: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol.clone(),
                    leader: leader.clone(),
                    member_id: m.member_id.clone(),
                    members: if m.member_id == leader {
                        everyone.clone()
                    } else {
                        Vec::new()
                    },
                    skip_assignment: false,
                },
            });
        }
        self.sync_deadline = Some(now + sync_timeout);
    }

    pub(super) fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let m = self.members.remove(member_id)?;
        if let Some(instance) = &m.group_instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.members.keys().next().cloned();
        }
        Some(m)
    }

    /// Removes a member that left or timed out and rebalances what remains (Kafka's
    /// `removeMemberAndUpdateGroup`).
    pub(super) fn member_left(&mut self, member_id: &str, now: i64, limits: &GroupLimits, effects: &mut Vec<Effect>) {
        let Some(m) = self.remove_member(member_id) else {
            return;
        };
        if m.awaiting_join {
            effects.push(Effect::JoinDone {
                member_id: m.member_id.clone(),
                result: JoinResult::error(GroupError::UnknownMemberId, &m.member_id),
            });
        }
        if m.awaiting_sync {
            effects.push(Effect::SyncDone {
                member_id: m.member_id.clone(),
                result: SyncResult::error(GroupError::UnknownMemberId),
            });
        }
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => self.prepare_rebalance(now, limits, effects),
            GroupState::PreparingRebalance => self.maybe_complete_join(now, limits, effects),
            GroupState::Empty | GroupState::Dead => {}
        }
    }

    /// The earliest time `tick` has something to do.
    pub fn next_deadline(&self) -> Option<i64> {
        let members = self
            .members
            .values()
            .filter(|m| m.session_counts())
            .map(|m| m.heartbeat_deadline);
        let pending = self.pending_members.values().copied();
        [
            self.rebalance_deadline,
            self.initial_delay.map(|d| d.deadline),
            self.sync_deadline,
        ]
        .into_iter()
        .flatten()
        .chain(members)
        .chain(pending)
        .min()
    }

    /// Timers: sessions that ended, handed-out member ids never used, rebalances whose time is
    /// up, and syncs that never came.
    pub fn tick(&mut self, now: i64, limits: &GroupLimits) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.pending_members.retain(|_, deadline| *deadline > now);
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| now >= m.heartbeat_deadline && m.session_counts())
            .map(|m| m.member_id.clone())
            .collect();
        for id in expired {
            tracing::info!(group = %self.id, member = %id, "member's session timed out");
            self.member_left(&id, now, limits, &mut effects);
        }
        if self.is(GroupState::CompletingRebalance) && self.sync_deadline.is_some_and(|d| now >= d) {
            // Kafka's pending-sync timeout: whoever has not synced leaves, the rest rebalance.
            let late: Vec<String> = self
                .members
                .values()
                .filter(|m| !m.awaiting_sync)
                .map(|m| m.member_id.clone())
                .collect();
            if !late.is_empty() {
                for id in &late {
                    self.remove_member(id);
                }
                self.prepare_rebalance(now, limits, &mut effects);
            }
            self.sync_deadline = None;
        }
        self.maybe_complete_join(now, limits, &mut effects);
        effects
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
