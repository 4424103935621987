//! The ACL authorizer against a real ZooKeeper, broker processes and real clients. Until SASL
//! lands every client is User:ANONYMOUS, so ANONYMOUS is the restricted principal; brokers talk
//! to each other as ANONYMOUS too, so it holds CLUSTER_ACTION on the cluster (which gives no
//! topic access). With `allow.everyone.if.no.acl.found=false` and only READ on topic `a`:
//! confluent-kafka cannot produce to `a` (TOPIC_AUTHORIZATION_FAILED) but consumes it, and
//! Metadata leaves `b` out; WRITE granted with `kastle acls --add` reaches all three brokers
//! within 2 s; `/kafka-acl/Topic/a` holds Kafka's JSON in zkCli and validates; a prefixed group
//! ACL admits the consumer; a DENY overrides the ALLOW; DeleteAcls (confluent-kafka) removes it
//! on every broker. Super users bypass every check; without an authorizer the ACL APIs answer
//! SECURITY_DISABLED.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{cluster_ready, metadata};
use common::replicas::create_topic;
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zkcli, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    DeleteTopicsRequest, DeleteTopicsResponse, DescribeAclsRequest, DescribeAclsResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, TopicName,
};
use kastle::security::authorizer::acl::{
    AclEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
};
use kastle::security::authorizer::store;
use kastle::zk::paths::ZNodeKind;
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

const AUTHORIZER: &str = "kafka.security.authorizer.AclAuthorizer";

/// confluent-kafka: one record to topic argv[2]; prints "ok" or the delivery error's name.
const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all", "message.timeout.ms": 15000})
errs = []
p.produce(sys.argv[2], value=b"v", on_delivery=lambda e, m: errs.append(e))
p.flush(30)
print(errs[0].name() if errs and errs[0] is not None else ("ok" if errs else "no delivery report"))
"#;

/// confluent-kafka: consumes topic argv[2] in group argv[3] from the start until argv[4]
/// records arrived (or 30 s); prints the count, or the error name.
const CONSUME: &str = r#"
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[3], "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[2]])
n, want, deadline = 0, int(sys.argv[4]), time.time() + 30
while n < want and time.time() < deadline:
    m = c.poll(1.0)
    if m is None:
        continue
    if m.error():
        print(m.error().name())
        raise SystemExit(0)
    n += 1
c.close()
print(n)
"#;

/// confluent-kafka AdminClient.delete_acls of ANONYMOUS's argv[3] (operation) argv[4]
/// (permission) on topic argv[2]; prints how many were deleted.
const DELETE_ACLS: &str = r#"
import sys
from confluent_kafka.admin import (AdminClient, AclBindingFilter, ResourceType, ResourcePatternType,
                                   AclOperation, AclPermissionType)
a = AdminClient({"bootstrap.servers": sys.argv[1]})
f = AclBindingFilter(ResourceType.TOPIC, sys.argv[2], ResourcePatternType.LITERAL, "User:*", "*",
                     getattr(AclOperation, sys.argv[3]), getattr(AclPermissionType, sys.argv[4]))
for fut in a.delete_acls([f]).values():
    print(len(fut.result(30)))
"#;

fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new(common::python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn python_async(script: &'static str, args: Vec<String>) -> String {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        python(script, &args)
    })
    .await
    .expect("python task")
}

