//! `reassign-partitions`' formats and texts against Kafka's (`ReassignPartitionsUnitTest`).

use super::*;

fn assignment(rows: &[(&str, i32, &[i32])]) -> Assignment {
    rows.iter().map(|(t, p, r)| ((t.to_string(), *p), r.to_vec())).collect()
}

#[test]
fn reassignment_json_is_written_as_kafkas_format_as_reassignment_json() {
    let a = assignment(&[("foo", 1, &[3, 4]), ("bar", 0, &[1]), ("foo", 0, &[1, 2])]);
    assert_eq!(
        format_reassignment(&a),
        r#"{"version":1,"partitions":[{"topic":"bar","partition":0,"replicas":[1],"log_dirs":["any"]},{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"foo","partition":1,"replicas":[3,4],"log_dirs":["any","any"]}]}"#
    );
    assert_eq!(
        format_reassignment(&Assignment::new()),
        r#"{"version":1,"partitions":[]}"#
    );
}

#[test]
fn what_is_written_reads_back() {
    let a = assignment(&[("foo", 1, &[3, 4]), ("a\"b", 0, &[1])]);
    let back: Assignment = parse_reassignment(&format_reassignment(&a))
        .expect("parse")
        .into_iter()
        .collect();
    assert_eq!(back, a);
}

