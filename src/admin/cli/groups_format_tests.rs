use super::*;

fn row(
    topic: &str,
    partition: i32,
    offset: Option<i64>,
    end: Option<i64>,
    member: Option<(&str, &str, &str)>,
) -> OffsetRow {
    OffsetRow {
        group: "g1".into(),
        topic: Some(topic.into()),
        partition: Some(partition),
        offset,
        log_end_offset: end,
        consumer_id: Some(member.map_or(MISSING, |m| m.0).into()),
        host: Some(member.map_or(MISSING, |m| m.1).into()),
        client_id: Some(member.map_or(MISSING, |m| m.2).into()),
    }
}

#[test]
fn offsets_table_pads_as_kafka() {
    let rows = vec![
        row(
            "orders",
            0,
            Some(5),
            Some(7),
            Some(("consumer-1-0a1b", "/127.0.0.1", "consumer-1")),
        ),
        row("orders", 1, None, Some(3), None),
    ];
    assert_eq!(
        format_offsets(&rows),
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\
         \ng1              orders          0          5               7               2               consumer-1-0a1b /127.0.0.1      consumer-1\
         \ng1              orders          1          -               3               -               -               -               -\n"
    );
}

#[test]
fn members_and_state_tables_as_kafka() {
    let m = MemberRow {
        group: "g1".into(),
        consumer_id: "c-1".into(),
        host: "/127.0.0.1".into(),
        client_id: "cl".into(),
        group_instance_id: String::new(),
        assignment: vec![("t".into(), 1), ("t".into(), 0), ("a".into(), 10)],
    };
    assert_eq!(
        format_members(std::slice::from_ref(&m), true, true),
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT\n\
         g1              c-1             /127.0.0.1      cl              3               (0,1), (10)\n"
    );
    let s = StateRow {
        group: "g1".into(),
        coordinator: "localhost:9092  (1)".into(),
        assignment_strategy: "range".into(),
        state: "Stable".into(),
        members: 1,
    };
    assert_eq!(
        format_state(&s),
        "\nGROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS\
         \ng1                        localhost:9092  (1)       range                Stable          1\n"
    );
}

#[test]
fn reset_table_as_kafka() {
    let out = format_reset(&[("g1".into(), vec![("t".into(), 1, 0), ("t".into(), 0, 4)])]);
    assert_eq!(
        out,
        "\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \
         \ng1                             t                              1          0              \
         \ng1                             t                              0          4              \n"
    );
    assert_eq!(format_reset(&[]), "");
}

#[test]
fn rows_come_in_hash_map_order() {
    // TopicPartition("t", p) buckets of 16: p0 5, p1 4, p2 3.
    let set = partition_order(vec![("t".into(), 0), ("t".into(), 1), ("t".into(), 2)]);
    assert_eq!(
        describe_order(set),
        vec![("t".to_owned(), 2), ("t".to_owned(), 1), ("t".to_owned(), 0)]
    );
}

#[test]
fn datetimes_parse_as_kafka_utils() {
    assert_eq!(parse_datetime("1970-01-01T00:00:00.000"), Ok(0));
    assert_eq!(parse_datetime("2024-02-29T12:34:56.789"), Ok(1_709_210_096_789));
    assert_eq!(parse_datetime("2024-02-29T12:34:56.789Z"), Ok(1_709_210_096_789));
    assert_eq!(parse_datetime("2024-02-29T13:34:56.789+01:00"), Ok(1_709_210_096_789));
    assert_eq!(parse_datetime("2024-02-29T07:34:56.789-0500"), Ok(1_709_210_096_789));
    assert!(parse_datetime("2023-02-29T00:00:00.000").is_err());
    assert!(parse_datetime("2024-01-01 00:00:00.000")
        .expect_err("no T")
        .contains("does not contain a 'T'"));
    assert!(parse_datetime("2024-01-01T00:00:00").is_err());
}

#[test]
fn durations_parse_as_java_time() {
    assert_eq!(parse_duration("PT1H"), Ok(3_600_000));
    assert_eq!(parse_duration("P1DT2M3.5S"), Ok(86_400_000 + 120_000 + 3_500));
    assert!(parse_duration("1H").is_err());
    assert!(parse_duration("P").is_err());
}
