//! The private directory holding gitleaks' pinned config is 0700, and is removed whatever the
//! run's outcome (leaks, clean, error exit, timeout). Its own test binary, because it redirects
//! the process-wide temporary directory.

/// The guard's test support, laid out as in the `it` binary.
mod support {
    #[allow(dead_code)]
    pub mod guard;
}

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use promptd::guard::{Guard, GuardOptions, ScanInput};
use support::guard::{Fake, fake_secret, require_gitleaks};

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn the_scratch_directory_is_private_and_always_removed() {
    let tmp = tempfile::tempdir().unwrap();
    tempfile::env::override_temp_dir(tmp.path()).expect("first override in this process");
    let bin = require_gitleaks();
    let mut g = Fake::new(5);
    let secret_text = format!("token = {}\n", fake_secret("github-pat", &mut g).unwrap());

    // While gitleaks runs, the directory exists with mode 0700: watch for it from a thread.
    let watch_dir = tmp.path().to_path_buf();
    let watcher = std::thread::spawn(move || {
        for _ in 0..2000 {
            if let Some(entry) = std::fs::read_dir(&watch_dir).unwrap().flatten().find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("promptd-gitleaks-")
            }) && let Ok(meta) = entry.metadata()
            {
                return Some(meta.permissions().mode() & 0o777);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    });

    let cases: Vec<(PathBuf, Duration, &str, bool)> = vec![
        (
            bin.clone(),
            Duration::from_secs(30),
            secret_text.as_str(),
            true,
        ),
        (bin.clone(), Duration::from_secs(30), "nothing here\n", true),
        (
            PathBuf::from("/bin/false"),
            Duration::from_secs(30),
            "x\n",
            false,
        ),
        (bin, Duration::from_millis(1), "x\n", false),
    ];
    for (gitleaks, timeout, text, ok) in cases {
        let guard = Guard::new(GuardOptions {
            gitleaks_bin: Some(gitleaks.clone()),
            timeout,
            ..GuardOptions::default()
        })
        .unwrap();
        let result = guard.scan(&[ScanInput::new("t", text)]);
        assert_eq!(result.is_ok(), ok, "{gitleaks:?} {timeout:?}: {result:?}");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "scratch left behind: {left:?}");
    }
    assert_eq!(watcher.join().unwrap(), Some(0o700));
}
