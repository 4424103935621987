use super::*;

fn entry(name: &str, value: &str, source: i8) -> ConfigEntry {
    ConfigEntry {
        name: name.into(),
        value: Some(value.into()),
        source,
        is_sensitive: false,
        read_only: false,
        synonyms: Vec::new(),
    }
}

fn partition(partition: i32, leader: Option<i32>, replicas: &[i32], isr: &[i32]) -> PartitionInfo {
    PartitionInfo {
        partition,
        leader,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
    }
}

fn orders() -> TopicInfo {
    TopicInfo {
        name: "orders".into(),
        topic_id: Some("3dPVjV1aR-ugWGxCLmHk0g".into()),
        partitions: vec![
            partition(0, Some(1), &[1, 2, 3], &[1, 2, 3]),
            partition(1, Some(2), &[2, 3, 1], &[2, 3]),
            partition(2, None, &[3, 1, 2], &[]),
        ],
    }
}

fn defaults_and_overrides() -> Vec<ConfigEntry> {
    configs::java_config_order(vec![
        entry("cleanup.policy", "delete", configs::SOURCE_DEFAULT),
        entry("retention.ms", "3600000", configs::SOURCE_DYNAMIC_TOPIC),
        entry("segment.bytes", "1048576", 4),
        entry("min.insync.replicas", "2", configs::SOURCE_DYNAMIC_TOPIC),
    ])
}

#[test]
fn describe_prints_kafkas_lines() {
    let configs = HashMap::from([("orders".to_owned(), defaults_and_overrides())]);
    let live = BTreeSet::from([1, 2, 3]);
    let out = describe_output(&[orders()], &configs, &live, &DescribeFilter::default());
    // Configs in HashMap order of the names, the entries whose source is not DEFAULT_CONFIG.
    assert_eq!(
        out,
        "Topic: orders\tTopicId: 3dPVjV1aR-ugWGxCLmHk0g\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=3600000,segment.bytes=1048576\n\
         \tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: N/A\tLastKnownElr: N/A\n\
         \tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\tElr: N/A\tLastKnownElr: N/A\n\
         \tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: \tElr: N/A\tLastKnownElr: N/A\n"
    );
}

#[test]
fn config_order_is_javas_hash_map_order() {
    let names: Vec<String> = defaults_and_overrides().into_iter().map(|e| e.name).collect();
    // String.hashCode buckets of 16: cleanup.policy 2, min.insync.replicas 10, retention.ms
    // and segment.bytes both 11 (in insertion order).
    assert_eq!(
        names,
        ["cleanup.policy", "min.insync.replicas", "retention.ms", "segment.bytes"]
    );
}

#[test]
fn reports_print_only_matching_partitions_and_no_topic_line() {
    let configs = HashMap::from([("orders".to_owned(), defaults_and_overrides())]);
    let live = BTreeSet::from([1, 2, 3]);
    let under = DescribeFilter {
        under_replicated: true,
        ..DescribeFilter::default()
    };
    let out = describe_output(&[orders()], &configs, &live, &under);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.starts_with("\tTopic: orders\tPartition: 1\t"), "{out}");
    let unavailable = DescribeFilter {
        unavailable: true,
        ..DescribeFilter::default()
    };
    let out = describe_output(&[orders()], &configs, &live, &unavailable);
    assert_eq!(out, partition_line("orders", &orders().partitions[2]) + "\n");
    let min_isr = DescribeFilter {
        under_min_isr: true,
        ..DescribeFilter::default()
    };
    assert_eq!(
        describe_output(&[orders()], &configs, &live, &min_isr).lines().count(),
        1
    );
    let at_min = DescribeFilter {
        at_min_isr: true,
        ..DescribeFilter::default()
    };
    assert!(describe_output(&[orders()], &configs, &live, &at_min).contains("Partition: 1\t"));
}

