use super::*;

fn entry(name: &str, value: Option<&str>, source: i8, synonyms: &[(&str, &str, i8)]) -> ConfigEntry {
    ConfigEntry {
        name: name.into(),
        value: value.map(str::to_owned),
        source,
        is_sensitive: value.is_none(),
        read_only: false,
        synonyms: synonyms
            .iter()
            .map(|(n, v, s)| Synonym {
                name: (*n).into(),
                value: Some((*v).into()),
                source: *s,
            })
            .collect(),
    }
}

#[test]
fn describe_of_a_topic_prints_dynamic_entries_sorted_with_synonyms() {
    let entries = vec![
        entry(
            "retention.ms",
            Some("3600000"),
            SOURCE_DYNAMIC_TOPIC,
            &[("retention.ms", "3600000", 1), ("log.retention.hours", "168", 4)],
        ),
        entry(
            "cleanup.policy",
            Some("delete"),
            SOURCE_DEFAULT,
            &[("log.cleanup.policy", "delete", 5)],
        ),
        entry(
            "min.insync.replicas",
            Some("2"),
            SOURCE_DYNAMIC_TOPIC,
            &[("min.insync.replicas", "2", 1)],
        ),
    ];
    assert_eq!(
        format_describe("topics", "orders", false, &entries),
        "Dynamic configs for topic orders are:\n\
         \x20 min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=2}\n\
         \x20 retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, STATIC_BROKER_CONFIG:log.retention.hours=168}\n"
    );
    let all = format_describe("topics", "orders", true, &entries);
    assert!(all.starts_with("All configs for topic orders are:\n  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}\n"), "{all}");
}

#[test]
fn describe_of_brokers_filters_by_the_entity_source() {
    let entries = vec![
        entry("log.retention.ms", Some("1000"), SOURCE_DYNAMIC_DEFAULT_BROKER, &[]),
        entry("ssl.keystore.password", None, SOURCE_DYNAMIC_BROKER, &[]),
    ];
    assert_eq!(
        format_describe("brokers", "", false, &entries),
        "Default configs for brokers in the cluster are:\n  log.retention.ms=1000 sensitive=false synonyms={}\n"
    );
    assert_eq!(
        format_describe("brokers", "1", false, &entries),
        "Dynamic configs for broker 1 are:\n  ssl.keystore.password=null sensitive=true synonyms={}\n"
    );
}

#[test]
fn add_config_splits_outside_brackets() {
    assert_eq!(
        parse_add_config("k1=v1,k2=[a,b], k3 = v3 ,empty=").expect("ok"),
        vec![
            ("k1".to_owned(), "v1".to_owned()),
            ("k2".to_owned(), "a,b".to_owned()),
            ("k3".to_owned(), "v3".to_owned()),
            ("empty".to_owned(), String::new()),
        ]
    );
    assert_eq!(
        parse_add_config("novalue").expect_err("bad").to_string(),
        "requirement failed: Invalid entity config: all configs to be added must be in the format \"key=val\"."
    );
    assert_eq!(
        parse_add_config("k$=1").expect_err("bad").to_string(),
        "Invalid character found for config key: k$"
    );
}

#[test]
fn completed_lines_as_kafka() {
    assert_eq!(
        completed_line("topics", "orders"),
        "Completed updating config for topic orders."
    );
    assert_eq!(
        completed_line("brokers", "1"),
        "Completed updating config for broker 1."
    );
    assert_eq!(
        completed_line("brokers", ""),
        "Completed updating default config for brokers in the cluster."
    );
}

fn args(list: &[&str]) -> ConfigsArgs {
    use clap::Parser;
    #[derive(Debug, clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ConfigsArgs,
    }
    let mut argv = vec!["configs"];
    argv.extend_from_slice(list);
    Wrap::try_parse_from(argv).expect("parse").a
}

#[test]
fn option_checks_give_kafkas_messages() {
    let msg = |l: &[&str]| check_args(&args(l)).expect_err("invalid").to_string();
    let b = ["--bootstrap-server", "h:1"];
    assert_eq!(msg(&b), "Command must include exactly one action: --describe, --alter");
    assert_eq!(
        msg(&[&b[..], &["--describe"]].concat()),
        "At least one entity type must be specified"
    );
    assert_eq!(
        msg(&[&b[..], &["--alter", "--entity-type", "topics"]].concat()),
        "an entity name must be specified with --alter of topics"
    );
    assert_eq!(
        msg(&[&b[..], &["--alter", "--entity-type", "topics", "--entity-name", "t"]].concat()),
        "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"
    );
    assert_eq!(
        msg(&[
            &b[..],
            &["--describe", "--entity-type", "brokers", "--entity-name", "x"]
        ]
        .concat()),
        "The entity name for brokers must be a valid integer broker id, but it is: x"
    );
    assert_eq!(
        msg(&["--describe", "--entity-type", "topics"]),
        "One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified"
    );
    let ok = check_args(&args(
        &[
            &b[..],
            &[
                "--alter",
                "--entity-type",
                "brokers",
                "--entity-default",
                "--add-config",
                "a=1",
            ],
        ]
        .concat(),
    ))
    .expect("valid");
    assert_eq!(ok.name.as_deref(), Some(""));
}
