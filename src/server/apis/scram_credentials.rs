//! DescribeUserScramCredentials v0 and AlterUserScramCredentials v0 (KIP-554), as Kafka's ZK-mode
//! `ZkAdminManager` answers them: credentials live in `/config/users/<user>` in Kafka's text
//! form, each change is announced through `/config/changes` (so every broker's credential cache
//! reloads it), and a user's alterations in one request are one conditional write. Describing
//! needs DESCRIBE on the cluster and altering ALTER, when an authorizer is configured.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
};

use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::security::authorizer::acl::AclOperation;
use crate::security::sasl::credentials::{credentials_of, ScramCredential};
use crate::security::sasl::ScramMechanism;
use crate::zk::store::ZkStore;
use crate::zk::{KafkaZkError, ZkError};

const RESOURCE_NOT_FOUND: i16 = ResponseError::ResourceNotFound.code();
const DUPLICATE_RESOURCE: i16 = ResponseError::DuplicateResource.code();
const UNACCEPTABLE_CREDENTIAL: i16 = ResponseError::UnacceptableCredential.code();
const UNSUPPORTED_SASL_MECHANISM: i16 = ResponseError::UnsupportedSaslMechanism.code();
const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();

type Failure = (i16, String);

pub(super) async fn describe(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if let Some(code) = apis.cluster_denied(ctx, AclOperation::Describe) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes("Cluster authorization failed.")));
    }
    let named: Option<Vec<String>> = request
        .users
        .filter(|u| !u.is_empty())
        .map(|u| u.into_iter().map(|n| n.name.to_string()).collect());
    let users = match &named {
        Some(users) => users.clone(),
        None => match apis
            .zk
            .store()
            .children(&crate::zk::paths::config_entity("users", ""))
            .await
        {
            Ok(children) => children,
            Err(ZkError::NoNode { .. }) => Vec::new(),
            Err(e) => {
                return DescribeUserScramCredentialsResponse::default()
                    .with_error_code(UNKNOWN_SERVER_ERROR)
                    .with_error_message(Some(str_bytes(&e.to_string())))
            }
        },
    };
    let mut seen = BTreeSet::new();
    let duplicated: BTreeSet<&String> = users.iter().filter(|u| !seen.insert(*u)).collect();
    let mut results = Vec::new();
    let mut answered = BTreeSet::new();
    for user in &users {
        if !answered.insert(user) {
            continue;
        }
        let result = DescribeUserScramCredentialsResult::default().with_user(str_bytes(user));
        let outcome = if duplicated.contains(user) {
            Err((
                DUPLICATE_RESOURCE,
                format!("Cannot describe SCRAM credentials for the same user twice in a single request: {user}"),
            ))
        } else {
            match apis.zk.entity_config("users", user).await {
                Ok(config) => Ok(credentials_of(user, &config)),
                Err(e) => Err((UNKNOWN_SERVER_ERROR, e.to_string())),
            }
        };
        let result = match outcome {
            Ok(creds) if creds.is_empty() => {
                if named.is_none() {
                    continue; // listing everyone: users with only quotas have no credentials
                }
                result
                    .with_error_code(RESOURCE_NOT_FOUND)
                    .with_error_message(Some(str_bytes(&format!(
                        "Attempt to describe a user credential that does not exist: {user}"
                    ))))
            }
            Ok(creds) => result.with_credential_infos(
                creds
                    .iter()
                    .map(|(m, c)| {
                        CredentialInfo::default()
                            .with_mechanism(m.wire_type())
                            .with_iterations(i32::try_from(c.iterations).unwrap_or(i32::MAX))
                    })
                    .collect(),
            ),
            Err((code, message)) => result
                .with_error_code(code)
                .with_error_message(Some(str_bytes(&message))),
        };
        results.push(result);
    }
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

/// One user's requested changes: mechanisms to delete and credentials to set.
#[derive(Default)]
struct UserChanges {
    delete: Vec<ScramMechanism>,
    upsert: Vec<(ScramMechanism, ScramCredential)>,
    refused: Option<Failure>,
}

/// Kafka's checks of one alteration, before anything is written.
fn check(user: &str, mechanism: i8, iterations: Option<i32>) -> Result<ScramMechanism, Failure> {
    if user.is_empty() {
        return Err((UNACCEPTABLE_CREDENTIAL, "Username must not be empty".into()));
    }
    let m = ScramMechanism::from_wire_type(mechanism)
        .ok_or((UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism".to_string()))?;
    match iterations {
        Some(i) if i < m.min_iterations() => Err((UNACCEPTABLE_CREDENTIAL, "Too few iterations".into())),
        Some(i) if i > m.max_iterations() => Err((UNACCEPTABLE_CREDENTIAL, "Too many iterations".into())),
        _ => Ok(m),
    }
}

/// Groups the request by user, refusing a user whose alterations are invalid or name the same
/// mechanism twice (nothing is written for that user).
fn plan(request: &AlterUserScramCredentialsRequest) -> BTreeMap<String, UserChanges> {
    let mut users: BTreeMap<String, UserChanges> = BTreeMap::new();
    let mut seen: BTreeSet<(String, i8)> = BTreeSet::new();
    let alterations = request
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism, None))
        .chain(
            request
                .upsertions
                .iter()
                .map(|u| (u.name.to_string(), u.mechanism, Some(u))),
        );
    for (user, mechanism, upsert) in alterations {
        let changes = users.entry(user.clone()).or_default();
        if changes.refused.is_some() {
            continue;
        }
        if !seen.insert((user.clone(), mechanism)) {
            changes.refused = Some((
                DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request".into(),
            ));
            continue;
        }
        match (check(&user, mechanism, upsert.map(|u| u.iterations)), upsert) {
            (Err(failure), _) => changes.refused = Some(failure),
            (Ok(m), None) => changes.delete.push(m),
            (Ok(m), Some(u)) => {
                let iterations = u32::try_from(u.iterations).unwrap_or_default();
                let credential =
                    ScramCredential::from_salted_password(m, &u.salted_password, u.salt.to_vec(), iterations);
                changes.upsert.push((m, credential));
            }
        }
    }
    users
}

