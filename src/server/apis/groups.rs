//! The group APIs on the wire: FindCoordinator (creating `__consumer_offsets` on first use, as
//! Kafka does), JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups and
//! DeleteGroups. Decoding and encoding only; the coordinator (`coordinator::group`) decides.

use crate::security::authorizer::acl::AclOperation;
use std::collections::BTreeMap;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    BrokerId as KpBrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{str_bytes, KafkaApis};
use crate::coordinator::group::errors::{code_of, result_code};
use crate::coordinator::group::membership::{JoinRequest, SyncRequest};
use crate::coordinator::group::state::GroupState;
use crate::coordinator::group::{partition_for, OFFSETS_TOPIC};
use crate::network::handler::RequestContext;
use crate::protocol::authorized_operations::ResourceType;
use crate::protocol::error_codes::{self as ec, COORDINATOR_NOT_AVAILABLE, INVALID_REQUEST};
use crate::server::topic_creation::{self, NewTopic};

fn opt(s: &Option<StrBytes>) -> Option<String> {
    s.as_ref().map(|s| s.to_string())
}

/// Creates `__consumer_offsets` (compacted, `offsets.topic.*`), with the replication factor
/// capped by the live brokers so a small cluster can start.
async fn create_offsets_topic(apis: &KafkaApis) {
    let cfg = apis.groups.config();
    let live = topic_creation::live_brokers(apis).await.len().max(1);
    let rf = cfg.offsets_replication_factor.min(live as i16).max(1);
    let configs = BTreeMap::from([
        ("cleanup.policy".to_string(), "compact".to_string()),
        ("compression.type".to_string(), "producer".to_string()),
        ("segment.bytes".to_string(), cfg.offsets_segment_bytes.to_string()),
    ]);
    let topic = NewTopic {
        name: OFFSETS_TOPIC.to_string(),
        partitions: cfg.offsets_partitions,
        replication_factor: rf,
        assignment: None,
        configs,
    };
    match topic_creation::create(apis, &topic, false).await {
        Ok(_) => tracing::info!(partitions = topic.partitions, rf, "created {OFFSETS_TOPIC}"),
        Err(e) => tracing::debug!(error = %e, "{OFFSETS_TOPIC} not created (it may exist already)"),
    }
}

/// The broker leading `group`'s offsets partition, as (id, host, port) on the request's listener.
async fn coordinator_for(apis: &KafkaApis, ctx: &RequestContext, group: &str) -> Result<(i32, String, i32), i16> {
    let Some(topic) = apis.metadata_cache.topic(OFFSETS_TOPIC) else {
        create_offsets_topic(apis).await;
        return Err(COORDINATOR_NOT_AVAILABLE);
    };
    let p = partition_for(group, topic.partitions.len() as i32);
    let leader = topic.partitions.get(&p).map_or(-1, |s| s.leader);
    apis.metadata_cache
        .live_brokers()
        .into_iter()
        .find(|b| b.id.0 == leader)
        .and_then(|b| b.endpoints.into_iter().find(|e| e.listener == ctx.listener))
        .map(|e| (leader, e.host, e.port))
        .ok_or(COORDINATOR_NOT_AVAILABLE)
}

pub(super) async fn find_coordinator(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let keys: Vec<String> = if ctx.api_version >= 4 {
        r.coordinator_keys.iter().map(|k| k.to_string()).collect()
    } else {
        vec![r.key.to_string()]
    };
    let mut coordinators = Vec::with_capacity(keys.len());
    for key in keys {
        // Transactions (key type 1) are not built: no transaction coordinator to point at.
        let found = if r.key_type != 0 {
            Err(COORDINATOR_NOT_AVAILABLE)
        } else if key.is_empty() {
            Err(INVALID_REQUEST)
        } else if let Some(code) = apis.group_denied(ctx, AclOperation::Describe, &key) {
            Err(code)
        } else {
            coordinator_for(apis, ctx, &key).await
        };
        let c = match found {
            Ok((id, host, port)) => Coordinator::default()
                .with_key(str_bytes(&key))
                .with_node_id(KpBrokerId(id))
                .with_host(str_bytes(&host))
                .with_port(port),
            Err(code) => Coordinator::default()
                .with_key(str_bytes(&key))
                .with_node_id(KpBrokerId(-1))
                .with_port(-1)
                .with_error_code(code),
        };
        coordinators.push(c);
    }
    if ctx.api_version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let c = coordinators.pop().unwrap_or_default();
    FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port)
}