fn kastle_acls(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kastle"))
        .arg("acls")
        .args(args)
        .output()
        .expect("kastle acls");
    assert!(
        out.status.success(),
        "kastle acls {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn entry(principal: &str, op: AclOperation, permission: AclPermissionType) -> AclEntry {
    AclEntry {
        principal: principal.into(),
        host: "*".into(),
        operation: op,
        permission,
    }
}

/// Writes ACLs straight to ZooKeeper (as `kafka-acls --authorizer-properties` does).
async fn grant(zk: &ZkSession, pattern: ResourcePattern, entries: &[AclEntry]) {
    let new: BTreeSet<AclEntry> = entries.iter().cloned().collect();
    store::update(zk, &pattern, |current| current.union(&new).cloned().collect())
        .await
        .expect("write ACLs");
}

fn spec(chroot: &str, id: i32, extra: &[(&str, &str)]) -> BrokerSpec {
    extra.iter().fold(
        BrokerSpec::new(id, &zookeeper().connect(chroot)).session_timeout_ms(3_000),
        |s, (k, v)| s.with(k, v),
    )
}

async fn bootstrap(zk: &ZkSession, ids: &[i32]) -> String {
    let mut addrs = Vec::new();
    for id in ids {
        addrs.push(bootstrap_of(zk, *id).await);
    }
    addrs.join(",")
}

async fn describe_acls(zk: &ZkSession, id: i32) -> DescribeAclsResponse {
    let mut wire = Wire::connect(&bootstrap_of(zk, id).await).await;
    let request = DescribeAclsRequest::default()
        // null filters match everything (the codec's defaults are empty strings, which match
        // only resources, principals and hosts named "").
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(ResourceType::Any.code())
        .with_pattern_type_filter(PatternType::Any.code())
        .with_operation(AclOperation::Any.code())
        .with_permission_type(AclPermissionType::Any.code());
    wire.send(&request, 3).await
}

/// Whether broker `id`'s cache holds `op`/`permission` for `principal` on literal topic `topic`.
async fn broker_has(
    zk: &ZkSession,
    id: i32,
    topic: &str,
    principal: &str,
    op: AclOperation,
    perm: AclPermissionType,
) -> bool {
    let response = describe_acls(zk, id).await;
    assert_eq!(response.error_code, 0);
    response.resources.iter().any(|r| {
        r.resource_type == ResourceType::Topic.code()
            && r.resource_name.as_str() == topic
            && r.pattern_type == PatternType::Literal.code()
            && r.acls.iter().any(|a| {
                a.principal.as_str() == principal && a.operation == op.code() && a.permission_type == perm.code()
            })
    })
}

fn topic_names(response: &kafka_protocol::messages::MetadataResponse) -> Vec<String> {
    response
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_restrict_anonymous_and_changes_reach_every_broker() {
    common::init_logging();
    let chroot = unique_chroot("acls");
    let zk = zookeeper().session(&chroot).await;
    let anon = "User:ANONYMOUS";
    use AclOperation::{Alter, ClusterAction, Describe, Read, Write};
    use AclPermissionType::{Allow, Deny};
    // Inter-broker traffic and the ACL tool's CreateAcls/DeleteAcls: cluster rights only.
    grant(
        &zk,
        ResourcePattern::literal(ResourceType::Cluster, "kafka-cluster"),
        &[
            entry(anon, ClusterAction, Allow),
            entry(anon, Alter, Allow),
            entry(anon, Describe, Allow),
        ],
    )
    .await;
    grant(
        &zk,
        ResourcePattern::literal(ResourceType::Topic, "a"),
        &[entry(anon, Read, Allow)],
    )
    .await;
    grant(
        &zk,
        ResourcePattern::prefixed(ResourceType::Group, "cons-"),
        &[entry(anon, Read, Allow)],
    )
    .await;
    let extra = [
        ("authorizer.class.name", AUTHORIZER),
        ("allow.everyone.if.no.acl.found", "false"),
        ("auto.create.topics.enable", "false"),
    ];
    let _brokers: Vec<BrokerProcess> = (1..=3)
        .map(|id| BrokerProcess::start(&spec(&chroot, id, &extra)))
        .collect();
    cluster_ready(&zk, 3).await;
    create_topic(&zk, "a", "[1,2,3]").await;
    create_topic(&zk, "b", "[1,2,3]").await;
    let servers = bootstrap(&zk, &[1, 2, 3]).await;

    // Metadata: `a` (READ implies DESCRIBE) but not `b`, on every broker.
    for id in 1..=3 {
        wait_until(Duration::from_secs(20), "topic a in the metadata", || async {
            topic_names(&metadata(&zk, id).await).contains(&"a".to_string())
        })
        .await;
        assert!(!topic_names(&metadata(&zk, id).await).contains(&"b".to_string()));
    }
    // KIP-430's authorized operations: READ on `a` (with the DESCRIBE it implies), and on the
    // cluster exactly the three operations granted, as Kafka's AuthHelper computes them.
    {
        use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
        use kafka_protocol::messages::MetadataRequest;
        use kafka_protocol::protocol::StrBytes;
        let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_static_str("a"))))
            ]))
            .with_include_cluster_authorized_operations(true)
            .with_include_topic_authorized_operations(true);
        let answer = wire.send(&request, 8).await;
        let bits = |ops: &[AclOperation]| ops.iter().fold(0i32, |b, op| b | (1 << op.code()));
        assert_eq!(answer.topics[0].topic_authorized_operations, bits(&[Read, Describe]));
        assert_eq!(
            answer.cluster_authorized_operations,
            bits(&[Alter, Describe, ClusterAction])
        );
    }
    // Only READ on `a`: the producer is refused.
    let refused = python_async(PRODUCE, vec![servers.clone(), "a".into()]).await;
    assert_eq!(refused, "TOPIC_AUTHORIZATION_FAILED");
    // ... and so are the admin APIs that need more than READ: DeleteTopics (DELETE) and
    // DescribeConfigs (DESCRIBE_CONFIGS), and the topic is still there.
    let controller = common::cluster::controller_of(&zk).await.expect("a controller");
    let mut wire = Wire::connect(&bootstrap_of(&zk, controller).await).await;
    let deleted: DeleteTopicsResponse = wire
        .send(
            &DeleteTopicsRequest::default()
                .with_topic_names(vec![TopicName("a".into())])
                .with_timeout_ms(5_000),
            4,
        )
        .await;
    assert_eq!(deleted.responses[0].error_code, 29, "TOPIC_AUTHORIZATION_FAILED");
    let described: DescribeConfigsResponse = wire
        .send(
            &DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name("a".into())]),
            1,
        )
        .await;
    assert_eq!(described.results[0].error_code, 29, "TOPIC_AUTHORIZATION_FAILED");
    assert!(topic_names(&metadata(&zk, 1).await).contains(&"a".to_string()));

    // zkCli shows Kafka's JSON, and it validates against zk-schema.
    let out = zkcli(&zookeeper().address(), &["get", &format!("{chroot}/kafka-acl/Topic/a")]);
    let json = out
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON in zkCli output:\n{out}"));
    assert_eq!(
        json,
        r#"{"version":1,"acls":[{"principal":"User:ANONYMOUS","permissionType":"Allow","operation":"Read","host":"*"}]}"#
    );
    let problems = kastle::zk::schema::validate(ZNodeKind::Acl, json.as_bytes()).expect("schema");
    assert!(problems.is_empty(), "{problems:?}");

    // WRITE through `kastle acls --add` (CreateAcls to broker 1) reaches every broker in 2 s.
    let first = bootstrap_of(&zk, 1).await;
    let started = Instant::now();
    let printed = kastle_acls(&[
        "--bootstrap-server",
        &first,
        "--add",
        "--allow-principal",
        anon,
        "--operation",
        "Write",
        "--topic",
        "a",
    ]);
    assert!(
        printed.contains("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=a, patternType=LITERAL)`")
            && printed.contains("(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=ALLOW)"),
        "{printed}"
    );
    for id in 1..=3 {
        wait_until(
            Duration::from_secs(2).saturating_sub(started.elapsed()),
            "WRITE on every broker",
            || async { broker_has(&zk, id, "a", anon, Write, Allow).await },
        )
        .await;
    }
    let elapsed = started.elapsed();
    println!("WRITE reached all 3 brokers in {elapsed:?}");
    let change = zk.children(store::LITERAL_CHANGES).await.expect("change notifications");
    assert!(!change.is_empty());
    assert_eq!(python_async(PRODUCE, vec![servers.clone(), "a".into()]).await, "ok");
    // READ on `a` and on the prefixed group `cons-*`: the consumer gets the record.
    assert_eq!(
        python_async(CONSUME, vec![servers.clone(), "a".into(), "cons-1".into(), "1".into()]).await,
        "1"
    );
    // A group outside the prefix is refused.
    assert_eq!(
        python_async(CONSUME, vec![servers.clone(), "a".into(), "other".into(), "1".into()]).await,
        "GROUP_AUTHORIZATION_FAILED"
    );
    let listed = kastle_acls(&["--bootstrap-server", &first, "--list", "--topic", "a"]);
    assert!(
        listed.contains("operation=READ") && listed.contains("operation=WRITE"),
        "{listed}"
    );

    // A DENY for everyone overrides the ALLOW.
    kastle_acls(&[
        "--bootstrap-server",
        &first,
        "--add",
        "--deny-principal",
        "User:*",
        "--operation",
        "Write",
        "--topic",
        "a",
    ]);
    for id in 1..=3 {
        wait_until(Duration::from_secs(5), "the DENY on every broker", || async {
            broker_has(&zk, id, "a", "User:*", Write, Deny).await
        })
        .await;
    }
    assert_eq!(
        python_async(PRODUCE, vec![servers.clone(), "a".into()]).await,
        "TOPIC_AUTHORIZATION_FAILED"
    );

    // DeleteAcls (confluent-kafka, to broker 2) removes it on every broker.
    let second = bootstrap_of(&zk, 2).await;
    assert_eq!(
        python_async(DELETE_ACLS, vec![second, "a".into(), "WRITE".into(), "DENY".into()]).await,
        "1"
    );
    for id in 1..=3 {
        wait_until(Duration::from_secs(5), "the DENY gone from every broker", || async {
            !broker_has(&zk, id, "a", "User:*", Write, Deny).await
        })
        .await;
    }
    assert_eq!(python_async(PRODUCE, vec![servers, "a".into()]).await, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn super_users_bypass_every_check() {
    let chroot = unique_chroot("acls_super");
    let zk = zookeeper().session(&chroot).await;
    // Everyone is denied everything on every topic; ANONYMOUS is a super user.
    grant(
        &zk,
        ResourcePattern::literal(ResourceType::Topic, "*"),
        &[entry("User:*", AclOperation::All, AclPermissionType::Deny)],
    )
    .await;
    let _broker = BrokerProcess::start(&spec(
        &chroot,
        1,
        &[
            ("authorizer.class.name", "kafka.security.auth.SimpleAclAuthorizer"),
            ("super.users", "User:admin;User:ANONYMOUS"),
        ],
    ));
    cluster_ready(&zk, 1).await;
    create_topic(&zk, "s", "[1]").await;
    let servers = bootstrap(&zk, &[1]).await;
    assert_eq!(python_async(PRODUCE, vec![servers.clone(), "s".into()]).await, "ok");
    assert_eq!(
        python_async(CONSUME, vec![servers, "s".into(), "any-group".into(), "1".into()]).await,
        "1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let chroot = unique_chroot("acls_off");
    let zk = zookeeper().session(&chroot).await;
    let _broker = BrokerProcess::start(&spec(&chroot, 1, &[]));
    cluster_ready(&zk, 1).await;
    let response = describe_acls(&zk, 1).await;
    assert_eq!(response.error_code, 54, "SECURITY_DISABLED");
    let out = Command::new(env!("CARGO_BIN_EXE_kastle"))
        .args(["acls", "--bootstrap-server", &bootstrap_of(&zk, 1).await, "--list"])
        .output()
        .expect("kastle acls");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SecurityDisabledException"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