pub(super) async fn alter(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let denied = apis.cluster_denied(ctx, AclOperation::Alter);
    let mut results = Vec::new();
    for (user, changes) in plan(&request) {
        let outcome = match (denied, changes.refused) {
            (Some(code), _) => Err((code, "Cluster authorization failed.".to_string())),
            (None, Some(failure)) => Err(failure),
            (None, None) => write_user(apis, &user, &changes.delete, &changes.upsert).await,
        };
        let mut result = AlterUserScramCredentialsResult::default().with_user(str_bytes(&user));
        if let Err((code, message)) = outcome {
            tracing::info!(%user, code, %message, "AlterUserScramCredentials refused");
            result.error_code = code;
            result.error_message = Some(str_bytes(&message));
        }
        results.push(result);
    }
    AlterUserScramCredentialsResponse::default().with_results(results)
}

/// Applies one user's changes to `/config/users/<user>` with the version read, retrying a
/// concurrent writer's conflict; other keys of the entity (quotas) are kept.
async fn write_user(
    apis: &KafkaApis,
    user: &str,
    delete: &[ScramMechanism],
    upsert: &[(ScramMechanism, ScramCredential)],
) -> Result<(), Failure> {
    for _ in 0..5 {
        let (mut config, version) = apis
            .zk
            .entity_config_versioned("users", user)
            .await
            .map_err(|e| (UNKNOWN_SERVER_ERROR, e.to_string()))?;
        for m in delete {
            if config.remove(m.name()).is_none() {
                return Err((
                    RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist".into(),
                ));
            }
        }
        for (m, c) in upsert {
            config.insert(m.name().to_string(), c.to_kafka_string());
        }
        match apis.zk.change_entity_config("users", user, &config, version).await {
            Ok(_) => return Ok(()),
            Err(KafkaZkError::Zk(ZkError::BadVersion { .. } | ZkError::NodeExists { .. })) => continue,
            Err(e) => return Err((UNKNOWN_SERVER_ERROR, e.to_string())),
        }
    }
    Err((
        UNKNOWN_SERVER_ERROR,
        format!("/config/users/{user} kept changing under this request"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::alter_user_scram_credentials_request::{
        ScramCredentialDeletion, ScramCredentialUpsertion,
    };

    fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
        ScramCredentialUpsertion::default()
            .with_name(str_bytes(name))
            .with_mechanism(mechanism)
            .with_iterations(iterations)
            .with_salt(bytes::Bytes::from_static(b"salt"))
            .with_salted_password(bytes::Bytes::from_static(b"0123456789abcdef0123456789abcdef"))
    }

    #[test]
    fn alterations_are_checked_as_kafka_checks_them() {
        let request = AlterUserScramCredentialsRequest::default()
            .with_deletions(vec![ScramCredentialDeletion::default()
                .with_name(str_bytes("dup"))
                .with_mechanism(1)])
            .with_upsertions(vec![
                upsert("ok", 1, 8192),
                upsert("few", 1, 1000),
                upsert("many", 2, 20_000),
                upsert("mech", 9, 8192),
                upsert("", 1, 8192),
                upsert("dup", 1, 8192),
            ]);
        let plan = plan(&request);
        let code = |u: &str| plan[u].refused.as_ref().map(|(c, _)| *c);
        assert_eq!(code("ok"), None);
        assert_eq!(plan["ok"].upsert.len(), 1);
        assert_eq!(code("few"), Some(UNACCEPTABLE_CREDENTIAL));
        assert_eq!(code("many"), Some(UNACCEPTABLE_CREDENTIAL));
        assert_eq!(code("mech"), Some(UNSUPPORTED_SASL_MECHANISM));
        assert_eq!(code(""), Some(UNACCEPTABLE_CREDENTIAL));
        assert_eq!(code("dup"), Some(DUPLICATE_RESOURCE));
    }

    #[test]
    fn a_salted_password_gives_the_credential_a_password_gives() {
        let m = ScramMechanism::Sha256;
        let salted = m.salted_password("alice-secret", b"salt", 4096);
        assert_eq!(
            ScramCredential::from_salted_password(m, &salted, b"salt".to_vec(), 4096),
            ScramCredential::generate(m, "alice-secret", b"salt".to_vec(), 4096)
        );
    }
}
