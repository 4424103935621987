//! `kastle acls`, shaped like Kafka's `kafka-acls.sh --bootstrap-server`: `--add`, `--remove`
//! and `--list` of ACLs on `--topic`, `--group` or `--cluster` resources
//! (`--resource-pattern-type`), for `--allow-principal`/`--deny-principal` from
//! `--allow-host`/`--deny-host` with `--operation`s, over CreateAcls, DeleteAcls and
//! DescribeAcls. Prints what kafka-acls prints.

use std::collections::BTreeMap;

use clap::Args;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};

use super::client::{str_bytes, Admin};
use super::{fail, java_exception, require_bootstrap, CliError, CliResult};
use crate::protocol::error_codes;
use crate::security::authorizer::acl::{
    AclBinding, AclEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType, CLUSTER_NAME,
    WILDCARD,
};

const VERSIONS: (i16, i16) = (0, 3);

#[derive(Debug, Args)]
#[command(
    about = "Add, remove or list ACLs, like kafka-acls.sh",
    long_about = "This tool helps to manage acls on kafka (kafka-acls.sh with --bootstrap-server). \
        Needs a broker with authorizer.class.name=kafka.security.authorizer.AclAuthorizer."
)]
pub struct AclsArgs {
    /// A list of host/port pairs to use for establishing the connection to the Kafka cluster.
    #[arg(long, value_name = "server to connect to")]
    pub bootstrap_server: Option<String>,
    /// Indicates you are trying to add ACLs.
    #[arg(long)]
    pub add: bool,
    /// Indicates you are trying to remove ACLs.
    #[arg(long)]
    pub remove: bool,
    /// List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster
    /// to specify a resource.
    #[arg(long)]
    pub list: bool,
    /// principal is in principalType:name format. Note that principalType must be supported by
    /// the Authorizer being used.
    #[arg(long)]
    pub allow_principal: Vec<String>,
    #[arg(long)]
    pub deny_principal: Vec<String>,
    /// Host from which principals listed in --allow-principal will have access (default: *).
    #[arg(long)]
    pub allow_host: Vec<String>,
    /// Host from which principals listed in --deny-principal will be denied access (default: *).
    #[arg(long)]
    pub deny_host: Vec<String>,
    /// Operation that is being allowed or denied (default: All).
    #[arg(long)]
    pub operation: Vec<String>,
    /// topic to which ACLs should be added or removed. A value of '*' indicates ACL should
    /// apply to all topics.
    #[arg(long)]
    pub topic: Vec<String>,
    /// Consumer Group to which the ACLs should be added or removed.
    #[arg(long)]
    pub group: Vec<String>,
    /// Add/Remove cluster ACLs.
    #[arg(long)]
    pub cluster: bool,
    /// The type of the resource pattern or pattern filter: LITERAL, PREFIXED, or, for --list
    /// and --remove, MATCH or ANY.
    #[arg(long, default_value = "LITERAL")]
    pub resource_pattern_type: String,
    /// Assume Yes to all queries and do not prompt.
    #[arg(long)]
    pub force: bool,
}

/// The resources named on the command line, with the pattern type.
fn resources(a: &AclsArgs, pattern_type: PatternType) -> Vec<ResourcePattern> {
    let make = |t, n: &str| ResourcePattern {
        resource_type: t,
        name: n.to_string(),
        pattern_type,
    };
    let mut out: Vec<ResourcePattern> = a.topic.iter().map(|t| make(ResourceType::Topic, t)).collect();
    out.extend(a.group.iter().map(|g| make(ResourceType::Group, g)));
    if a.cluster {
        out.push(make(ResourceType::Cluster, CLUSTER_NAME));
    }
    out
}

fn operations(a: &AclsArgs) -> CliResult<Vec<AclOperation>> {
    if a.operation.is_empty() {
        return Ok(vec![AclOperation::All]);
    }
    a.operation
        .iter()
        .map(|o| {
            AclOperation::parse(o)
                .filter(|op| !matches!(op, AclOperation::Any | AclOperation::Unknown))
                .ok_or_else(|| CliError::Failed(format!("Invalid operation: {o}")))
        })
        .collect()
}

