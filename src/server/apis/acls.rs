//! CreateAcls, DescribeAcls and DeleteAcls (v0–3), as Kafka's `AclApis`: SECURITY_DISABLED
//! without an authorizer; CLUSTER_AUTHORIZATION_FAILED for a caller without ALTER (create,
//! delete) or DESCRIBE (describe) on the cluster; INVALID_REQUEST for a malformed binding or
//! filter. Writes go to ZooKeeper ([`store::update`], which announces them to every broker)
//! and then to this broker's cache.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse, DescribeAclsRequest,
    DescribeAclsResponse,
};

use super::authorize::{CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED};
use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::security::authorizer::acl::{
    AclBinding, AclEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
};
use crate::security::authorizer::filter::{validate_new_binding, AclBindingFilter};
use crate::security::authorizer::store;

const NO_AUTHORIZER: &str = "No Authorizer is configured on the broker";

fn msg(s: &str) -> Option<kafka_protocol::protocol::StrBytes> {
    Some(str_bytes(s))
}

pub(super) async fn create_acls(apis: &KafkaApis, ctx: &RequestContext, r: CreateAclsRequest) -> CreateAclsResponse {
    let fail = |code: i16, m: &str| -> Vec<AclCreationResult> {
        r.creations
            .iter()
            .map(|_| {
                AclCreationResult::default()
                    .with_error_code(code)
                    .with_error_message(msg(m))
            })
            .collect()
    };
    let Some(authorizer) = apis.authorizer.clone() else {
        return CreateAclsResponse::default().with_results(fail(SECURITY_DISABLED, NO_AUTHORIZER));
    };
    if !apis.authorized_cluster(ctx, AclOperation::Alter) {
        return CreateAclsResponse::default()
            .with_results(fail(CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."));
    }
    let mut results: Vec<AclCreationResult> = Vec::with_capacity(r.creations.len());
    // Valid bindings by pattern, with the index of each creation.
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<(usize, AclEntry)>> = BTreeMap::new();
    for (i, c) in r.creations.iter().enumerate() {
        results.push(AclCreationResult::default());
        let binding = (|| {
            Some(AclBinding {
                pattern: ResourcePattern {
                    resource_type: ResourceType::from_code(c.resource_type)?,
                    name: c.resource_name.to_string(),
                    pattern_type: PatternType::from_code(c.resource_pattern_type)?,
                },
                entry: AclEntry {
                    principal: c.principal.to_string(),
                    host: c.host.to_string(),
                    operation: AclOperation::from_code(c.operation)?,
                    permission: AclPermissionType::from_code(c.permission_type)?,
                },
            })
        })()
        .ok_or_else(|| "unknown resource type, pattern type, operation or permission type".to_string())
        .and_then(|b| validate_new_binding(&b).map(|()| b));
        match binding {
            Ok(b) => by_pattern.entry(b.pattern).or_default().push((i, b.entry)),
            Err(why) => {
                results[i].error_code = ec::INVALID_REQUEST;
                results[i].error_message = msg(&why);
            }
        }
    }
    let zk = apis.zk.store();
    for (pattern, entries) in by_pattern {
        let new: BTreeSet<AclEntry> = entries.iter().map(|(_, e)| e.clone()).collect();
        match store::update(zk, &pattern, |current| current.union(&new).cloned().collect()).await {
            Ok(acls) => authorizer.set_acls(pattern, acls),
            Err(e) => {
                tracing::warn!(%pattern, error = %e, "CreateAcls: ZooKeeper write failed");
                for (i, _) in entries {
                    results[i].error_code = ec::UNKNOWN_SERVER_ERROR;
                    results[i].error_message = msg(&e.to_string());
                }
            }
        }
    }
    CreateAclsResponse::default().with_results(results)
}

pub(super) fn describe_acls(apis: &KafkaApis, ctx: &RequestContext, r: DescribeAclsRequest) -> DescribeAclsResponse {
    let fail = |code: i16, m: &str| {
        DescribeAclsResponse::default()
            .with_error_code(code)
            .with_error_message(msg(m))
    };
    let Some(authorizer) = &apis.authorizer else {
        return fail(SECURITY_DISABLED, NO_AUTHORIZER);
    };
    if !apis.authorized_cluster(ctx, AclOperation::Describe) {
        return fail(CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
    }
    let filter = match AclBindingFilter::from_wire(
        r.resource_type_filter,
        r.resource_name_filter.as_deref(),
        r.pattern_type_filter,
        r.principal_filter.as_deref(),
        r.host_filter.as_deref(),
        r.operation,
        r.permission_type,
    ) {
        Ok(f) => f,
        Err(why) => return fail(ec::INVALID_REQUEST, &why),
    };
    let mut grouped: BTreeMap<ResourcePattern, Vec<AclDescription>> = BTreeMap::new();
    for b in authorizer.bindings(&filter) {
        grouped.entry(b.pattern).or_default().push(
            AclDescription::default()
                .with_principal(str_bytes(&b.entry.principal))
                .with_host(str_bytes(&b.entry.host))
                .with_operation(b.entry.operation.code())
                .with_permission_type(b.entry.permission.code()),
        );
    }
    DescribeAclsResponse::default().with_resources(
        grouped
            .into_iter()
            .map(|(p, acls)| {
                DescribeAclsResource::default()
                    .with_resource_type(p.resource_type.code())
                    .with_resource_name(str_bytes(&p.name))
                    .with_pattern_type(p.pattern_type.code())
                    .with_acls(acls)
            })
            .collect(),
    )
}

pub(super) async fn delete_acls(apis: &KafkaApis, ctx: &RequestContext, r: DeleteAclsRequest) -> DeleteAclsResponse {
    let fail = |code: i16, m: &str| -> Vec<DeleteAclsFilterResult> {
        r.filters
            .iter()
            .map(|_| {
                DeleteAclsFilterResult::default()
                    .with_error_code(code)
                    .with_error_message(msg(m))
            })
            .collect()
    };
    let Some(authorizer) = apis.authorizer.clone() else {
        return DeleteAclsResponse::default().with_filter_results(fail(SECURITY_DISABLED, NO_AUTHORIZER));
    };
    if !apis.authorized_cluster(ctx, AclOperation::Alter) {
        return DeleteAclsResponse::default()
            .with_filter_results(fail(CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."));
    }
    let zk = apis.zk.store();
    let mut results = Vec::with_capacity(r.filters.len());
    for f in &r.filters {
        let filter = match AclBindingFilter::from_wire(
            f.resource_type_filter,
            f.resource_name_filter.as_deref(),
            f.pattern_type_filter,
            f.principal_filter.as_deref(),
            f.host_filter.as_deref(),
            f.operation,
            f.permission_type,
        ) {
            Ok(filter) => filter,
            Err(why) => {
                results.push(
                    DeleteAclsFilterResult::default()
                        .with_error_code(ec::INVALID_REQUEST)
                        .with_error_message(msg(&why)),
                );
                continue;
            }
        };
        let mut matching: BTreeMap<ResourcePattern, Vec<AclEntry>> = BTreeMap::new();
        for b in authorizer.bindings(&filter) {
            matching.entry(b.pattern).or_default().push(b.entry);
        }
        let mut result = DeleteAclsFilterResult::default();
        for (pattern, entries) in matching {
            let written = store::update(zk, &pattern, |current| {
                current.iter().filter(|e| !filter.entry.matches(e)).cloned().collect()
            })
            .await;
            let (code, message) = match written {
                Ok(acls) => {
                    authorizer.set_acls(pattern.clone(), acls);
                    (ec::NONE, None)
                }
                Err(e) => (ec::UNKNOWN_SERVER_ERROR, msg(&e.to_string())),
            };
            for e in entries {
                result.matching_acls.push(
                    DeleteAclsMatchingAcl::default()
                        .with_error_code(code)
                        .with_error_message(message.clone())
                        .with_resource_type(pattern.resource_type.code())
                        .with_resource_name(str_bytes(&pattern.name))
                        .with_pattern_type(pattern.pattern_type.code())
                        .with_principal(str_bytes(&e.principal))
                        .with_host(str_bytes(&e.host))
                        .with_operation(e.operation.code())
                        .with_permission_type(e.permission.code()),
                );
            }
        }
        results.push(result);
    }
    DeleteAclsResponse::default().with_filter_results(results)
}
