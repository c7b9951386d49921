//! The threads HTTP connections are served on: one single-threaded tokio runtime per thread,
//! each connection (and every task rmcp spawns for its requests and sessions) kept on the thread
//! it was handed to, as actix-web's workers do. Kept because `cargo bench --bench http_load`
//! shows users would feel its absence: on one work-stealing runtime the same server answers
//! about half as many `prompts/get` per second at twice the CPU per request.
//!
//! A request then moves between tasks of one thread: hyper's connection, rmcp's session worker
//! and serve loop wake each other without crossing to another core (on a work-stealing runtime
//! they wake each other across cores, which costs CPU on every request).
//! Connections are dealt round robin; a session's worker stays on the thread of the connection
//! that opened it, so a client that sends its requests over another connection still crosses.
//! Each thread returns its own freed memory when the process goes quiet
//! ([`promptd_base::memory::collect_when_trimmed`]).

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long a stopping runtime waits for the blocking tasks it started: each connection
/// thread's, and the server's own ([`super::serve`]).
pub const SHUTDOWN: std::time::Duration = std::time::Duration::from_millis(100);

/// Connection threads, stopped (their remaining tasks dropped) when this is dropped.
#[derive(Debug)]
pub struct ConnectionThreads {
    handles: Vec<Handle>,
    threads: Vec<std::thread::JoinHandle<()>>,
    next: AtomicUsize,
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl ConnectionThreads {
    /// Starts `n` threads named `promptd-http-<i>`.
    pub fn start(n: NonZeroUsize) -> std::io::Result<ConnectionThreads> {
        let stop = CancellationToken::new();
        let mut handles = Vec::with_capacity(n.get());
        let mut threads = Vec::with_capacity(n.get());
        for i in 0..n.get() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(runtime.handle().clone());
            let stopped = stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("promptd-http-{i}"))
                .spawn(move || {
                    runtime.block_on(async {
                        tokio::select! {
                            () = stopped.cancelled() => {}
                            () = promptd_base::memory::collect_when_trimmed() => {}
                        }
                    });
                    // Dropping the runtime would wait for every blocking task its connections
                    // started (a secret scan, a composition) however long it takes.
                    runtime.shutdown_timeout(SHUTDOWN);
                });
            match thread {
                Ok(t) => threads.push(t),
                Err(e) => {
                    stop.cancel();
                    return Err(e);
                }
            }
        }
        Ok(ConnectionThreads {
            handles,
            threads,
            next: AtomicUsize::new(0),
            stop,
            tracker: TaskTracker::new(),
        })
    }

    /// How many threads serve connections.
    pub fn count(&self) -> usize {
        self.handles.len()
    }

    /// Serves `connection` on the next thread in turn.
    pub fn spawn<F>(&self, connection: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.tracker.spawn_on(connection, &self.handles[i]);
    }

    /// Waits up to `grace` for the connections spawned so far to end (they were told to close).
    pub async fn drain(&self, grace: std::time::Duration) {
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::debug!(
                open = self.tracker.len(),
                "connections still open after {grace:?}; dropped"
            );
        }
    }
}

impl Drop for ConnectionThreads {
    fn drop(&mut self) {
        self.stop.cancel();
        for t in self.threads.drain(..) {
            // A thread only ends by returning from `block_on`; a panic in a task is the task's.
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_dealt_to_every_thread_in_turn_and_drained() {
        let threads = ConnectionThreads::start(NonZeroUsize::new(3).unwrap()).unwrap();
        assert_eq!(threads.count(), 3);
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..6 {
            let tx = tx.clone();
            threads.spawn(async move {
                // Yields once: the task runs on its thread's runtime, not inline.
                tokio::task::yield_now().await;
                tx.send(std::thread::current().name().map(str::to_owned))
                    .unwrap();
            });
        }
        drop(tx);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(threads.drain(std::time::Duration::from_secs(5)));
        let mut names: Vec<_> = rx.iter().map(Option::unwrap).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "promptd-http-0",
                "promptd-http-0",
                "promptd-http-1",
                "promptd-http-1",
                "promptd-http-2",
                "promptd-http-2"
            ]
        );
    }

    #[test]
    fn a_connection_that_outlives_the_grace_is_dropped_with_its_thread() {
        let threads = ConnectionThreads::start(NonZeroUsize::new(1).unwrap()).unwrap();
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        struct SetOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let guard = SetOnDrop(dropped.clone());
        threads.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(threads.drain(std::time::Duration::from_millis(50)));
        assert!(!dropped.load(Ordering::SeqCst));
        drop(threads);
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn every_thread_collects_its_own_heap_when_the_trimmer_collects() {
        let threads = ConnectionThreads::start(NonZeroUsize::new(2).unwrap()).unwrap();
        // One task per thread: it reports its thread's count of collections, then waits for
        // a collection on that thread. Only the trimmer's signal reaches these threads (each
        // count is the thread's own), so other tests collecting meanwhile cannot pass it.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let (ready_tx, done_tx) = (ready_tx.clone(), done_tx.clone());
            threads.spawn(async move {
                let before = promptd_base::memory::collections_on_this_thread();
                ready_tx.send(()).unwrap();
                let waiting = std::time::Instant::now();
                while promptd_base::memory::collections_on_this_thread() == before
                    && waiting.elapsed() < std::time::Duration::from_secs(10)
                {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                let name = std::thread::current().name().map(str::to_owned);
                done_tx
                    .send((
                        name,
                        promptd_base::memory::collections_on_this_thread() > before,
                    ))
                    .unwrap();
            });
        }
        for _ in 0..2 {
            ready_rx.recv().unwrap();
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let trimmer = tokio::spawn(promptd_base::memory::trim_when_quiet());
            promptd_base::memory::note_activity();
            threads.drain(std::time::Duration::from_secs(15)).await;
            trimmer.abort();
        });
        drop(done_tx);
        let mut seen: Vec<_> = done_rx.iter().collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                (Some("promptd-http-0".to_owned()), true),
                (Some("promptd-http-1".to_owned()), true)
            ]
        );
    }
}
