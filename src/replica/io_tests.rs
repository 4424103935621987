use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::IoExecutor;
use crate::replica::ReplicaError;

/// The work runs on the dir's own thread (not the caller's), also from a current-thread
/// runtime, and every operation on one dir runs on that one thread.
#[tokio::test]
async fn work_runs_on_the_dirs_thread_from_a_current_thread_runtime() {
    let io = IoExecutor::default();
    let caller = std::thread::current().id();
    let first = io
        .run(Some(Path::new("/data/a")), || std::thread::current().id())
        .await
        .expect("ran");
    let second = io
        .run(Some(Path::new("/data/a")), || std::thread::current().id())
        .await
        .expect("ran");
    let other = io
        .run(Some(Path::new("/data/b")), || std::thread::current().id())
        .await
        .expect("ran");
    assert_ne!(first, caller, "off the caller's thread");
    assert_eq!(first, second, "one thread per dir");
    assert_ne!(first, other, "each dir its own thread");
    let in_place = io.run(None, || std::thread::current().id()).await.expect("ran");
    assert_eq!(in_place, caller, "work on no dir runs in place");
}

/// A panic fails that operation only: the dir's thread goes on serving.
#[tokio::test]
async fn a_panic_becomes_an_error_and_the_dir_keeps_serving() {
    let io = IoExecutor::default();
    let dir = Some(Path::new("/data/a"));
    let failed = io.run(dir, || -> u32 { panic!("disk work panics") }).await;
    assert_eq!(failed, Err(ReplicaError::UnknownServerError));
    assert_eq!(io.run(dir, || 7).await, Ok(7));
    let failed = io.run(None, || -> u32 { panic!("in place too") }).await;
    assert_eq!(failed, Err(ReplicaError::UnknownServerError));
}

/// While one dir's thread is stuck in a stalled write, work on another dir is answered at
/// once, and the stalled dir's later work waits its turn behind the stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_dir_holds_up_only_its_own_queue() {
    let io = std::sync::Arc::new(IoExecutor::default());
    let (release, stalled) = mpsc::channel::<()>();
    let slow = Some(Path::new("/data/slow"));
    let stuck = {
        let io = io.clone();
        tokio::spawn(async move {
            io.run(Some(Path::new("/data/slow")), move || {
                stalled.recv_timeout(Duration::from_secs(30)).is_ok()
            })
            .await
        })
    };
    let behind = {
        let io = io.clone();
        tokio::spawn(async move { io.run(Some(Path::new("/data/slow")), Instant::now).await })
    };
    for _ in 0..20 {
        let asked = Instant::now();
        let answered = io.run(Some(Path::new("/data/fast")), Instant::now).await.expect("ran");
        assert!(
            answered.duration_since(asked) < Duration::from_millis(500),
            "the other dir's work waited for the stalled one"
        );
    }
    assert!(!behind.is_finished(), "the stalled dir's queue waits behind the stall");
    let lifted = Instant::now();
    release.send(()).expect("release");
    assert_eq!(stuck.await.expect("task"), Ok(true));
    let ran = behind.await.expect("task").expect("ran");
    assert!(ran >= lifted, "the queued work ran after the stall");
    assert_eq!(io.run(slow, || 1).await, Ok(1));
}

/// Work queued from many tasks at once is all done, each answered to its own caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_queued_from_many_tasks_is_all_done() {
    let io = std::sync::Arc::new(IoExecutor::default());
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (io, order) = (io.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            io.run(Some(Path::new("/data/a")), move || order.lock().expect("order").push(i))
                .await
        }));
        tokio::task::yield_now().await;
    }
    for t in tasks {
        assert_eq!(t.await.expect("task"), Ok(()));
    }
    let mut order = order.lock().expect("order").clone();
    order.sort_unstable();
    assert_eq!(order, (0..50).collect::<Vec<_>>());
}

#[test]
fn a_request_splits_into_runs_of_one_dir_each() {
    let (a, b) = (Some(Path::new("/a")), Some(Path::new("/b")));
    assert_eq!(super::dir_runs([a, a, None, a]), vec![4]);
    assert_eq!(super::dir_runs([None, a, b, None, b, a]), vec![2, 3, 1]);
    assert_eq!(super::dir_runs([None, None]), vec![2]);
    assert_eq!(super::dir_runs([]), Vec::<usize>::new());
}
