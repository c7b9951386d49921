//! `promptd scan` through the built binary: exit codes 0 / 1 / 2, text and JSON output, the
//! redact policy, and the secret absent from stdout and stderr even with trace logging.

use crate::support::{guard, process};

use std::process::{Output, Stdio};

use guard::{Fake, fake_secret};

fn promptd(args: &[&str], stdin: &str) -> Output {
    let mut cmd = process::promptd();
    cmd.args(args).env("RUST_LOG", "trace");
    process::output_with_input(cmd, stdin.as_bytes())
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn assert_no_leak(o: &Output, secret: &str) {
    assert!(!stdout(o).contains(secret), "stdout leaks the secret");
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains(secret),
        "stderr leaks the secret"
    );
}

struct Files {
    dir: tempfile::TempDir,
    secret: String,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let mut g = Fake::new(9);
    let secret = fake_secret("github-pat", &mut g).unwrap();
    std::fs::write(dir.path().join("clean.md"), "# Notes\nNothing to see.\n").unwrap();
    std::fs::write(
        dir.path().join("leak.env"),
        format!("APP=web\nGITHUB_TOKEN={secret}\n"),
    )
    .unwrap();
    Files { dir, secret }
}

#[test]
fn a_clean_file_exits_0() {
    let f = files();
    let clean = f.dir.path().join("clean.md");
    let o = promptd(&["scan", clean.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(
        stdout(&o),
        "no secrets found in 1 input(s) (scanners: promptd)\n"
    );
}

#[test]
fn a_secret_exits_1_and_is_reported_redacted() {
    let f = files();
    let clean = f.dir.path().join("clean.md");
    let leak = f.dir.path().join("leak.env");
    let o = promptd(
        &["scan", clean.to_str().unwrap(), leak.to_str().unwrap()],
        "",
    );
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("{}:2:14: github-pat ghp_…", leak.display())),
        "{out}"
    );
    assert!(
        out.ends_with("1 secret(s) found in 1 of 2 input(s) (scanners: promptd)\n"),
        "{out}"
    );
    assert_no_leak(&o, &f.secret);
}

#[test]
fn stdin_and_json() {
    let f = files();
    let text = format!("please debug: token={}\n", f.secret);
    for args in [vec!["scan", "--json", "-"], vec!["scan", "--json"]] {
        let o = promptd(&args, &text);
        assert_eq!(o.status.code(), Some(1));
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(json["clean"], false);
        assert_eq!(json["scanners"], serde_json::json!(["promptd"]));
        assert_eq!(json["findings"][0]["ruleId"], "github-pat");
        assert_eq!(json["findings"][0]["label"], "stdin");
        assert_eq!(json["findings"][0]["line"], 1);
        assert!(json.get("redacted").is_none());
        assert_no_leak(&o, &f.secret);
    }
}

#[test]
fn explain_says_which_rule_fired_and_why() {
    let f = files();
    let text = format!("please debug: token={}\n", f.secret);
    let o = promptd(&["scan", "--explain"], &text);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let why = out
        .lines()
        .find(|l| l.trim_start().starts_with("why: "))
        .expect("a why line");
    assert!(why.contains("rule `github-pat`"), "{why}");
    assert!(why.contains("keyword `ghp_`"), "{why}");
    assert!(why.contains("above its floor"), "{why}");
    assert_no_leak(&o, &f.secret);

    let o = promptd(&["scan", "--json", "--explain"], &text);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &json["explanations"][0];
    assert_eq!(e["ruleId"], "github-pat");
    assert_eq!(e["keyword"], "ghp_");
    assert_eq!(e["entropyFloor"], 3.0);
    assert!(e["pattern"].as_str().unwrap().contains("ghp_"));
    assert_eq!(
        json["findings"].as_array().unwrap().len(),
        json["explanations"].as_array().unwrap().len()
    );
    assert_no_leak(&o, &f.secret);

    // Without the flag, no explanations.
    let o = promptd(&["scan", "--json"], &text);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json.get("explanations").is_none());
}

#[test]
fn redact_policy_prints_the_redacted_text() {
    let f = files();
    let text = format!("token={}\nbye\n", f.secret);
    let o = promptd(&["scan", "--policy", "redact", "-"], &text);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "token=[REDACTED:github-pat#1]\nbye\n");
    assert_no_leak(&o, &f.secret);

    let o = promptd(&["scan", "--policy", "redact", "--json", "-"], &text);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        json["redacted"][0]["text"],
        "token=[REDACTED:github-pat#1]\nbye\n"
    );
    assert_no_leak(&o, &f.secret);
}

#[test]
fn a_bad_rules_file_exits_2_naming_file_and_line() {
    let o = promptd(
        &[
            "scan",
            "--rules",
            "tests/fixtures/guard/err_secret_group.toml",
            "-",
        ],
        "hello\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stdout(&o),
        "error: tests/fixtures/guard/err_secret_group.toml:4: rule `one-group`: secretGroup 3 is out of range: the regex has 1 capture group(s)\n"
    );
}

#[test]
fn scanner_and_input_errors_exit_2() {
    let o = promptd(
        &["scan", "--gitleaks", "/nonexistent/gitleaks", "-"],
        "hi\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("/nonexistent/gitleaks"),
        "{}",
        stdout(&o)
    );

    let o = promptd(&["scan", "--gitleaks", "/bin/false", "--json", "-"], "hi\n");
    assert_eq!(o.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        json["error"].as_str().unwrap().contains("exit status 1"),
        "{json}"
    );

    let o = promptd(&["scan", "/nonexistent/file.txt"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("cannot read /nonexistent/file.txt"));
}

#[test]
fn gitleaks_config_from_the_environment_is_the_rules_file() {
    let f = files();
    let leak = f.dir.path().join("leak.env");
    // replace_builtin.toml has only an ACME rule: the GitHub token is not looked for.
    let o = process::promptd()
        .args(["scan", leak.to_str().unwrap()])
        .env(
            "GITLEAKS_CONFIG",
            "tests/fixtures/guard/replace_builtin.toml",
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn a_relative_or_bare_gitleaks_path_is_resolved_before_the_scratch_directory_is_entered() {
    // `true` found on PATH by its bare name, and the same binary by a relative path: both start
    // (and then fail closed, since `true` prints no report), instead of "cannot start".
    let o = promptd(&["scan", "--gitleaks", "true", "-"], "hi\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("unreadable report"), "{}", stdout(&o));
    let o = process::promptd()
        .args(["scan", "--gitleaks", "../../bin/true", "-"])
        .current_dir("/usr/lib")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("unreadable report"), "{}", stdout(&o));
}
