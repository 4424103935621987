//! The handlers' questions to the authorizer, as `KafkaApis`' `authHelper` asks them: one call
//! per check with Kafka's operation and resource, answering "allowed" when no authorizer is
//! configured. Also the error codes an unauthorized request gets.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ControlledShutdownResponse,
    DescribeClusterResponse, ElectLeadersResponse, InitProducerIdResponse, LeaderAndIsrResponse,
    ListPartitionReassignmentsResponse, ProduceRequest, ProducerId, RequestKind, ResponseKind, StopReplicaResponse,
    UpdateMetadataResponse,
};

use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::authorized_operations::NOT_REQUESTED;
use crate::security::authorizer::acl::{AclOperation, ResourceType, CLUSTER_NAME};

pub(crate) const TOPIC_AUTHORIZATION_FAILED: i16 = ResponseError::TopicAuthorizationFailed.code();
pub(crate) const GROUP_AUTHORIZATION_FAILED: i16 = ResponseError::GroupAuthorizationFailed.code();
pub(crate) const CLUSTER_AUTHORIZATION_FAILED: i16 = ResponseError::ClusterAuthorizationFailed.code();
pub(crate) const SECURITY_DISABLED: i16 = ResponseError::SecurityDisabled.code();
pub(crate) const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = ResponseError::TransactionalIdAuthorizationFailed.code();

/// Kafka's default message of CLUSTER_AUTHORIZATION_FAILED.
const CLUSTER_AUTHORIZATION_FAILED_MESSAGE: &str = "Cluster authorization failed.";