pub(super) async fn join_group(apis: &KafkaApis, ctx: &RequestContext, r: JoinGroupRequest) -> JoinGroupResponse {
    let v = ctx.api_version;
    if let Some(code) = apis.group_denied(ctx, AclOperation::Read, &r.group_id.0) {
        let mut resp = JoinGroupResponse::default()
            .with_error_code(code)
            .with_generation_id(-1)
            .with_member_id(r.member_id);
        if v < 7 {
            resp.protocol_name = Some(str_bytes(""));
        }
        return resp;
    }
    let req = JoinRequest {
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        client_id: opt(&ctx.header.client_id).unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
        session_timeout_ms: r.session_timeout_ms,
        rebalance_timeout_ms: if v >= 1 {
            r.rebalance_timeout_ms
        } else {
            r.session_timeout_ms
        },
        protocol_type: r.protocol_type.to_string(),
        protocols: r
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.to_vec()))
            .collect(),
        require_known_member_id: v >= 4,
        supports_skip_assignment: v >= 9,
    };
    let result = apis.groups.join(&r.group_id.0, req).await;
    let members = result
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            JoinGroupResponseMember::default()
                .with_member_id(str_bytes(&id))
                .with_group_instance_id(instance.as_deref().map(str_bytes))
                .with_metadata(metadata.into())
        })
        .collect();
    let mut resp = JoinGroupResponse::default()
        .with_error_code(code_of(result.error.as_ref()))
        .with_generation_id(result.generation)
        .with_protocol_name(result.protocol_name.as_deref().map(str_bytes))
        .with_leader(str_bytes(&result.leader))
        .with_member_id(str_bytes(&result.member_id))
        .with_members(members);
    if v >= 7 {
        resp.protocol_type = result.protocol_type.as_deref().map(str_bytes);
    }
    if v < 7 && resp.protocol_name.is_none() {
        // Before v7 the protocol name is not nullable.
        resp.protocol_name = Some(str_bytes(""));
    }
    if v >= 9 {
        resp.skip_assignment = result.skip_assignment;
    }
    resp
}

pub(super) async fn sync_group(apis: &KafkaApis, ctx: &RequestContext, r: SyncGroupRequest) -> SyncGroupResponse {
    if let Some(code) = apis.group_denied(ctx, AclOperation::Read, &r.group_id.0) {
        return SyncGroupResponse::default().with_error_code(code);
    }
    let req = SyncRequest {
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        generation: r.generation_id,
        protocol_type: opt(&r.protocol_type),
        protocol_name: opt(&r.protocol_name),
        assignments: r
            .assignments
            .iter()
            .map(|a| (a.member_id.to_string(), a.assignment.to_vec()))
            .collect(),
    };
    let result = apis.groups.sync(&r.group_id.0, req).await;
    let mut resp = SyncGroupResponse::default()
        .with_error_code(code_of(result.error.as_ref()))
        .with_assignment(result.assignment.into());
    if ctx.api_version >= 5 {
        resp.protocol_type = result.protocol_type.as_deref().map(str_bytes);
        resp.protocol_name = result.protocol_name.as_deref().map(str_bytes);
    }
    resp
}

pub(super) fn heartbeat(apis: &KafkaApis, ctx: &RequestContext, r: HeartbeatRequest) -> HeartbeatResponse {
    if let Some(code) = apis.group_denied(ctx, AclOperation::Read, &r.group_id.0) {
        return HeartbeatResponse::default().with_error_code(code);
    }
    let answer = apis.groups.heartbeat(
        &r.group_id.0,
        &r.member_id,
        r.group_instance_id.as_deref(),
        r.generation_id,
    );
    HeartbeatResponse::default().with_error_code(result_code(&answer))
}

