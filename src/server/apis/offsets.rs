//! The committed-offset APIs on the wire: OffsetCommit (v0–v9), OffsetFetch (v0–v9, one group
//! per request before v8, several after) and OffsetDelete. A group-level failure is reported
//! where each version has room for it: per partition, or once for the group.

use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_delete_response::{OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};

use super::{str_bytes, KafkaApis};
use crate::coordinator::group::errors::{result_code, GroupError};
use crate::coordinator::group::requests::CommitEntry;
use crate::coordinator::group::schema::OffsetValue;
use crate::network::handler::RequestContext;
use crate::security::authorizer::acl::AclOperation;

pub(super) async fn offset_commit(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let v = ctx.api_version;
    // Like Kafka, partitions the cluster does not have are answered UNKNOWN_TOPIC_OR_PARTITION
    // and not committed.
    let cache = &apis.metadata_cache;
    // READ on the group, and on each topic (unauthorized partitions are not committed).
    let group_denied = apis.group_denied(ctx, AclOperation::Read, &r.group_id.0);
    let readable = |topic: &str| apis.authorized_topic(ctx, AclOperation::Read, topic);
    let exists = |topic: &str, p: i32| cache.has_partition(topic, p) && readable(topic);
    let entries: Vec<CommitEntry> = r
        .topics
        .iter()
        .flat_map(|t| {
            let exists = &exists;
            t.partitions
                .iter()
                .filter(move |p| exists(&t.name.0, p.partition_index))
                .map(|p| CommitEntry {
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if v >= 6 { p.committed_leader_epoch } else { -1 },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                })
        })
        .collect();
    let retention = (2..=4)
        .contains(&v)
        .then_some(r.retention_time_ms)
        .filter(|ms| *ms >= 0);
    let (generation, member) = if v >= 1 {
        (r.generation_id_or_member_epoch, r.member_id.to_string())
    } else {
        (-1, String::new())
    };
    let result = if group_denied.is_some() {
        Ok(Vec::new())
    } else {
        apis.groups
            .commit(
                &r.group_id.0,
                &member,
                r.group_instance_id.as_deref(),
                generation,
                entries,
                retention,
            )
            .await
    };
    let mut codes = match result {
        Ok(answers) => answers.iter().map(result_code).collect::<Vec<_>>().into_iter(),
        Err(e) => vec![e.error_code(); r.topics.iter().map(|t| t.partitions.len()).sum()].into_iter(),
    };
    let mut code_for = |topic: &str, p: i32| {
        if let Some(code) = group_denied {
            code
        } else if !readable(topic) {
            super::authorize::TOPIC_AUTHORIZATION_FAILED
        } else if exists(topic, p) {
            codes.next().unwrap_or_default()
        } else {
            crate::protocol::error_codes::UNKNOWN_TOPIC_OR_PARTITION
        }
    };
    let topics = r
        .topics
        .iter()
        .map(|t| {
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code_for(&t.name.0, p.partition_index))
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

type Fetched = Result<Vec<(String, i32, Option<OffsetValue>)>, GroupError>;
type ByTopic = Vec<(String, Vec<(i32, Option<OffsetValue>)>)>;

/// Groups the fetched offsets by topic, keeping the order they came in.
fn by_topic(rows: Vec<(String, i32, Option<OffsetValue>)>) -> ByTopic {
    let mut out: ByTopic = Vec::new();
    for (t, p, v) in rows {
        match out.iter_mut().find(|(name, _)| *name == t) {
            Some((_, ps)) => ps.push((p, v)),
            None => out.push((t, vec![(p, v)])),
        }
    }
    out
}

fn fetched(v: &Option<OffsetValue>) -> (i64, i32, String) {
    match v {
        Some(v) => (v.offset, v.leader_epoch, v.metadata.clone()),
        None => (-1, -1, String::new()),
    }
}

pub(super) fn offset_fetch(apis: &KafkaApis, ctx: &RequestContext, r: OffsetFetchRequest) -> OffsetFetchResponse {
    let v = ctx.api_version;
    if v >= 8 {
        let groups = r
            .groups
            .iter()
            .map(|g| {
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .flat_map(|t| t.partition_indexes.iter().map(|p| (t.name.0.to_string(), *p)))
                        .collect()
                });
                let named = asked.is_some();
                let result: Fetched = match apis.group_denied(ctx, AclOperation::Read, &g.group_id.0) {
                    Some(_) => Err(GroupError::GroupAuthorizationFailed),
                    None => apis.groups.fetch_offsets(&g.group_id.0, asked),
                };
                let result = result.map(|rows| apis.readable_offsets(ctx, rows, named));
                let group = OffsetFetchResponseGroup::default().with_group_id(g.group_id.clone());
                match result {
                    Err(e) => group.with_error_code(e.error_code()),
                    Ok(rows) => group.with_topics(
                        by_topic(rows)
                            .into_iter()
                            .map(|(t, ps)| {
                                OffsetFetchResponseTopics::default()
                                    .with_name(TopicName(str_bytes(&t)))
                                    .with_partitions(
                                        ps.iter()
                                            .map(|(p, v)| {
                                                let (offset, epoch, meta) = fetched(v);
                                                OffsetFetchResponsePartitions::default()
                                                    .with_partition_index(*p)
                                                    .with_committed_offset(offset)
                                                    .with_committed_leader_epoch(epoch)
                                                    .with_metadata(Some(str_bytes(&meta)))
                                                    .with_error_code(topic_code(apis, ctx, &t))
                                            })
                                            .collect(),
                                    )
                            })
                            .collect(),
                    ),
                }
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let asked: Option<Vec<(String, i32)>> = r.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| t.partition_indexes.iter().map(|p| (t.name.0.to_string(), *p)))
            .collect()
    });
    let named = asked.is_some();
    let result = match apis.group_denied(ctx, AclOperation::Read, &r.group_id.0) {
        Some(_) => Err(GroupError::GroupAuthorizationFailed),
        None => apis
            .groups
            .fetch_offsets(&r.group_id.0, asked.clone())
            .map(|rows| apis.readable_offsets(ctx, rows, named)),
    };
    let (rows, group_error) = match result {
        Ok(rows) => (rows, 0),
        // Before v2 there is no group-level error: every asked partition carries it.
        Err(e) => (
            asked
                .unwrap_or_default()
                .into_iter()
                .map(|(t, p)| (t, p, None))
                .collect(),
            e.error_code(),
        ),
    };
    let partition_error = if v < 2 { group_error } else { 0 };
    let topics = by_topic(rows)
        .into_iter()
        .map(|(t, ps)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(str_bytes(&t)))
                .with_partitions(
                    ps.iter()
                        .map(|(p, v)| {
                            let (offset, epoch, meta) = fetched(v);
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(epoch)
                                .with_metadata(Some(str_bytes(&meta)))
                                .with_error_code(if partition_error != 0 {
                                    partition_error
                                } else {
                                    topic_code(apis, ctx, &t)
                                })
                        })
                        .collect(),
                )
        })
        .collect();
    let mut resp = OffsetFetchResponse::default().with_topics(topics);
    if v >= 2 {
        resp.error_code = group_error;
    }
    resp
}

