//! Hostile and odd entries in prompt folders, and saves that replace a file: a subfolder whose
//! name is not UTF-8, a folder deeper than `PATH_MAX`, a `system` that is a file or a symbolic
//! link loop, and an editor that saves by deleting the file and creating it again. Each odd
//! entry is reported by path and left out while everything beside it is served, by the CLI and
//! by a running server, which keeps serving (and watching) the folder once the entry is gone;
//! a file saved by delete + create is never an unknown prompt, and a file really deleted is
//! gone after the grace period.

use crate::support::mcp::{self, get_text};
use crate::support::process::{promptd, run_bounded};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use promptd::library::{LibraryOptions, PromptLibrary};
use promptd::registry::Touched;

const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RSS_MIB: f64 = 200.0;

/// The odd entries a prompt folder may hold.
#[derive(Debug, Clone, Copy)]
enum Odd {
    /// `.claude/commands/bad\xffdir/` with a command inside.
    NotUtf8Folder,
    /// `.claude/commands/deep/ddd…/ddd…/…`, longer than `PATH_MAX`.
    PathTooLong,
    /// `prompts/system`, a file.
    SystemIsAFile,
    /// `prompts/system`, a symbolic link to itself.
    SystemLinkLoop,
}

const ALL: [Odd; 4] = [
    Odd::NotUtf8Folder,
    Odd::PathTooLong,
    Odd::SystemIsAFile,
    Odd::SystemLinkLoop,
];

/// A repository with one discovered prompt folder holding `ok` and the odd entry.
struct Case {
    repo: tempfile::TempDir,
    /// The prompt folder.
    folder: PathBuf,
    /// The odd entry (removed by [`Case::remove_odd`]).
    odd: PathBuf,
    /// What the report of the odd entry says, from its path's end to the reason.
    report: &'static str,
    /// The text `ok` renders to.
    ok_text: &'static str,
}

impl Case {
    fn new(odd: Odd) -> Case {
        let repo = tempfile::tempdir().unwrap();
        let nested = matches!(odd, Odd::NotUtf8Folder | Odd::PathTooLong);
        let folder = repo.path().join(if nested {
            ".claude/commands"
        } else {
            "prompts"
        });
        std::fs::create_dir_all(&folder).unwrap();
        let ok_text = if nested { "Fine\n" } else { "ok\n" };
        std::fs::write(folder.join("ok.md"), ok_text).unwrap();
        let (odd_path, report) = match odd {
            Odd::NotUtf8Folder => {
                use std::os::unix::ffi::OsStrExt;
                let dir = folder.join(std::ffi::OsStr::from_bytes(b"bad\xffdir"));
                std::fs::create_dir(&dir).unwrap();
                std::fs::write(dir.join("inner.md"), "Inner\n").unwrap();
                (
                    dir,
                    "/bad\\xffdir:1:1: warning[skipped]: skipped: name is not UTF-8",
                )
            }
            Odd::PathTooLong => {
                let dir = folder.join("deep");
                std::fs::create_dir(&dir).unwrap();
                deeper_than_path_max(&dir);
                (dir, ":1:1: warning[skipped]: skipped: path too long")
            }
            Odd::SystemIsAFile => {
                let file = folder.join("system");
                std::fs::write(&file, "not a folder\n").unwrap();
                (
                    file,
                    "/prompts/system:1:1: warning[skipped]: skipped: not a folder",
                )
            }
            Odd::SystemLinkLoop => {
                let link = folder.join("system");
                std::os::unix::fs::symlink("system", &link).unwrap();
                (
                    link,
                    "/prompts/system:1:1: warning[skipped]: skipped: symbolic link loop",
                )
            }
        };
        Case {
            repo,
            folder,
            odd: odd_path,
            report,
            ok_text,
        }
    }

    fn remove_odd(&self) {
        let meta = std::fs::symlink_metadata(&self.odd).unwrap();
        if meta.is_dir() {
            std::fs::remove_dir_all(&self.odd).unwrap();
        } else {
            std::fs::remove_file(&self.odd).unwrap();
        }
    }
}

/// Folders of 200-byte names below `base`, opened one inside the other (a path this long
/// cannot be named whole), with a command at the bottom.
fn deeper_than_path_max(base: &Path) {
    use rustix::fs::{Mode, OFlags, mkdirat, openat};
    let name = "d".repeat(200);
    let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
    let mut dir = openat(rustix::fs::CWD, base, flags, Mode::empty()).unwrap();
    for _ in 0..24 {
        mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        dir = openat(&dir, name.as_str(), flags, Mode::empty()).unwrap();
    }
    let file = openat(
        &dir,
        "bottom.md",
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&file, b"Bottom\n").unwrap();
}

/// `promptd ARGS` in `repo`, bounded in time and memory.
fn run(repo: &Path, args: &[&str]) -> crate::support::process::Bounded {
    let mut cmd = promptd();
    cmd.args(args).current_dir(repo);
    let run = run_bounded(cmd, b"", TIMEOUT);
    assert!(run.exited(), "{args:?} hung: {run:?}");
    assert!(run.peak_rss_mib < MAX_RSS_MIB, "{args:?}: {run:?}");
    run
}

