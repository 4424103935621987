//! `kastle configs --entity-type users`: SCRAM credentials, as Kafka 3.9's `kafka-configs.sh
//! --bootstrap-server` manages them (KIP-554). `--alter --add-config
//! 'SCRAM-SHA-256=[iterations=8192,password=…]'` and `--delete-config SCRAM-SHA-256` become one
//! AlterUserScramCredentials request to the controller, `--describe` a
//! DescribeUserScramCredentials. As Kafka's admin client does, the salt is generated and the
//! password salted (PBKDF2, RFC 5802's `Hi`) here, so the password never leaves the tool.
//!
//! Client quotas (`producer_byte_rate`, …), which Kafka keeps in the same entity, are not served
//! by kastle: naming one is an error, and `--describe` shows only SCRAM credentials.

use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::describe_user_scram_credentials_response::DescribeUserScramCredentialsResult;
use kafka_protocol::messages::{AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest};

use super::client::{str_bytes, Admin};
use super::configs::{completed_line, parse_add_config, ConfigsArgs};
use super::{fail, java_exception, CliResult};
use crate::protocol::error_codes;
use crate::security::sasl::credentials::ScramCredential;
use crate::security::sasl::ScramMechanism;

const RESOURCE_NOT_FOUND: i16 = kafka_protocol::error::ResponseError::ResourceNotFound.code();

/// Kafka's `ConfigCommand.DefaultScramIterations`, used when `iterations=` is absent or -1.
pub const DEFAULT_ITERATIONS: i32 = 4096;

/// The user and client quota configs Kafka keeps beside SCRAM credentials (`QuotaConfigs`).
const QUOTA_CONFIGS: [&str; 4] = [
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
];

/// One credential to set: the mechanism, its iterations and the password (never sent).
#[derive(Clone, PartialEq, Eq)]
pub struct Upsert {
    pub mechanism: ScramMechanism,
    pub iterations: i32,
    pub password: String,
}

impl std::fmt::Debug for Upsert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upsert")
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// What one `--alter` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Alteration {
    pub delete: Vec<ScramMechanism>,
    pub upsert: Vec<Upsert>,
}

fn known_mechanisms() -> String {
    ScramMechanism::ALL.map(ScramMechanism::name).join(", ")
}

/// `iterationsAndPasswordBytes`: `[iterations=N,]password=P` (N absent or -1: the default),
/// with the mechanism's bounds checked here rather than by the broker.
pub fn parse_credential(mechanism: ScramMechanism, value: &str) -> CliResult<Upsert> {
    let invalid = || {
        fail(format!(
            "Invalid credential property {mechanism}={value} (expected [iterations=<n>,]password=<password>)"
        ))
    };
    let (iterations, password) = match value.strip_prefix("iterations=").and_then(|r| r.split_once(',')) {
        Some((n, rest)) if rest.starts_with("password=") => match n {
            "-1" => (DEFAULT_ITERATIONS, rest),
            n => match n.parse::<i32>() {
                Ok(n) => (n, rest),
                Err(_) => return invalid(),
            },
        },
        _ => (DEFAULT_ITERATIONS, value),
    };
    let Some(password) = password.strip_prefix("password=") else {
        return invalid();
    };
    if iterations < mechanism.min_iterations() {
        return fail(format!(
            "Iterations {iterations} is less than the minimum {} required for {mechanism}",
            mechanism.min_iterations()
        ));
    }
    if iterations > mechanism.max_iterations() {
        return fail(format!(
            "Iterations {iterations} is more than the maximum {} allowed for {mechanism}",
            mechanism.max_iterations()
        ));
    }
    if password.is_empty() {
        return fail(format!("Password must not be empty for {mechanism}"));
    }
    Ok(Upsert {
        mechanism,
        iterations,
        password: password.to_owned(),
    })
}

/// ConfigCommand's checks of a users `--alter` (`user` is `""` for `--entity-default`), before
/// anything is sent: only SCRAM mechanism keys, no quotas (not served), no default user.
pub fn plan(user: &str, add: &[(String, String)], delete: &[String]) -> CliResult<Alteration> {
    let unknown = |k: &&str| ScramMechanism::from_name(k).is_none() && !QUOTA_CONFIGS.contains(k);
    let unknown_add: Vec<&str> = add.iter().map(|(k, _)| k.as_str()).filter(unknown).collect();
    if !unknown_add.is_empty() {
        return fail(format!(
            "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. \
             Unexpected config names: Set({}) (SCRAM mechanisms: {})",
            unknown_add.join(", "),
            known_mechanisms()
        ));
    }
    let unknown_delete: Vec<&str> = delete.iter().map(String::as_str).filter(unknown).collect();
    if !unknown_delete.is_empty() {
        return fail(format!(
            "Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. \
             Unexpected config names: List({}) (SCRAM mechanisms: {})",
            unknown_delete.join(", "),
            known_mechanisms()
        ));
    }
    let quotas: Vec<&str> = add
        .iter()
        .map(|(k, _)| k.as_str())
        .chain(delete.iter().map(String::as_str))
        .filter(|k| QUOTA_CONFIGS.contains(k))
        .collect();
    if !quotas.is_empty() {
        return fail(format!(
            "Client quotas are not served by kastle ({}); only SCRAM credential configs ({}) can be altered for users",
            quotas.join(", "),
            known_mechanisms()
        ));
    }
    if user.is_empty() {
        return fail(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.",
        );
    }
    let mut alteration = Alteration::default();
    for name in delete {
        if let Some(m) = ScramMechanism::from_name(name) {
            alteration.delete.push(m);
        }
    }
    for (name, value) in add {
        if let Some(m) = ScramMechanism::from_name(name) {
            alteration.upsert.push(parse_credential(m, value)?);
        }
    }
    Ok(alteration)
}