/// AlterPartitionReassignments refused with `code`: top level and on every partition, as
/// Kafka's `AlterPartitionReassignmentsRequest.getErrorResponse` answers.
fn alter_reassignments_refused(
    r: &AlterPartitionReassignmentsRequest,
    code: i16,
) -> AlterPartitionReassignmentsResponse {
    let message = || Some(str_bytes(CLUSTER_AUTHORIZATION_FAILED_MESSAGE));
    AlterPartitionReassignmentsResponse::default()
        .with_error_code(code)
        .with_error_message(message())
        .with_responses(
            r.topics
                .iter()
                .map(|t| {
                    ReassignableTopicResponse::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    ReassignablePartitionResponse::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(code)
                                        .with_error_message(message())
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

/// The producer id of the first record batch (magic 2: bytes 43..51), if there is one.
fn batch_producer_id(records: &[u8]) -> Option<i64> {
    let bytes: [u8; 8] = records.get(43..51)?.try_into().ok()?;
    (records.get(16) == Some(&2)).then(|| i64::from_be_bytes(bytes))
}

impl KafkaApis {
    /// The answer to a request refused as a whole, as KafkaApis refuses it: the controller's
    /// requests without CLUSTER_ACTION, InitProducerId without IDEMPOTENT_WRITE (or WRITE on
    /// its transactional id), ElectLeaders and AlterPartitionReassignments without ALTER,
    /// DescribeCluster and ListPartitionReassignments without DESCRIBE on the cluster. `None`: the handler decides (per resource, where there are several).
    pub(crate) fn refused(&self, ctx: &RequestContext, request: &RequestKind) -> Option<ResponseKind> {
        self.authorizer.as_ref()?;
        let cluster = |op| self.cluster_denied(ctx, op);
        match request {
            RequestKind::LeaderAndIsr(_) => cluster(AclOperation::ClusterAction)
                .map(|c| ResponseKind::LeaderAndIsr(LeaderAndIsrResponse::default().with_error_code(c))),
            RequestKind::UpdateMetadata(_) => cluster(AclOperation::ClusterAction)
                .map(|c| ResponseKind::UpdateMetadata(UpdateMetadataResponse::default().with_error_code(c))),
            RequestKind::StopReplica(_) => cluster(AclOperation::ClusterAction)
                .map(|c| ResponseKind::StopReplica(StopReplicaResponse::default().with_error_code(c))),
            RequestKind::ControlledShutdown(_) => cluster(AclOperation::ClusterAction)
                .map(|c| ResponseKind::ControlledShutdown(ControlledShutdownResponse::default().with_error_code(c))),
            RequestKind::ElectLeaders(_) => cluster(AclOperation::Alter)
                .map(|c| ResponseKind::ElectLeaders(ElectLeadersResponse::default().with_error_code(c))),
            RequestKind::AlterPartitionReassignments(r) => cluster(AclOperation::Alter)
                .map(|c| ResponseKind::AlterPartitionReassignments(alter_reassignments_refused(r, c))),
            RequestKind::ListPartitionReassignments(_) => cluster(AclOperation::Describe).map(|c| {
                ResponseKind::ListPartitionReassignments(
                    ListPartitionReassignmentsResponse::default()
                        .with_error_code(c)
                        .with_error_message(Some(str_bytes(CLUSTER_AUTHORIZATION_FAILED_MESSAGE))),
                )
            }),
            RequestKind::DescribeCluster(_) => cluster(AclOperation::Describe).map(|c| {
                ResponseKind::DescribeCluster(
                    DescribeClusterResponse::default()
                        .with_error_code(c)
                        .with_cluster_id(str_bytes(&self.cluster_id)),
                )
            }),
            RequestKind::InitProducerId(r) => {
                let code = match &r.transactional_id {
                    Some(txn) if !txn.0.is_empty() => {
                        (!self.authorized(ctx, AclOperation::Write, ResourceType::TransactionalId, &txn.0))
                            .then_some(TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                    }
                    _ => cluster(AclOperation::IdempotentWrite),
                };
                code.map(|c| {
                    ResponseKind::InitProducerId(
                        InitProducerIdResponse::default()
                            .with_error_code(c)
                            .with_producer_id(ProducerId(-1))
                            .with_producer_epoch(-1),
                    )
                })
            }
            _ => None,
        }
    }

    /// Whether the request's principal may do `op` on the resource (always, without an
    /// authorizer).
    pub(crate) fn authorized(&self, ctx: &RequestContext, op: AclOperation, rt: ResourceType, name: &str) -> bool {
        match &self.authorizer {
            None => true,
            Some(a) => a.authorize(&ctx.principal, &ctx.peer.ip().to_string(), op, rt, name),
        }
    }

    /// The KIP-430 `authorized_operations` bitfield of resource `name`: the operations its type
    /// supports that this principal may perform (Kafka's `AuthHelper.authorizedOperations`;
    /// every one without an authorizer), or [`NOT_REQUESTED`] when the client did not ask.
    pub(crate) fn authorized_operations(
        &self,
        ctx: &RequestContext,
        requested: bool,
        resource: crate::protocol::authorized_operations::ResourceType,
        name: &str,
    ) -> i32 {
        use crate::protocol::authorized_operations::{supported_operations, ResourceType as Kind};
        if !requested {
            return NOT_REQUESTED;
        }
        let rt = match resource {
            Kind::Topic => ResourceType::Topic,
            Kind::Group => ResourceType::Group,
            Kind::Cluster => ResourceType::Cluster,
        };
        supported_operations(resource)
            .iter()
            .filter_map(|code| AclOperation::from_code(*code as i8))
            .filter(|op| self.authorized(ctx, *op, rt, name))
            .fold(0i32, |bits, op| bits | (1i32 << op.code()))
    }

    /// `op` on the cluster resource.
    pub(crate) fn authorized_cluster(&self, ctx: &RequestContext, op: AclOperation) -> bool {
        self.authorized(ctx, op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// `op` on a topic.
    pub(crate) fn authorized_topic(&self, ctx: &RequestContext, op: AclOperation, topic: &str) -> bool {
        self.authorized(ctx, op, ResourceType::Topic, topic)
    }

    /// `op` on a group.
    pub(crate) fn authorized_group(&self, ctx: &RequestContext, op: AclOperation, group: &str) -> bool {
        self.authorized(ctx, op, ResourceType::Group, group)
    }

    /// CREATE on the cluster or on the topic (CreateTopics, Metadata's auto-creation).
    pub(crate) fn may_create_topic(&self, ctx: &RequestContext, topic: &str) -> bool {
        self.authorized_cluster(ctx, AclOperation::Create) || self.authorized_topic(ctx, AclOperation::Create, topic)
    }

    /// The code every partition of a Produce gets before any topic check: WRITE on the
    /// transactional id, IDEMPOTENT_WRITE on the cluster for idempotent batches.
    pub(crate) fn produce_denied(&self, ctx: &RequestContext, request: &ProduceRequest) -> Option<i16> {
        self.authorizer.as_ref()?;
        if let Some(txn) = &request.transactional_id {
            if !self.authorized(ctx, AclOperation::Write, ResourceType::TransactionalId, txn) {
                return Some(TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
            }
        }
        let idempotent = request
            .topic_data
            .iter()
            .flat_map(|t| t.partition_data.iter())
            .filter_map(|p| p.records.as_ref())
            .any(|r| batch_producer_id(r).is_some_and(|id| id >= 0));
        if idempotent && request.transactional_id.is_none() {
            return self.cluster_denied(ctx, AclOperation::IdempotentWrite);
        }
        None
    }

    /// `None` when allowed, else TOPIC_AUTHORIZATION_FAILED.
    pub(crate) fn topic_denied(&self, ctx: &RequestContext, op: AclOperation, topic: &str) -> Option<i16> {
        (!self.authorized_topic(ctx, op, topic)).then_some(TOPIC_AUTHORIZATION_FAILED)
    }

    /// `None` when allowed, else GROUP_AUTHORIZATION_FAILED.
    pub(crate) fn group_denied(&self, ctx: &RequestContext, op: AclOperation, group: &str) -> Option<i16> {
        (!self.authorized_group(ctx, op, group)).then_some(GROUP_AUTHORIZATION_FAILED)
    }

    /// A config resource's check, as Kafka's `authorizeConfigResource`: a topic by its own ACLs,
    /// a broker (or the broker-wide default, or a broker logger) by the cluster's.
    pub(crate) fn config_resource_denied(
        &self,
        ctx: &RequestContext,
        op: AclOperation,
        resource_type: i8,
        name: &str,
    ) -> Option<i16> {
        const TOPIC: i8 = 2;
        if resource_type == TOPIC {
            self.topic_denied(ctx, op, name)
        } else {
            self.cluster_denied(ctx, op)
        }
    }

    /// `None` when allowed, else CLUSTER_AUTHORIZATION_FAILED.
    pub(crate) fn cluster_denied(&self, ctx: &RequestContext, op: AclOperation) -> Option<i16> {
        (!self.authorized_cluster(ctx, op)).then_some(CLUSTER_AUTHORIZATION_FAILED)
    }
}