/// TOPIC_AUTHORIZATION_FAILED for a topic the caller may not READ, else none.
fn topic_code(apis: &KafkaApis, ctx: &RequestContext, topic: &str) -> i16 {
    apis.topic_denied(ctx, AclOperation::Read, topic).unwrap_or(0)
}

impl KafkaApis {
    /// OffsetFetch's rows the caller may see: every row of a topic it may READ; rows of other
    /// topics are dropped from an all-partitions fetch and kept (to answer
    /// TOPIC_AUTHORIZATION_FAILED, with no offset) when named.
    fn readable_offsets(
        &self,
        ctx: &RequestContext,
        rows: Vec<(String, i32, Option<OffsetValue>)>,
        named: bool,
    ) -> Vec<(String, i32, Option<OffsetValue>)> {
        rows.into_iter()
            .filter_map(|(t, p, v)| match self.authorized_topic(ctx, AclOperation::Read, &t) {
                true => Some((t, p, v)),
                false if named => Some((t, p, None)),
                false => None,
            })
            .collect()
    }
}

pub(super) async fn offset_delete(
    apis: &KafkaApis,
    ctx: &RequestContext,
    r: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    if let Some(code) = apis.group_denied(ctx, AclOperation::Delete, &r.group_id.0) {
        return OffsetDeleteResponse::default().with_error_code(code);
    }
    let asked: Vec<(String, i32)> = r
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.0.to_string(), p.partition_index)))
        .collect();
    let GroupId(group) = &r.group_id;
    match apis.groups.delete_offsets(group, asked).await {
        Err(e) => OffsetDeleteResponse::default().with_error_code(e.error_code()),
        Ok(answers) => {
            let mut codes = answers.iter().map(result_code);
            let topics = r
                .topics
                .iter()
                .map(|t| {
                    OffsetDeleteResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    let code = codes.next().unwrap_or_default();
                                    OffsetDeleteResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(topic_code(apis, ctx, &t.name.0).max(code))
                                })
                                .collect(),
                        )
                })
                .collect();
            OffsetDeleteResponse::default().with_topics(topics)
        }
    }
}
