//! `kastle delete-records`, shaped like Kafka 3.9's `kafka-delete-records.sh`
//! (`DeleteRecordsCommand`): moves the log start offset of each partition in an offset JSON
//! file with DeleteRecords, sent to each partition's leader, and prints the low watermarks.
//! Unlike Kafka's tool (which exits 0 regardless), the exit code is 1 when a partition failed.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Args;
use kafka_protocol::messages::delete_records_request::{DeleteRecordsPartition, DeleteRecordsTopic};
use kafka_protocol::messages::DeleteRecordsRequest;

use super::client::{topic_name, Admin};
use super::topics::topics_of;
use super::{fail, java, java_exception, require_bootstrap, CliError, CliResult};
use crate::protocol::error_codes;

/// `kastle delete-records`: options as `kafka-delete-records.sh` names them.
#[derive(Debug, Args)]
#[command(
    about = "Delete records of partitions down to an offset, like kafka-delete-records.sh",
    long_about = "This tool helps to delete records of the given partitions down to the specified offset."
)]
pub struct DeleteRecordsArgs {
    /// REQUIRED: The server to connect to.
    #[arg(long, value_name = "server(s) to use for bootstrapping")]
    pub bootstrap_server: Option<String>,
    /// REQUIRED: The JSON file with offset per partition. The format to use is:
    /// {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version":1}
    #[arg(long, value_name = "Offset json file path")]
    pub offset_json_file: Option<PathBuf>,
}

/// `parseOffsetJsonStringWithoutDedup` plus the duplicate check: `(topic, partition, offset)`.
pub fn parse_offset_json(text: &str) -> CliResult<Vec<(String, i32, i64)>> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|_| CliError::Failed("The input string is not a valid JSON".into()))?;
    let version = json.get("version").and_then(|v| v.as_i64()).unwrap_or(1);
    if version != 1 {
        return fail(format!("Not supported version field value {version}"));
    }
    let Some(list) = json.get("partitions").and_then(|p| p.as_array()) else {
        return fail("Missing partitions field");
    };
    let mut out: Vec<(String, i32, i64)> = Vec::new();
    for p in list {
        let topic = p.get("topic").and_then(|t| t.as_str());
        let partition = p
            .get("partition")
            .and_then(|v| v.as_i64())
            .and_then(|n| i32::try_from(n).ok());
        let offset = p.get("offset").and_then(|v| v.as_i64());
        let (Some(topic), Some(partition), Some(offset)) = (topic, partition, offset) else {
            return fail(format!("Invalid partition entry in the offset json file: {p}"));
        };
        out.push((topic.to_owned(), partition, offset));
    }
    let mut dups: Vec<String> = Vec::new();
    for (i, (t, p, _)) in out.iter().enumerate() {
        let name = format!("{t}-{p}");
        if out[..i].iter().any(|(t2, p2, _)| t2 == t && p2 == p) && !dups.contains(&name) {
            dups.push(name);
        }
    }
    if !dups.is_empty() {
        return fail(format!(
            "Offset json file contains duplicate topic partitions: {}",
            dups.join(",")
        ));
    }
    Ok(out)
}

/// A partition's low watermark after the delete, or the Java exception that failed it.
pub type PartitionResult = ((String, i32), Result<i64, String>);

/// The per-partition lines, in the order of the admin client's result map
/// (`new HashMap<>(n)` of TopicPartition).
pub fn format_results(results: &[PartitionResult]) -> String {
    let ordered = java::hash_order(results.to_vec(), Some(results.len()), |((t, p), _)| {
        java::topic_partition_hash(t, *p)
    });
    let mut out = String::from("Executing records delete operation\nRecords delete operation completed:\n");
    for ((t, p), r) in ordered {
        match r {
            Ok(low) => out.push_str(&format!("partition: {t}-{p}\tlow_watermark: {low}\n")),
            Err(e) => out.push_str(&format!("partition: {t}-{p}\terror: {e}\n")),
        }
    }
    out
}

