//! `KafkaApis`: one handler per API key (Kafka's `KafkaApis`, split by API). The network layer
//! hands over decoded requests; each handler turns per-partition failures into error codes in
//! the response and never fails the request as a whole for one partition's sake.

mod acls;
mod alter_configs;
mod alter_partition_reassignments;
mod authorize;
mod config_alter;
mod controller_requests;
mod create_partitions;
mod create_topics;
mod delete_records;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod elect_leaders;
mod fetch;
mod groups;
mod incremental_alter_configs;
mod init_producer_id;
mod list_offsets;
mod list_partition_reassignments;
mod metadata;
mod offset_for_leader_epoch;
mod offsets;
mod produce;
mod scram_credentials;

use std::sync::Arc;

use kafka_protocol::messages::{RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;

use super::metadata_cache::MetadataCache;
pub(crate) use crate::clock::now_ms;
use crate::network::handler::{Reply, RequestContext, RequestHandler};
use crate::replica::ReplicaManager;
use crate::types::BrokerId;
use crate::zk::{KafkaZkClient, ZkSession};

/// Settings the handlers need.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub auto_create_topics_enable: bool,
    pub num_partitions: i32,
    pub default_replication_factor: i16,
    pub delete_topic_enable: bool,
    /// The listener other brokers are reached on (followers fetch there).
    pub inter_broker_listener: String,
}

/// The broker's request handlers.
#[derive(Debug)]
pub struct KafkaApis {
    pub broker_id: BrokerId,
    pub cluster_id: String,
    pub replica_manager: Arc<ReplicaManager>,
    pub metadata_cache: Arc<MetadataCache>,
    pub zk: KafkaZkClient<ZkSession>,
    pub config: ApiConfig,
    /// The broker's static config (DescribeConfigs' static and default layers).
    pub broker_config: Arc<crate::config::KafkaConfig>,
    /// The group coordinator for the `__consumer_offsets` partitions this broker leads.
    pub groups: std::sync::Arc<crate::coordinator::group::GroupCoordinator>,
    /// Producer ids for InitProducerId, claimed in blocks from ZooKeeper.
    pub producer_ids: crate::server::producer_ids::ProducerIdManager<ZkSession>,
    /// This broker's controller module, set once it has started (after the handlers exist).
    pub controller: std::sync::OnceLock<crate::controller::ControllerHandle>,
    /// KIP-227 incremental fetch sessions.
    pub fetch_sessions: crate::server::fetch_session::wire::FetchManager,
    /// The ACL authorizer when `authorizer.class.name` names it; `None`: no authorization.
    pub authorizer: Option<Arc<crate::security::authorizer::AclAuthorizer>>,
    /// The TLS listeners, whose stores a `listener.name.<l>.ssl.*` alteration must load before
    /// it is written.
    pub tls_servers: crate::server::listeners::TlsServers,
}

impl RequestHandler for KafkaApis {
    /// An acks=all produce answers [`Reply::Later`]: its records are appended, its response
    /// waits for the followers while the connection serves the next request.
    async fn reply(&self, ctx: RequestContext, request: RequestKind) -> Reply {
        match request {
            RequestKind::Produce(r) => match produce::handle(self, &ctx, r).await {
                produce::Produced::Now(response) => Reply::Now(response.map(ResponseKind::Produce)),
                produce::Produced::Waiting(response) => {
                    Reply::Later(Box::pin(async move { Some(ResponseKind::Produce(response.await)) }))
                }
            },
            other => Reply::Now(self.handle(ctx, other).await),
        }
    }