pub(super) fn leave_group(apis: &KafkaApis, ctx: &RequestContext, r: LeaveGroupRequest) -> LeaveGroupResponse {
    let members: Vec<(String, Option<String>)> = if ctx.api_version >= 3 {
        r.members
            .iter()
            .map(|m| (m.member_id.to_string(), opt(&m.group_instance_id)))
            .collect()
    } else {
        vec![(r.member_id.to_string(), None)]
    };
    if let Some(code) = apis.group_denied(ctx, AclOperation::Read, &r.group_id.0) {
        return LeaveGroupResponse::default().with_error_code(code);
    }
    match apis.groups.leave(&r.group_id.0, &members) {
        Err(e) => LeaveGroupResponse::default().with_error_code(e.error_code()),
        Ok(answers) if ctx.api_version < 3 => {
            LeaveGroupResponse::default().with_error_code(answers.first().map_or(ec::NONE, result_code))
        }
        Ok(answers) => LeaveGroupResponse::default().with_members(
            members
                .iter()
                .zip(answers)
                .map(|((m, i), answer)| {
                    MemberResponse::default()
                        .with_member_id(str_bytes(m))
                        .with_group_instance_id(i.as_deref().map(str_bytes))
                        .with_error_code(result_code(&answer))
                })
                .collect(),
        ),
    }
}

pub(super) fn list_groups(apis: &KafkaApis, ctx: &RequestContext, r: ListGroupsRequest) -> ListGroupsResponse {
    let states: Vec<GroupState> = r.states_filter.iter().filter_map(|s| GroupState::parse(s)).collect();
    if !r.states_filter.is_empty() && states.is_empty() {
        return ListGroupsResponse::default();
    }
    // Only classic groups exist here; a filter that excludes "classic" matches nothing.
    if !r.types_filter.is_empty() && !r.types_filter.iter().any(|t| t.eq_ignore_ascii_case("classic")) {
        return ListGroupsResponse::default();
    }
    match apis.groups.list_groups(&states) {
        Err(e) => ListGroupsResponse::default().with_error_code(e.error_code()),
        Ok(groups) => ListGroupsResponse::default().with_groups(
            groups
                .into_iter()
                .filter(|(id, _, _)| apis.authorized_group(ctx, AclOperation::Describe, id))
                .map(|(id, protocol_type, state)| {
                    ListedGroup::default()
                        .with_group_id(GroupId(str_bytes(&id)))
                        .with_protocol_type(str_bytes(&protocol_type))
                        .with_group_state(str_bytes(state.name()))
                        .with_group_type(str_bytes("classic"))
                })
                .collect(),
        ),
    }
}

/// DescribeGroups; from v3 a group described without error carries its authorized operations
/// when asked (`include_authorized_operations`), as Kafka's `handleDescribeGroupsRequest` does.
pub(super) fn describe_groups(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let requested = ctx.api_version >= 3 && r.include_authorized_operations;
    let groups = r
        .groups
        .iter()
        .map(|id| {
            let base = DescribedGroup::default().with_group_id(id.clone());
            if let Some(code) = apis.group_denied(ctx, AclOperation::Describe, id) {
                return base.with_error_code(code).with_group_state(str_bytes(""));
            }
            match apis.groups.describe(id) {
                Err(e) => base.with_error_code(e.error_code()).with_group_state(str_bytes("")),
                Ok(s) => base
                    .with_group_state(str_bytes(&s.state))
                    .with_protocol_type(str_bytes(&s.protocol_type))
                    .with_protocol_data(str_bytes(&s.protocol))
                    .with_authorized_operations(apis.authorized_operations(ctx, requested, ResourceType::Group, id))
                    .with_members(
                        s.members
                            .into_iter()
                            .map(|(m, metadata, assignment)| {
                                DescribedGroupMember::default()
                                    .with_member_id(str_bytes(&m.member_id))
                                    .with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
                                    .with_client_id(str_bytes(&m.client_id))
                                    .with_client_host(str_bytes(&m.client_host))
                                    .with_member_metadata(metadata.into())
                                    .with_member_assignment(assignment.into())
                            })
                            .collect(),
                    ),
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

pub(super) async fn delete_groups(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(r.groups_names.len());
    for id in r.groups_names {
        let code = match apis.group_denied(ctx, AclOperation::Delete, &id.0) {
            Some(code) => code,
            None => result_code(&apis.groups.delete_group(&id.0).await),
        };
        results.push(DeletableGroupResult::default().with_group_id(id).with_error_code(code));
    }
    DeleteGroupsResponse::default().with_results(results)
}