#[test]
fn an_odd_entry_is_reported_and_its_siblings_are_listed_and_served() {
    for odd in ALL {
        let case = Case::new(odd);
        let repo = case.repo.path();
        let list = run(repo, &["list", "--json", "--no-builtin-prompts"]);
        let v: serde_json::Value =
            serde_json::from_str(&list.stdout).unwrap_or_else(|e| panic!("{odd:?}: {e}: {list:?}"));
        let names: Vec<&str> = v["data"]["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["category"] == "user")
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ok"], "{odd:?}: {list:?}");
        assert!(
            list.stderr.contains(case.report),
            "{odd:?}: list's stderr reports `{}`: {}",
            case.report,
            list.stderr
        );
        assert!(!list.stderr.contains("error[root]"), "{odd:?}: {list:?}");

        let get = run(repo, &["get", "ok", "--no-builtin-prompts"]);
        assert_eq!(get.code(), Some(0), "{odd:?}: {get:?}");
        assert_eq!(get.stdout, case.ok_text, "{odd:?}");

        // A warning for `check`: the folder's prompts are fine.
        let check = run(repo, &["check", "--no-builtin-prompts"]);
        assert!(check.stdout.contains(case.report), "{odd:?}: {check:?}");
        assert_eq!(check.code(), Some(0), "{odd:?}: {check:?}");
    }
}

#[test]
fn a_reload_after_the_odd_entry_is_removed_drops_its_report() {
    for odd in ALL {
        let case = Case::new(odd);
        let lib = PromptLibrary::open(LibraryOptions {
            cwd: case.repo.path().to_path_buf(),
            no_builtin_prompts: true,
            ..Default::default()
        })
        .unwrap();
        let reports = |lib: &PromptLibrary| -> Vec<String> {
            lib.snapshot()
                .registry
                .diagnostics()
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert!(
            reports(&lib).iter().any(|d| d.ends_with(case.report)),
            "{odd:?}: {:?}",
            reports(&lib)
        );
        assert!(lib.snapshot().registry.get("ok").is_some(), "{odd:?}");
        case.remove_odd();
        std::fs::write(case.folder.join("new.md"), "New\n").unwrap();
        // What a watcher names: the removed entry and the new file.
        let canonical = std::fs::canonicalize(&case.folder).unwrap();
        let touched = Touched::new([
            canonical.join(case.odd.file_name().unwrap()),
            canonical.join("new.md"),
        ]);
        lib.reload_touched(Some(&touched));
        assert_eq!(reports(&lib), Vec::<String>::new(), "{odd:?}");
        let snapshot = lib.snapshot();
        assert!(snapshot.registry.get("ok").is_some(), "{odd:?}");
        assert!(snapshot.registry.get("new").is_some(), "{odd:?}");
    }
}

/// Waits until `name` is served as `text`.
async fn served_soon(s: &mcp::Session, name: &str, text: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = get_text(s, name).await;
        if got.as_deref() == Ok(text) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {name} is {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_server_serves_beside_an_odd_entry_and_after_it_is_removed() {
    for odd in ALL {
        let case = Case::new(odd);
        let mut s = mcp::stdio(case.repo.path(), &["--no-builtin-prompts"]).await;
        assert_eq!(
            get_text(&s, "ok").await.as_deref(),
            Ok(case.ok_text),
            "{odd:?}: {}",
            s.stderr()
        );
        assert!(
            s.stderr().contains(case.report),
            "{odd:?}: the server logs the report: {}",
            s.stderr()
        );
        case.remove_odd();
        // The folder is still watched: a new file is served, and the old one still is.
        std::fs::write(case.folder.join("new.md"), "New\n").unwrap();
        s.next_change("the new file").await;
        served_soon(&s, "new", "New\n", &format!("{odd:?}")).await;
        assert_eq!(get_text(&s, "ok").await.as_deref(), Ok(case.ok_text));
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_by_delete_and_create_is_never_an_unknown_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.md");
    let version = |n: usize| format!("version {n}\n");
    std::fs::write(&file, version(0)).unwrap();
    let mut s = mcp::stdio(dir.path(), &["--prompts", dir.path().to_str().unwrap()]).await;
    assert_eq!(get_text(&s, "live").await.unwrap(), version(0));

    const SAVES: usize = 80;
    let writer_file = file.clone();
    let writer = std::thread::spawn(move || {
        let mut rng = fastrand::Rng::with_seed(7);
        for n in 1..=SAVES {
            std::fs::remove_file(&writer_file).unwrap();
            // Long enough, often, for a reload to land between the two.
            std::thread::sleep(Duration::from_millis(rng.u64(0..80)));
            std::fs::write(&writer_file, format!("version {n}\n")).unwrap();
            std::thread::sleep(Duration::from_millis(rng.u64(5..40)));
        }
    });
    let (mut answers, mut unknown, mut other) = (0, 0, Vec::new());
    while !writer.is_finished() {
        match get_text(&s, "live").await {
            Ok(t) if t.starts_with("version ") => {}
            Ok(t) => other.push(t),
            Err(e) if e.contains("unknown prompt") => unknown += 1,
            Err(e) => other.push(e),
        }
        answers += 1;
    }
    writer.join().unwrap();
    eprintln!("{answers} answers during {SAVES} saves by delete + create: {unknown} unknown");
    assert!(answers >= 100, "enough answers: {answers}");
    assert_eq!(unknown, 0, "of {answers} answers");
    assert!(other.is_empty(), "{other:?}");
    served_soon(&s, "live", &version(SAVES), "the last save").await;

    // Deleted for good: served through the grace period, then gone, and clients are told.
    while s.changed.try_recv().is_ok() {}
    let deleted = Instant::now();
    std::fs::remove_file(&file).unwrap();
    s.next_change("the deletion").await;
    let gone_after = deleted.elapsed();
    let e = get_text(&s, "live").await.unwrap_err();
    assert!(e.contains("unknown prompt"), "{e}");
    assert!(
        gone_after >= promptd::registry::REMOVED_GRACE,
        "served for {gone_after:?} after the deletion"
    );
    s.close().await;
}