/// The entries `--add` creates (and `--remove` names when principals are given).
fn entries(a: &AclsArgs) -> CliResult<Vec<AclEntry>> {
    let ops = operations(a)?;
    let mut out = Vec::new();
    for (principals, hosts, permission) in [
        (&a.allow_principal, &a.allow_host, AclPermissionType::Allow),
        (&a.deny_principal, &a.deny_host, AclPermissionType::Deny),
    ] {
        let hosts: Vec<String> = if hosts.is_empty() {
            vec![WILDCARD.to_string()]
        } else {
            hosts.clone()
        };
        for p in principals {
            if p.parse::<crate::security::KafkaPrincipal>().is_err() {
                return fail(format!(
                    "Invalid principal: {p} (expected principalType:name, e.g. User:alice)"
                ));
            }
            for h in &hosts {
                for op in &ops {
                    out.push(AclEntry {
                        principal: p.clone(),
                        host: h.clone(),
                        operation: *op,
                        permission,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// kafka-acls' block for one resource.
pub fn format_resource(heading: &str, pattern: &ResourcePattern, acls: &[AclEntry]) -> String {
    let lines: Vec<String> = acls.iter().map(|e| format!("\t{e}")).collect();
    format!("{heading} `{pattern}`: \n {} \n\n", lines.join("\n"))
}

fn check_args(a: &AclsArgs) -> CliResult<PatternType> {
    let actions = [a.add, a.remove, a.list].iter().filter(|x| **x).count();
    if actions != 1 {
        return fail("Command must include exactly one action: --list, --add, --remove. ");
    }
    let pattern_type = PatternType::parse(&a.resource_pattern_type)
        .filter(|p| *p != PatternType::Unknown)
        .ok_or_else(|| CliError::Failed(format!("Invalid resource pattern type: {}", a.resource_pattern_type)))?;
    if a.add && !matches!(pattern_type, PatternType::Literal | PatternType::Prefixed) {
        return fail(format!(
            "A '--resource-pattern-type' value of '{}' is not valid when adding acls.",
            a.resource_pattern_type
        ));
    }
    if (a.add || a.remove) && resources(a, pattern_type).is_empty() {
        return fail("You must provide at least one resource: --topic <topic> or --cluster or --group <group>");
    }
    if a.add && a.allow_principal.is_empty() && a.deny_principal.is_empty() {
        return fail("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.");
    }
    Ok(pattern_type)
}

pub async fn run(a: &AclsArgs) -> CliResult<()> {
    let pattern_type = check_args(a)?;
    let bootstrap = require_bootstrap(&a.bootstrap_server, "Missing required argument \"[bootstrap-server]\"")?;
    let admin = Admin::connect(bootstrap).await?;
    if a.add {
        add(&admin, a, pattern_type).await?;
        list(&admin, a, pattern_type).await
    } else if a.remove {
        if !a.force && !confirm("Are you sure you want to delete all ACLs for resource filter(s)? (y/n)") {
            return Ok(());
        }
        remove(&admin, a, pattern_type).await?;
        list(&admin, a, pattern_type).await
    } else {
        list(&admin, a, pattern_type).await
    }
}

fn confirm(question: &str) -> bool {
    println!("{question}");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok() && line.trim().eq_ignore_ascii_case("y")
}

async fn add(admin: &Admin, a: &AclsArgs, pattern_type: PatternType) -> CliResult<()> {
    let entries = entries(a)?;
    let mut creations = Vec::new();
    for r in resources(a, pattern_type) {
        print!("{}", format_resource("Adding ACLs for resource", &r, &entries));
        for e in &entries {
            creations.push(
                AclCreation::default()
                    .with_resource_type(r.resource_type.code())
                    .with_resource_name(str_bytes(&r.name))
                    .with_resource_pattern_type(r.pattern_type.code())
                    .with_principal(str_bytes(&e.principal))
                    .with_host(str_bytes(&e.host))
                    .with_operation(e.operation.code())
                    .with_permission_type(e.permission.code()),
            );
        }
    }
    let response = admin
        .send_any(CreateAclsRequest::default().with_creations(creations), VERSIONS)
        .await?;
    if let Some(r) = response.results.iter().find(|r| r.error_code != error_codes::NONE) {
        return fail(format!(
            "Error while executing ACL command: {}",
            java_exception(r.error_code, r.error_message.as_deref())
        ));
    }
    Ok(())
}

fn filter_of(r: Option<&ResourcePattern>, pattern_type: PatternType, e: Option<&AclEntry>) -> DeleteAclsFilter {
    DeleteAclsFilter::default()
        .with_resource_type_filter(r.map_or(ResourceType::Any, |r| r.resource_type).code())
        .with_resource_name_filter(r.map(|r| str_bytes(&r.name)))
        .with_pattern_type_filter(pattern_type.code())
        .with_principal_filter(e.map(|e| str_bytes(&e.principal)))
        .with_host_filter(e.map(|e| str_bytes(&e.host)))
        .with_operation(e.map_or(AclOperation::Any, |e| e.operation).code())
        .with_permission_type(e.map_or(AclPermissionType::Any, |e| e.permission).code())
}

async fn remove(admin: &Admin, a: &AclsArgs, pattern_type: PatternType) -> CliResult<()> {
    let entries = entries(a)?;
    let mut filters = Vec::new();
    for r in resources(a, pattern_type) {
        if entries.is_empty() {
            filters.push(filter_of(Some(&r), pattern_type, None));
        }
        filters.extend(entries.iter().map(|e| filter_of(Some(&r), pattern_type, Some(e))));
    }
    let response = admin
        .send_any(DeleteAclsRequest::default().with_filters(filters), VERSIONS)
        .await?;
    if let Some(r) = response
        .filter_results
        .iter()
        .find(|r| r.error_code != error_codes::NONE)
    {
        return fail(format!(
            "Error while executing ACL command: {}",
            java_exception(r.error_code, r.error_message.as_deref())
        ));
    }
    Ok(())
}

/// A DescribeAcls request whose name, principal and host filters are null (match anything);
/// the codec's default is the empty string, which matches only things named "".
fn describe_request() -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
}

async fn list(admin: &Admin, a: &AclsArgs, pattern_type: PatternType) -> CliResult<()> {
    let named = resources(a, pattern_type);
    let requests: Vec<DescribeAclsRequest> = if named.is_empty() {
        vec![describe_request()
            .with_resource_type_filter(ResourceType::Any.code())
            .with_pattern_type_filter(PatternType::Any.code())
            .with_operation(AclOperation::Any.code())
            .with_permission_type(AclPermissionType::Any.code())]
    } else {
        named
            .iter()
            .map(|r| {
                describe_request()
                    .with_resource_type_filter(r.resource_type.code())
                    .with_resource_name_filter(Some(str_bytes(&r.name)))
                    .with_pattern_type_filter(pattern_type.code())
                    .with_operation(AclOperation::Any.code())
                    .with_permission_type(AclPermissionType::Any.code())
            })
            .collect()
    };
    let mut found: BTreeMap<ResourcePattern, Vec<AclEntry>> = BTreeMap::new();
    for request in requests {
        let response = admin.send_any(request, VERSIONS).await?;
        if response.error_code != error_codes::NONE {
            return fail(format!(
                "Error while executing ACL command: {}",
                java_exception(response.error_code, response.error_message.as_deref())
            ));
        }
        for binding in bindings_of(&response) {
            found.entry(binding.pattern).or_default().push(binding.entry);
        }
    }
    for (pattern, acls) in found {
        print!("{}", format_resource("Current ACLs for resource", &pattern, &acls));
    }
    Ok(())
}

/// The bindings of a DescribeAcls response (codes kastle does not know are skipped).
pub fn bindings_of(response: &kafka_protocol::messages::DescribeAclsResponse) -> Vec<AclBinding> {
    let mut out = Vec::new();
    for r in &response.resources {
        let (Some(resource_type), Some(pattern_type)) = (
            ResourceType::from_code(r.resource_type),
            PatternType::from_code(r.pattern_type),
        ) else {
            continue;
        };
        for acl in &r.acls {
            let (Some(operation), Some(permission)) = (
                AclOperation::from_code(acl.operation),
                AclPermissionType::from_code(acl.permission_type),
            ) else {
                continue;
            };
            out.push(AclBinding {
                pattern: ResourcePattern {
                    resource_type,
                    name: r.resource_name.to_string(),
                    pattern_type,
                },
                entry: AclEntry {
                    principal: acl.principal.to_string(),
                    host: acl.host.to_string(),
                    operation,
                    permission,
                },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_print_as_kafka_acls_does() {
        let p = ResourcePattern::literal(ResourceType::Topic, "a");
        let e = AclEntry {
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::IdempotentWrite,
            permission: AclPermissionType::Allow,
        };
        assert_eq!(
            format_resource("Current ACLs for resource", &p, &[e]),
            "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=a, patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW) \n\n"
        );
    }
}
