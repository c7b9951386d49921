//! Freed memory returned to the system once the process goes quiet. mimalloc keeps the pages of
//! freed blocks for reuse and gives them back (purges them) only on later allocator activity,
//! so a server that goes idle right after a large answer (the listing of a large registry,
//! built and serialized more than once) would hold that memory until its next request.
//!
//! Whatever does work worth trimming after says so ([`note_activity`]: every MCP request,
//! every snapshot swap); [`trim_when_quiet`] waits until [`QUIET`] passes without any and then
//! collects once. It sleeps while the process is idle: no timer runs between bursts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How long without activity before freed memory is returned.
pub const QUIET: Duration = Duration::from_millis(200);

static ACTIVITY: AtomicU64 = AtomicU64::new(0);
static WAKE: Notify = Notify::const_new();
static COLLECT_THERE: Notify = Notify::const_new();

std::thread_local! {
    static COLLECTIONS_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Records that work was done whose garbage should be returned once things are quiet.
pub fn note_activity() {
    ACTIVITY.fetch_add(1, Ordering::Relaxed);
    WAKE.notify_one();
}

/// Runs until dropped: after each burst of activity, once [`QUIET`] has passed without any,
/// returns freed memory to the system ([`collect`]).
pub async fn trim_when_quiet() {
    loop {
        WAKE.notified().await;
        loop {
            let seen = ACTIVITY.load(Ordering::Relaxed);
            tokio::time::sleep(QUIET).await;
            if ACTIVITY.load(Ordering::Relaxed) == seen {
                break;
            }
        }
        collect();
        COLLECT_THERE.notify_waiters();
    }
}

/// Runs until dropped, on a thread that serves requests beside the one running
/// [`trim_when_quiet`]: collects this thread's heap each time that one collects its own (a
/// thread's empty pages go back to the system only from that thread).
pub async fn collect_when_trimmed() {
    loop {
        COLLECT_THERE.notified().await;
        collect();
    }
}

/// Frees what the calling thread's allocator heap holds empty and purges every page the
/// allocator keeps for reuse (mimalloc, the binary's allocator and the syntax parsers').
pub fn collect() {
    // SAFETY: mi_collect takes no pointers; it may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
    COLLECTIONS_HERE.with(|n| n.set(n.get() + 1));
}

/// How many times [`collect`] has run on the calling thread (each thread's heap is its own).
pub fn collections_on_this_thread() -> u64 {
    COLLECTIONS_HERE.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_is_collected_once_activity_has_been_quiet_for_a_while() {
        let trimmer = tokio::spawn(trim_when_quiet());
        let before = collections_on_this_thread();
        // Busy: activity every 50 ms for 0.6 s postpones the collection...
        let busy = std::time::Instant::now();
        while busy.elapsed() < Duration::from_millis(600) {
            note_activity();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // ...which follows once QUIET has passed without any.
        let quiet = std::time::Instant::now();
        while collections_on_this_thread() == before && quiet.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let waited = quiet.elapsed();
        trimmer.abort();
        assert!(
            collections_on_this_thread() > before,
            "no collection after the activity stopped"
        );
        assert!(
            waited >= QUIET / 2,
            "collected {waited:?} after the last activity, before it was quiet"
        );
    }
}
