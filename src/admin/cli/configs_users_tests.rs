use kafka_protocol::messages::describe_user_scram_credentials_response::CredentialInfo;

use super::*;
use crate::admin::cli::configs::check_args;

fn args(list: &[&str]) -> ConfigsArgs {
    use clap::Parser;
    #[derive(Debug, clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ConfigsArgs,
    }
    let mut argv = vec!["configs", "--bootstrap-server", "h:1"];
    argv.extend_from_slice(list);
    Wrap::try_parse_from(argv).expect("parse").a
}

fn message<T>(r: CliResult<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

const SHA256: ScramMechanism = ScramMechanism::Sha256;

#[test]
fn a_credential_is_iterations_and_password_as_kafka_parses_it() {
    let parsed = |v: &str| parse_credential(SHA256, v).map(|u| (u.iterations, u.password));
    assert_eq!(
        parsed("iterations=8192,password=secret").ok(),
        Some((8192, "secret".into()))
    );
    assert_eq!(parsed("password=secret").ok(), Some((4096, "secret".into())));
    assert_eq!(
        parsed("iterations=-1,password=secret").ok(),
        Some((4096, "secret".into()))
    );
    // The password is everything after `password=`, commas and `=` included.
    assert_eq!(parsed("password=a,b=c").ok(), Some((4096, "a,b=c".into())));
    assert_eq!(
        message(parsed("iterations=1000,password=x")),
        "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"
    );
    assert_eq!(
        message(parse_credential(ScramMechanism::Sha512, "iterations=20000,password=x")),
        "Iterations 20000 is more than the maximum 16384 allowed for SCRAM-SHA-512"
    );
    assert_eq!(
        message(parsed("iterations=many,password=x")),
        "Invalid credential property SCRAM-SHA-256=iterations=many,password=x (expected [iterations=<n>,]password=<password>)"
    );
    assert!(message(parsed("secret")).starts_with("Invalid credential property SCRAM-SHA-256=secret"));
    assert_eq!(
        message(parsed("password=")),
        "Password must not be empty for SCRAM-SHA-256"
    );
}

#[test]
fn only_scram_mechanisms_are_altered_and_quotas_are_refused_as_not_served() {
    let add = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
    assert_eq!(
        message(plan("alice", &add("SCRAM-SHA-1", "password=x"), &[])),
        "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. \
         Unexpected config names: Set(SCRAM-SHA-1) (SCRAM mechanisms: SCRAM-SHA-256, SCRAM-SHA-512)"
    );
    assert_eq!(
        message(plan("alice", &[], &["SCRAM-SHA-1".to_owned()])),
        "Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. \
         Unexpected config names: List(SCRAM-SHA-1) (SCRAM mechanisms: SCRAM-SHA-256, SCRAM-SHA-512)"
    );
    assert_eq!(
        message(plan("alice", &add("producer_byte_rate", "1024"), &[])),
        "Client quotas are not served by kastle (producer_byte_rate); only SCRAM credential configs \
         (SCRAM-SHA-256, SCRAM-SHA-512) can be altered for users"
    );
    assert_eq!(
        message(plan("", &add("SCRAM-SHA-256", "password=x"), &[])),
        "The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server."
    );
    let planned = plan(
        "alice",
        &[
            ("SCRAM-SHA-256".into(), "iterations=8192,password=secret".into()),
            ("SCRAM-SHA-512".into(), "password=other".into()),
        ],
        &[],
    )
    .expect("valid");
    assert_eq!(planned.delete, vec![]);
    assert_eq!(
        planned
            .upsert
            .iter()
            .map(|u| (u.mechanism, u.iterations, u.password.as_str()))
            .collect::<Vec<_>>(),
        vec![(SHA256, 8192, "secret"), (ScramMechanism::Sha512, 4096, "other")]
    );
}

#[test]
fn the_request_carries_a_salted_password_never_the_password() {
    let alteration = Alteration {
        delete: vec![ScramMechanism::Sha512],
        upsert: vec![Upsert {
            mechanism: SHA256,
            iterations: 8192,
            password: "secret".into(),
        }],
    };
    let request = alter_request("alice", &alteration, |_| b"fixed-salt".to_vec());
    assert_eq!(request.deletions.len(), 1);
    assert_eq!(request.deletions[0].mechanism, 2);
    let u = &request.upsertions[0];
    assert_eq!((u.name.as_str(), u.mechanism, u.iterations), ("alice", 1, 8192));
    assert_eq!(u.salt.as_ref(), b"fixed-salt");
    assert!(!u.salted_password.windows(6).any(|w| w == b"secret"));
    // The broker derives from it the credential a password login is checked against.
    assert_eq!(
        ScramCredential::from_salted_password(SHA256, &u.salted_password, u.salt.to_vec(), 8192),
        ScramCredential::generate(SHA256, "secret", b"fixed-salt".to_vec(), 8192)
    );
}

#[test]
fn describe_prints_kafkas_lines_and_skips_users_without_credentials() {
    let result = |user: &str, code: i16, infos: &[(i8, i32)]| {
        DescribeUserScramCredentialsResult::default()
            .with_user(str_bytes(user))
            .with_error_code(code)
            .with_error_message(
                (code != 0).then(|| str_bytes("Attempt to describe a user credential that does not exist")),
            )
            .with_credential_infos(
                infos
                    .iter()
                    .map(|(m, i)| CredentialInfo::default().with_mechanism(*m).with_iterations(*i))
                    .collect(),
            )
    };
    let results = vec![
        result("alice", 0, &[(1, 8192), (2, 4096)]),
        result("bob", RESOURCE_NOT_FOUND, &[]),
        result("carol", 0, &[(2, 4096)]),
    ];
    assert_eq!(
        format_describe(&results),
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n\
         SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096\n"
    );
    let duplicate = vec![DescribeUserScramCredentialsResult::default()
        .with_user(str_bytes("dave"))
        .with_error_code(kafka_protocol::error::ResponseError::DuplicateResource.code())
        .with_error_message(Some(str_bytes("twice")))];
    assert_eq!(
        format_describe(&duplicate),
        "Error retrieving SCRAM credential configs for user-principal 'dave': DuplicateResourceException: twice\n"
    );
}

#[test]
fn users_options_are_checked_before_connecting() {
    let command = |l: &[&str]| {
        let a = args(l);
        let entity = check_args(&a)?;
        check(&a, entity.name.as_deref())
    };
    match command(&["--describe", "--entity-type", "users"]) {
        Ok(UsersCommand::Describe(None)) => {}
        _ => panic!("describe of every user"),
    }
    match command(&["--describe", "--user", "alice"]) {
        Ok(UsersCommand::Describe(Some(u))) => assert_eq!(u, "alice"),
        _ => panic!("describe of alice"),
    }
    match command(&[
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--delete-config",
        "SCRAM-SHA-256",
    ]) {
        Ok(UsersCommand::Alter(u, a)) => assert_eq!((u.as_str(), a.delete), ("alice", vec![SHA256])),
        _ => panic!("delete of alice's SCRAM-SHA-256"),
    }
    assert_eq!(
        message(command(&[
            "--alter",
            "--entity-type",
            "users",
            "--add-config",
            "SCRAM-SHA-256=[password=x]"
        ])),
        "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips"
    );
    assert_eq!(
        message(command(&[
            "--alter",
            "--user",
            "alice",
            "--add-config",
            "SCRAM-SHA-256=[iterations=100,password=x]"
        ])),
        "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"
    );
    assert_eq!(
        message(command(&["--describe", "--entity-type", "users", "--entity-default"])),
        "--entity-default of users describes client quotas, which kastle does not serve"
    );
}