pub async fn run(a: &DeleteRecordsArgs) -> CliResult<()> {
    let bootstrap = require_bootstrap(&a.bootstrap_server, "Missing required argument \"[bootstrap-server]\"")?;
    let Some(path) = &a.offset_json_file else {
        return fail("Missing required argument \"[offset-json-file]\"");
    };
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    let wanted = parse_offset_json(&text)?;
    let mut admin = Admin::connect(bootstrap).await?;
    let mut topics: Vec<String> = wanted.iter().map(|(t, _, _)| t.clone()).collect();
    topics.dedup();
    let leaders: HashMap<(String, i32), Option<i32>> = topics_of(&admin.metadata(Some(topics)).await?)
        .into_iter()
        .flat_map(|t| {
            let name = t.name.clone();
            t.partitions
                .into_iter()
                .map(move |p| ((name.clone(), p.partition), p.leader))
        })
        .collect();
    let mut results: Vec<PartitionResult> = Vec::new();
    let mut by_leader: HashMap<i32, Vec<(String, i32, i64)>> = HashMap::new();
    for (t, p, offset) in wanted {
        match leaders.get(&(t.clone(), p)) {
            None => results.push((
                (t, p),
                Err(java_exception(error_codes::UNKNOWN_TOPIC_OR_PARTITION, None)),
            )),
            Some(None) => results.push(((t, p), Err(java_exception(error_codes::LEADER_NOT_AVAILABLE, None)))),
            Some(Some(leader)) => by_leader.entry(*leader).or_default().push((t, p, offset)),
        }
    }
    for (leader, list) in by_leader {
        let mut topics: Vec<DeleteRecordsTopic> = Vec::new();
        for (t, p, offset) in &list {
            let partition = DeleteRecordsPartition::default()
                .with_partition_index(*p)
                .with_offset(*offset);
            match topics.iter_mut().find(|x| x.name.0.as_str() == t) {
                Some(x) => x.partitions.push(partition),
                None => topics.push(
                    DeleteRecordsTopic::default()
                        .with_name(topic_name(t))
                        .with_partitions(vec![partition]),
                ),
            }
        }
        let request = DeleteRecordsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(30_000);
        let response = admin.send(leader, request, (0, 2)).await?;
        for (t, p, _) in list {
            let r = response
                .topics
                .iter()
                .filter(|x| x.name.0.as_str() == t)
                .flat_map(|x| x.partitions.iter())
                .find(|x| x.partition_index == p);
            let result = match r {
                Some(r) if r.error_code == error_codes::NONE => Ok(r.low_watermark),
                Some(r) => Err(java_exception(r.error_code, None)),
                None => Err(java_exception(error_codes::UNKNOWN_SERVER_ERROR, None)),
            };
            results.push(((t, p), result));
        }
    }
    print!("{}", format_results(&results));
    let failed = results.iter().filter(|(_, r)| r.is_err()).count();
    if failed > 0 {
        return fail(format!("{failed} partition(s) could not be deleted from"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_json_as_kafka() {
        let parsed =
            parse_offset_json(r#"{"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}"#).expect("ok");
        assert_eq!(parsed, vec![("t".to_owned(), 0, 5)]);
        assert_eq!(
            parse_offset_json(r#"{"version":2,"partitions":[]}"#)
                .expect_err("v2")
                .to_string(),
            "Not supported version field value 2"
        );
        assert_eq!(
            parse_offset_json("{}").expect_err("none").to_string(),
            "Missing partitions field"
        );
        assert_eq!(
            parse_offset_json(
                r#"{"partitions":[{"topic":"t","partition":0,"offset":5},{"topic":"t","partition":0,"offset":6}]}"#
            )
            .expect_err("dup")
            .to_string(),
            "Offset json file contains duplicate topic partitions: t-0"
        );
        assert_eq!(
            parse_offset_json("nope").expect_err("json").to_string(),
            "The input string is not a valid JSON"
        );
    }

    #[test]
    fn results_print_as_kafka() {
        let out = format_results(&[
            (("t".into(), 0), Ok(5)),
            (
                ("t".into(), 1),
                Err(java_exception(error_codes::OFFSET_OUT_OF_RANGE, None)),
            ),
        ]);
        // new HashMap<>(2): 4 buckets; TopicPartition("t", 1) = 1108 → 0, ("t", 0) = 1077 → 1.
        assert_eq!(
            out,
            "Executing records delete operation\nRecords delete operation completed:\n\
             partition: t-1\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not within the range of offsets maintained by the server.\n\
             partition: t-0\tlow_watermark: 5\n"
        );
    }
}
