use super::*;

fn args(list: &[&str]) -> ConsumerGroupsArgs {
    use clap::Parser;
    #[derive(Debug, clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ConsumerGroupsArgs,
    }
    let mut argv = vec!["consumer-groups"];
    argv.extend_from_slice(list);
    Wrap::try_parse_from(argv).expect("parse").a
}

#[test]
fn option_checks_give_kafkas_messages() {
    let msg = |l: &[&str]| check_args(&args(l), 0).expect_err("invalid").to_string();
    let b = ["--bootstrap-server", "h:1"];
    assert_eq!(
        msg(&b),
        "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"
    );
    assert_eq!(msg(&["--list"]), "Missing required argument \"[bootstrap-server]\"");
    assert_eq!(
        msg(&[&b[..], &["--describe"]].concat()),
        "Option [describe] takes one of these options: [all-groups], [group]"
    );
    assert_eq!(
        msg(&[&b[..], &["--reset-offsets", "--group", "g", "--all-topics"]].concat()),
        "Option '[reset-offsets]' requires one of the following scenarios: [to-offset], [shift-by], [to-datetime], [by-duration], [to-earliest], [to-latest], [to-current], [from-file]"
    );
    assert_eq!(
        msg(&[&b[..], &["--reset-offsets", "--group", "g", "--to-earliest"]].concat()),
        "One of the reset scopes should be defined: --all-topics, --topic."
    );
    let (action, to) = check_args(
        &args(
            &[
                &b[..],
                &[
                    "--reset-offsets",
                    "--group",
                    "g",
                    "--topic",
                    "t",
                    "--to-datetime",
                    "1970-01-01T00:00:01.000",
                    "--execute",
                ],
            ]
            .concat(),
        ),
        0,
    )
    .expect("valid");
    assert_eq!((action, to), (Action::Reset, Some(ResetTo::Timestamp(1000))));
    let (_, to) = check_args(
        &args(
            &[
                &b[..],
                &["--reset-offsets", "--group", "g", "--all-topics", "--shift-by", "-2"],
            ]
            .concat(),
        ),
        0,
    )
    .expect("valid");
    assert_eq!(to, Some(ResetTo::ShiftBy(-2)));
}

#[test]
fn member_assignments_decode_from_the_consumer_protocol() {
    use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kafka_protocol::protocol::Encodable;
    let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(vec![TopicPartition::default()
        .with_topic(topic_name("t"))
        .with_partitions(vec![0, 2])]);
    let mut buf = bytes::BytesMut::new();
    bytes::BufMut::put_i16(&mut buf, 1);
    assignment.encode(&mut buf, 1).expect("encode");
    assert_eq!(
        assigned_partitions(&buf.freeze()),
        vec![("t".to_owned(), 0), ("t".to_owned(), 2)]
    );
    assert!(assigned_partitions(&bytes::Bytes::new()).is_empty());
}