/// The AlterUserScramCredentials request for `user`: each upsert salted with `salt_for(m)`
/// (the admin client's `getScramCredentialUpsertion`).
pub fn alter_request(
    user: &str,
    alteration: &Alteration,
    mut salt_for: impl FnMut(ScramMechanism) -> Vec<u8>,
) -> AlterUserScramCredentialsRequest {
    AlterUserScramCredentialsRequest::default()
        .with_deletions(
            alteration
                .delete
                .iter()
                .map(|m| {
                    ScramCredentialDeletion::default()
                        .with_name(str_bytes(user))
                        .with_mechanism(m.wire_type())
                })
                .collect(),
        )
        .with_upsertions(
            alteration
                .upsert
                .iter()
                .map(|u| {
                    let salt = salt_for(u.mechanism);
                    let iterations = u32::try_from(u.iterations).unwrap_or_default();
                    let salted = u.mechanism.salted_password(&u.password, &salt, iterations);
                    ScramCredentialUpsertion::default()
                        .with_name(str_bytes(user))
                        .with_mechanism(u.mechanism.wire_type())
                        .with_iterations(u.iterations)
                        .with_salt(salt.into())
                        .with_salted_password(salted.into())
                })
                .collect(),
        )
}

/// ConfigCommand's lines for a DescribeUserScramCredentials answer: one per user that has
/// credentials (users without any, RESOURCE_NOT_FOUND, print nothing, as the admin client's
/// `users()` leaves them out).
pub fn format_describe(results: &[DescribeUserScramCredentialsResult]) -> String {
    let mut out = String::new();
    for r in results {
        if r.error_code == RESOURCE_NOT_FOUND {
            continue;
        }
        if r.error_code != error_codes::NONE {
            let exception = java_exception(r.error_code, r.error_message.as_deref());
            let simple = exception.trim_start_matches("org.apache.kafka.common.errors.");
            out.push_str(&format!(
                "Error retrieving SCRAM credential configs for user-principal '{}': {simple}\n",
                r.user
            ));
            continue;
        }
        let infos: Vec<String> = r
            .credential_infos
            .iter()
            .map(|i| {
                let name = ScramMechanism::from_wire_type(i.mechanism).map_or("UNKNOWN", ScramMechanism::name);
                format!("{name}=iterations={}", i.iterations)
            })
            .collect();
        out.push_str(&format!(
            "SCRAM credential configs for user-principal '{}' are {}\n",
            r.user,
            infos.join(", ")
        ));
    }
    out
}

/// What `run` checked before connecting: an alteration, or a describe of one user or all.
#[derive(Debug)]
pub enum UsersCommand {
    Alter(String, Alteration),
    Describe(Option<String>),
}

/// The checks that need no broker (their messages print without the "Error while executing"
/// wrapper, as Kafka prints its IllegalArgumentExceptions).
pub fn check(a: &ConfigsArgs, name: Option<&str>) -> CliResult<UsersCommand> {
    if a.describe {
        return match name {
            Some("") => fail("--entity-default of users describes client quotas, which kastle does not serve"),
            n => Ok(UsersCommand::Describe(n.map(str::to_owned))),
        };
    }
    let add = match &a.add_config {
        Some(raw) => parse_add_config(raw)?,
        None => Vec::new(),
    };
    let delete: Vec<String> = a.delete_config.iter().map(|k| k.trim().to_owned()).collect();
    let user = name.unwrap_or_default().to_owned();
    let alteration = plan(&user, &add, &delete)?;
    Ok(UsersCommand::Alter(user, alteration))
}

/// Sends the checked command; what it prints goes to stdout.
pub async fn execute(admin: &mut Admin, command: UsersCommand) -> CliResult<()> {
    match command {
        UsersCommand::Describe(user) => {
            let request = DescribeUserScramCredentialsRequest::default()
                .with_users(user.map(|u| vec![UserName::default().with_name(str_bytes(&u))]));
            let response = admin.send_any(request, (0, 0)).await?;
            if response.error_code != error_codes::NONE {
                return fail(java_exception(response.error_code, response.error_message.as_deref()));
            }
            print!("{}", format_describe(&response.results));
        }
        UsersCommand::Alter(user, alteration) => {
            let request = alter_request(&user, &alteration, |_| ScramCredential::random_salt());
            let response = admin
                .send_to_controller(request, (0, 0), |r| {
                    r.results.iter().any(|u| u.error_code == error_codes::NOT_CONTROLLER)
                })
                .await?;
            for r in &response.results {
                if r.error_code != error_codes::NONE {
                    return fail(java_exception(r.error_code, r.error_message.as_deref()));
                }
            }
            println!("{}", completed_line("users", &user));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "configs_users_tests.rs"]
mod tests;
