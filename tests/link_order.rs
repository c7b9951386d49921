//! The linker driver of x86_64 Linux builds (`build/cc-ordered`), run on real objects built here
//! with `cc` and read with the real `nm`, in front of a stand-in `cc` that records what it was
//! given.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::process::write_script;

const FLAG: &str = "-Wl,--symbol-ordering-file=";

fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("build/cc-ordered")
}

/// A stand-in `cc` in `dir` that writes its arguments (one a line) to `args.txt`, copies the
/// ordering file it was given to `order.txt`, and exits with status 3.
fn recording_cc(dir: &Path) -> PathBuf {
    let cc = dir.join("fake-cc");
    write_script(
        &cc,
        &format!(
            "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > '{dir}/args.txt'\n\
             for a in \"$@\"; do case $a in {FLAG}*) cp \"${{a#{FLAG}}}\" '{dir}/order.txt' ;; esac; done\n\
             exit 3\n",
            dir = dir.display()
        ),
    );
    cc
}

/// Compiles C `source` into `dir/name.o`; functions take their symbol names from `asm` labels,
/// as ThinLTO's renamed functions are spelled.
fn object(dir: &Path, name: &str, source: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let o = dir.join(format!("{name}.o"));
    let status = Command::new("cc")
        .arg("-c")
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status()
        .unwrap();
    assert!(status.success(), "cc -c {}", c.display());
    o
}

/// Runs the driver with `args` in front of the recording `cc`; its exit code.
fn run(dir: &Path, args: &[String]) -> Option<i32> {
    let status = Command::new(driver())
        .args(args)
        .env("PROMPTD_LINK_CC", recording_cc(dir))
        .env("TMPDIR", dir)
        .status()
        .unwrap();
    status.code()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_link_driver_places_renamed_functions_where_the_list_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = object(
        d,
        "first",
        "void a(void) __asm__(\"alpha.llvm.111\");\nvoid a(void) {}\n\
         void b(void) __asm__(\"beta\");\nvoid b(void) {}\n\
         void g(void) __asm__(\"gamma.llvm.222\");\nvoid g(void) {}\n",
    );
    // The second unit in an archive, as a crate's units are in its `.rlib`.
    let second = object(
        d,
        "second",
        "void g(void) __asm__(\"gamma.llvm.333\");\nvoid g(void) {}\n\
         void n(void) __asm__(\"newly.llvm.444\");\nvoid n(void) {}\n",
    );
    let rlib = d.join("libsecond.rlib");
    let ar = Command::new("ar")
        .arg("rcs")
        .arg(&rlib)
        .arg(&second)
        .status()
        .unwrap();
    assert!(ar.success());
    let order = d.join("symbol-order.txt");
    std::fs::write(
        &order,
        "alpha.llvm.999\nbeta\ngamma.llvm.1\nnewly\ngone.llvm.5\n",
    )
    .unwrap();
    let args = vec![
        "-m64".to_owned(),
        first.display().to_string(),
        rlib.display().to_string(),
        format!("{FLAG}{}", order.display()),
        "-o".to_owned(),
        d.join("out").display().to_string(),
    ];

    // The linker's own status is the driver's.
    assert_eq!(run(d, &args), Some(3));

    // Each listed name as it was, then every function of the same name as this build spells
    // it; a name nothing defines any more stays (the linker skips it).
    assert_eq!(
        lines(&d.join("order.txt")),
        [
            "alpha.llvm.999",
            "alpha.llvm.111",
            "beta",
            "gamma.llvm.1",
            "gamma.llvm.222",
            "gamma.llvm.333",
            "newly",
            "newly.llvm.444",
            "gone.llvm.5",
        ]
    );
    // Every other argument is passed on as it came, in its place; the resolved list is a
    // temporary file, removed after the link.
    let passed = lines(&d.join("args.txt"));
    assert_eq!(passed.len(), args.len());
    for (i, (got, sent)) in passed.iter().zip(&args).enumerate() {
        if i == 3 {
            let resolved = got
                .strip_prefix(FLAG)
                .expect("the ordering flag stays in its place");
            assert_ne!(Path::new(resolved), order);
            assert!(!Path::new(resolved).exists(), "{resolved} left behind");
        } else {
            assert_eq!(got, sent);
        }
    }
    // The list in the repository is left as it is.
    assert_eq!(
        std::fs::read_to_string(&order).unwrap(),
        "alpha.llvm.999\nbeta\ngamma.llvm.1\nnewly\ngone.llvm.5\n"
    );
}

#[test]
fn the_link_driver_passes_any_other_link_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = object(d, "first", "void a(void) {}\n")
        .display()
        .to_string();

    // No symbol order: the arguments as they came (a build script's or a test's link).
    let plain = vec![first.clone(), "-o".to_owned(), "out".to_owned()];
    assert_eq!(run(d, &plain), Some(3));
    assert_eq!(lines(&d.join("args.txt")), plain);

    // A symbol order that cannot be read: the link runs with its arguments unchanged.
    let missing = format!("{FLAG}{}", d.join("no-such-list.txt").display());
    let unreadable = vec![first, missing, "-o".to_owned(), "out".to_owned()];
    assert_eq!(run(d, &unreadable), Some(3));
    assert_eq!(lines(&d.join("args.txt")), unreadable);
    assert!(!d.join("order.txt").exists());
}