#[test]
fn topics_with_overrides_prints_topic_lines_only() {
    let overrides = HashMap::from([("orders".to_owned(), defaults_and_overrides())]);
    let plain = TopicInfo {
        name: "plain".into(),
        topic_id: None,
        partitions: vec![partition(0, Some(1), &[1], &[1])],
    };
    let filter = DescribeFilter {
        with_overrides: true,
        ..DescribeFilter::default()
    };
    let out = describe_output(&[orders(), plain.clone()], &overrides, &BTreeSet::from([1]), &filter);
    assert_eq!(out.lines().count(), 1);
    assert!(out.starts_with("Topic: orders\t"));
    // No TopicId column for the zero id; an empty Configs column.
    assert_eq!(
        topic_line(&plain, &[]),
        "Topic: plain\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "
    );
}

#[test]
fn list_prints_one_line_even_when_empty() {
    assert_eq!(list_output(&[]), "\n");
    assert_eq!(list_output(&["a".into(), "b".into()]), "a\nb\n");
}

#[test]
fn selection_and_existence_as_kafka() {
    let all: Vec<String> = ["__consumer_offsets", "a", "b"].iter().map(|s| s.to_string()).collect();
    assert_eq!(select_topics(&all, None, true), ["a", "b"]);
    assert_eq!(select_topics(&all, None, false).len(), 3);
    assert_eq!(select_topics(&all, Some("a"), false), ["a"]);
    let err = ensure_exists(&[], Some("x"), true).expect_err("missing");
    assert_eq!(err.to_string(), "Topic 'x' does not exist as expected");
    assert!(ensure_exists(&[], Some("x"), false).is_ok());
    assert!(ensure_exists(&[], None, true).is_ok());
}

#[test]
fn replica_assignment_and_configs_parse_as_kafka() {
    assert_eq!(
        parse_replica_assignment("1:2, 2:3").expect("ok"),
        vec![vec![1, 2], vec![2, 3]]
    );
    assert_eq!(
        parse_replica_assignment("1:1").expect_err("dup").to_string(),
        "Partition replica lists may not contain duplicate entries: 1"
    );
    assert_eq!(
        parse_replica_assignment("1:2,3").expect_err("rf").to_string(),
        "Partition 1 has different replication factor: [3]"
    );
    assert_eq!(
        parse_topic_configs(&["retention.ms = 5".into()]).expect("ok"),
        vec![("retention.ms".to_owned(), "5".to_owned())]
    );
    assert!(parse_topic_configs(&["novalue".into()]).is_err());
}

fn args(list: &[&str]) -> TopicsArgs {
    use clap::Parser;
    #[derive(Debug, clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        a: TopicsArgs,
    }
    let mut argv = vec!["topics"];
    argv.extend_from_slice(list);
    Wrap::try_parse_from(argv).expect("parse").a
}

#[test]
fn option_checks_give_kafkas_messages() {
    let msg = |l: &[&str]| check_args(&args(l)).expect_err("invalid").to_string();
    assert_eq!(
        msg(&["--bootstrap-server", "h:1"]),
        "Command must include exactly one action: --list, --describe, --create, --alter or --delete"
    );
    assert_eq!(msg(&["--list"]), "--bootstrap-server must be specified");
    assert_eq!(
        msg(&["--bootstrap-server", "h:1", "--create"]),
        "Missing required argument \"[topic]\""
    );
    assert_eq!(
        msg(&["--bootstrap-server", "h:1", "--alter", "--topic", "t"]),
        "Missing required argument \"[partitions]\""
    );
    assert_eq!(
        msg(&["--bootstrap-server", "h:1", "--describe", "--partitions", "3"]),
        "Option \"[partitions]\" can't be used with option \"[describe]\""
    );
    assert_eq!(
        check_args(&args(&["--bootstrap-server", "h:1", "--describe", "--topic", "t"])).expect("valid"),
        Action::Describe
    );
}