#[test]
fn log_dirs_are_optional_and_must_match_the_replicas() {
    let parsed = parse_reassignment(r#"{"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}"#).expect("ok");
    assert_eq!(parsed, vec![(("t".to_owned(), 0), vec![1, 2])]);
    let e = parse_reassignment(r#"{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}"#)
        .expect_err("size mismatch")
        .to_string();
    assert_eq!(
        e,
        "Size of replicas list [1, 2] is different from size of log dirs list [any] for partition t-0"
    );
}

#[test]
fn a_log_dir_move_is_refused_not_ignored() {
    let e = parse_reassignment(
        r#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","/data/d2"]}]}"#,
    )
    .expect_err("log dir move")
    .to_string();
    assert!(e.contains("not supported by this kastle build"), "{e}");
    assert!(
        e.contains("/data/d2") && e.contains("broker 2") && e.contains("t-0"),
        "{e}"
    );
}

#[test]
fn only_version_1_is_known() {
    let e = parse_reassignment(r#"{"version":2,"partitions":[]}"#)
        .expect_err("v2")
        .to_string();
    assert_eq!(e, "Not supported version field value 2");
    assert!(parse_reassignment("not json").is_err());
    assert_eq!(parse_reassignment("{}").expect("no partitions"), vec![]);
}

#[test]
fn execute_refuses_what_parse_execute_assignment_args_refuses() {
    let msg = |json: &str| {
        check_execute_plan(parse_reassignment(json).expect("parse"))
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        msg(r#"{"partitions":[]}"#),
        "Error: Partition reassignment list cannot be empty"
    );
    assert_eq!(
        msg(r#"{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}"#),
        "Error: Partition replica list cannot be empty"
    );
    assert_eq!(
        msg(
            r#"{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}"#
        ),
        "Error: Partition reassignment contains duplicate topic partitions: t-0"
    );
    assert_eq!(
        msg(r#"{"partitions":[{"topic":"t","partition":0,"replicas":[1,1,2]},{"topic":"u","partition":1,"replicas":[3,3]}]}"#),
        "Error: Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1. u-1 contains multiple entries for 3"
    );
}

#[test]
fn topics_and_broker_lists_refuse_duplicates() {
    assert_eq!(
        parse_topics(r#"{"version":1,"topics":[{"topic":"a"},{"topic":"b"}]}"#).expect("ok"),
        vec!["a", "b"]
    );
    assert_eq!(
        parse_topics(r#"{"topics":[{"topic":"a"},{"topic":"a"}]}"#)
            .expect_err("dup")
            .to_string(),
        "Error: List of topics to reassign contains duplicate entries: [a]"
    );
    assert_eq!(parse_broker_list("2,3,4").expect("ok"), vec![2, 3, 4]);
    assert_eq!(
        parse_broker_list("2,3,2").expect_err("dup").to_string(),
        "Error: Broker list contains duplicate entries: [2]"
    );
    assert_eq!(
        parse_broker_list("2,x").expect_err("nan").to_string(),
        "Error: For input string: \"x\""
    );
}

fn brokers(list: &[(i32, Option<&str>)]) -> Vec<BrokerMetadata> {
    list.iter()
        .map(|(id, rack)| BrokerMetadata {
            id: BrokerId(*id),
            rack: rack.map(str::to_owned),
        })
        .collect()
}

#[test]
fn generate_places_each_topic_as_assign_replicas_to_brokers_with_its_replication_factor() {
    let current = assignment(&[("t", 0, &[1, 2]), ("t", 1, &[2, 1]), ("t", 2, &[1, 2]), ("u", 0, &[1])]);
    let targets = brokers(&[(2, None), (3, None), (4, None)]);
    let proposed = propose(&current, &targets, true, |_| PlacementStart::fixed(0)).expect("placed");
    // Kafka's rack-unaware round-robin from index 0 with shift 0 over [2, 3, 4]: leaders
    // 2, 3, 4, each follower the next broker.
    assert_eq!(
        proposed,
        assignment(&[("t", 0, &[2, 3]), ("t", 1, &[3, 4]), ("t", 2, &[4, 2]), ("u", 0, &[2])])
    );
    let e = propose(&current, &brokers(&[(3, None)]), true, |_| PlacementStart::fixed(0))
        .expect_err("rf 2 on one broker")
        .to_string();
    assert_eq!(e, "Error: Replication factor: 2 larger than available brokers: 1.");
}

#[test]
fn generate_alternates_racks_when_every_broker_has_one() {
    let current = assignment(&[("t", 0, &[1, 2]), ("t", 1, &[1, 2])]);
    let targets = brokers(&[(1, Some("a")), (2, Some("a")), (3, Some("b")), (4, Some("b"))]);
    let proposed = propose(&current, &targets, true, |_| PlacementStart::fixed(0)).expect("placed");
    for replicas in proposed.values() {
        let racks: BTreeSet<bool> = replicas.iter().map(|b| *b <= 2).collect();
        assert_eq!(racks.len(), 2, "replicas {replicas:?} span both racks");
    }
    assert!(check_racks(&brokers(&[(1, Some("a")), (2, None)]), true)
        .expect_err("partial racks")
        .to_string()
        .contains("Add --disable-rack-aware"));
    assert!(check_racks(&brokers(&[(1, Some("a")), (2, None)]), false).is_ok());
}

#[test]
fn texts_are_kafkas() {
    let a = assignment(&[("t", 0, &[1, 2])]);
    assert_eq!(
        generate_text(&a, &assignment(&[("t", 0, &[3, 4])])),
        "Current partition replica assignment\n{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,2],\"log_dirs\":[\"any\",\"any\"]}]}\n\n\
         Proposed partition reassignment configuration\n{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[3,4],\"log_dirs\":[\"any\",\"any\"]}]}\n"
    );
    assert_eq!(
        rollback_text(&a),
        "Current partition replica assignment\n\n{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,2],\"log_dirs\":[\"any\",\"any\"]}]}\n\n\
         Save this to use as the --reassignment-json-file option during rollback\n"
    );
    assert_eq!(
        started_text(&a),
        "Successfully started partition reassignment for t-0\n"
    );
    assert_eq!(
        started_text(&assignment(&[("t", 1, &[1]), ("t", 0, &[1])])),
        "Successfully started partition reassignments for t-0,t-1\n"
    );
    let errors: BTreeMap<Partition, String> =
        [(("t".to_owned(), 0), "Replica assignment is invalid.".to_owned())].into();
    assert_eq!(
        errors_text("Error reassigning partition(s):", &errors),
        "Error reassigning partition(s):\nt-0: Replica assignment is invalid."
    );
}

#[test]
fn verify_prints_each_partitions_state_as_partition_reassignment_states_to_string() {
    let state = |current: &[i32], target: &[i32], done| ReassignmentState {
        current: current.to_vec(),
        target: target.to_vec(),
        done,
    };
    let states: BTreeMap<Partition, ReassignmentState> = [
        (("foo".to_owned(), 1), state(&[1, 2, 3], &[1, 2, 3], true)),
        (("foo".to_owned(), 0), state(&[1, 2, 3], &[1, 2, 4], false)),
        (("bar".to_owned(), 0), state(&[1, 2, 3], &[1, 2, 4], true)),
    ]
    .into();
    // ReassignPartitionsUnitTest.testPartitionReassignStatesToString.
    assert_eq!(
        status_text(&states),
        "Status of partition reassignment:\n\
         There is no active reassignment of partition bar-0, but replica set is 1,2,3 rather than 1,2,4.\n\
         Reassignment of partition foo-0 is still in progress.\n\
         Reassignment of partition foo-1 is completed.\n"
    );
}

#[test]
fn list_prints_current_reassignments_as_cur_reassignments_to_string() {
    assert_eq!(list_text(&BTreeMap::new()), "No partition reassignments found.\n");
    let ongoing: BTreeMap<Partition, Ongoing> = [
        (
            ("foo".to_owned(), 0),
            Ongoing {
                replicas: vec![1, 2, 3, 4],
                adding: vec![3, 4],
                removing: vec![1, 2],
            },
        ),
        (
            ("bar".to_owned(), 0),
            Ongoing {
                replicas: vec![1, 2, 3],
                adding: vec![3],
                removing: vec![],
            },
        ),
    ]
    .into();
    assert_eq!(
        list_text(&ongoing),
        "Current partition reassignments:\n\
         bar-0: replicas: 1,2,3. adding: 3.\n\
         foo-0: replicas: 1,2,3,4. adding: 3,4. removing: 1,2.\n"
    );
}