    async fn handle(&self, ctx: RequestContext, request: RequestKind) -> Option<ResponseKind> {
        if let Some(refused) = self.refused(&ctx, &request) {
            return Some(refused);
        }
        match request {
            RequestKind::Produce(r) => match produce::handle(self, &ctx, r).await {
                produce::Produced::Now(response) => response.map(ResponseKind::Produce),
                produce::Produced::Waiting(response) => Some(ResponseKind::Produce(response.await)),
            },
            RequestKind::Fetch(r) => Some(ResponseKind::Fetch(fetch::handle(self, &ctx, r).await)),
            RequestKind::OffsetForLeaderEpoch(r) => Some(ResponseKind::OffsetForLeaderEpoch(
                offset_for_leader_epoch::handle(self, &ctx, r),
            )),
            RequestKind::ListOffsets(r) => Some(ResponseKind::ListOffsets(list_offsets::handle(self, &ctx, r))),
            RequestKind::Metadata(r) => Some(ResponseKind::Metadata(metadata::handle(self, &ctx, r).await)),
            RequestKind::LeaderAndIsr(r) => Some(ResponseKind::LeaderAndIsr(
                controller_requests::leader_and_isr(self, &ctx, r).await,
            )),
            RequestKind::UpdateMetadata(r) => Some(ResponseKind::UpdateMetadata(controller_requests::update_metadata(
                self, r,
            ))),
            RequestKind::StopReplica(r) => Some(ResponseKind::StopReplica(
                controller_requests::stop_replica(self, r).await,
            )),
            RequestKind::CreatePartitions(r) => Some(ResponseKind::CreatePartitions(
                create_partitions::handle(self, &ctx, r).await,
            )),
            RequestKind::ElectLeaders(r) => {
                Some(ResponseKind::ElectLeaders(elect_leaders::handle(self, &ctx, r).await))
            }
            RequestKind::AlterPartitionReassignments(r) => Some(ResponseKind::AlterPartitionReassignments(
                alter_partition_reassignments::handle(self, r).await,
            )),
            RequestKind::ListPartitionReassignments(r) => Some(ResponseKind::ListPartitionReassignments(
                list_partition_reassignments::handle(self, r).await,
            )),
            RequestKind::DeleteTopics(r) => {
                Some(ResponseKind::DeleteTopics(delete_topics::handle(self, &ctx, r).await))
            }
            RequestKind::CreateTopics(r) => {
                Some(ResponseKind::CreateTopics(create_topics::handle(self, &ctx, r).await))
            }
            RequestKind::DescribeConfigs(r) => Some(ResponseKind::DescribeConfigs(
                describe_configs::handle(self, &ctx, r).await,
            )),
            RequestKind::InitProducerId(r) => {
                Some(ResponseKind::InitProducerId(init_producer_id::handle(self, r).await))
            }
            RequestKind::ControlledShutdown(r) => Some(ResponseKind::ControlledShutdown(
                controller_requests::controlled_shutdown(self, r).await,
            )),
            RequestKind::FindCoordinator(r) => Some(ResponseKind::FindCoordinator(
                groups::find_coordinator(self, &ctx, r).await,
            )),
            RequestKind::JoinGroup(r) => Some(ResponseKind::JoinGroup(groups::join_group(self, &ctx, r).await)),
            RequestKind::SyncGroup(r) => Some(ResponseKind::SyncGroup(groups::sync_group(self, &ctx, r).await)),
            RequestKind::Heartbeat(r) => Some(ResponseKind::Heartbeat(groups::heartbeat(self, &ctx, r))),
            RequestKind::LeaveGroup(r) => Some(ResponseKind::LeaveGroup(groups::leave_group(self, &ctx, r))),
            RequestKind::ListGroups(r) => Some(ResponseKind::ListGroups(groups::list_groups(self, &ctx, r))),
            RequestKind::DescribeGroups(r) => {
                Some(ResponseKind::DescribeGroups(groups::describe_groups(self, &ctx, r)))
            }
            RequestKind::DeleteGroups(r) => {
                Some(ResponseKind::DeleteGroups(groups::delete_groups(self, &ctx, r).await))
            }
            RequestKind::OffsetCommit(r) => {
                Some(ResponseKind::OffsetCommit(offsets::offset_commit(self, &ctx, r).await))
            }
            RequestKind::OffsetFetch(r) => Some(ResponseKind::OffsetFetch(offsets::offset_fetch(self, &ctx, r))),
            RequestKind::DescribeCluster(r) => Some(ResponseKind::DescribeCluster(
                describe_cluster::handle(self, &ctx, r).await,
            )),
            RequestKind::DeleteRecords(r) => {
                Some(ResponseKind::DeleteRecords(delete_records::handle(self, &ctx, r).await))
            }
            RequestKind::OffsetDelete(r) => {
                Some(ResponseKind::OffsetDelete(offsets::offset_delete(self, &ctx, r).await))
            }
            RequestKind::AlterConfigs(r) => {
                Some(ResponseKind::AlterConfigs(alter_configs::handle(self, &ctx, r).await))
            }
            RequestKind::IncrementalAlterConfigs(r) => Some(ResponseKind::IncrementalAlterConfigs(
                incremental_alter_configs::handle(self, &ctx, r).await,
            )),
            RequestKind::CreateAcls(r) => Some(ResponseKind::CreateAcls(acls::create_acls(self, &ctx, r).await)),
            RequestKind::DescribeAcls(r) => Some(ResponseKind::DescribeAcls(acls::describe_acls(self, &ctx, r))),
            RequestKind::DeleteAcls(r) => Some(ResponseKind::DeleteAcls(acls::delete_acls(self, &ctx, r).await)),
            RequestKind::DescribeUserScramCredentials(r) => Some(ResponseKind::DescribeUserScramCredentials(
                scram_credentials::describe(self, &ctx, r).await,
            )),
            RequestKind::AlterUserScramCredentials(r) => Some(ResponseKind::AlterUserScramCredentials(
                scram_credentials::alter(self, &ctx, r).await,
            )),
            other => {
                tracing::warn!(api = ?ctx.api_key, "no handler for a supported API; closing the request without a response");
                drop(other);
                None
            }
        }
    }
}

/// Waits until none of `pending` satisfies `still_waiting` or `timeout_ms` passes, woken by each
/// UpdateMetadata (Kafka's delayed CreateTopics/DeleteTopics/CreatePartitions). Returns what is
/// still pending.
pub(crate) async fn wait_for_metadata<T>(
    cache: &MetadataCache,
    timeout_ms: i32,
    mut pending: Vec<T>,
    still_waiting: impl Fn(&MetadataCache, &T) -> bool,
) -> Vec<T> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(timeout_ms.max(0) as u64);
    let mut changes = cache.subscribe();
    loop {
        pending.retain(|t| still_waiting(cache, t));
        if pending.is_empty() || tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
            pending.retain(|t| still_waiting(cache, t));
            return pending;
        }
    }
}

pub(crate) fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}
