//! The real `promptd` binary: list, get and check, with exit codes and streams.

use std::path::Path;
use std::process::Output;

use crate::support::process;

fn promptd(args: &[&str]) -> Output {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    process::promptd()
        .args(args)
        .current_dir(fixtures)
        .output()
        .expect("run promptd")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn get_renders_plain_text_with_coerced_arguments() {
    let o = promptd(&[
        "--prompts",
        "library/prompts",
        "get",
        "greet",
        "--arg",
        "who=Ada",
        "--arg",
        "times=2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "Hello Ada! Hello Ada! \n");
}

#[test]
fn get_json_prints_the_envelope() {
    let o = promptd(&[
        "--prompts",
        "library/prompts",
        "--now",
        "2026-01-15",
        "get",
        "greet",
        "--args-json",
        r#"{"who": "Bo", "times": 1}"#,
        "--json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["success"], true);
    assert_eq!(v["data"]["prompt"]["provenance"]["times"], "user");
    assert_eq!(
        v["data"]["prompt"]["templateArgsUsed"],
        serde_json::json!({"times": 1, "who": "Bo"})
    );
    assert_eq!(v["metadata"]["templateArgsProvided"], 2);
}

#[test]
fn get_errors_exit_1_with_a_clear_message() {
    let o = promptd(&[
        "--prompts",
        "library/prompts",
        "get",
        "greet",
        "--arg",
        "times=many",
        "--arg",
        "who=x",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("argument `times`: expected an integer, got \"many\""),
        "{err}"
    );

    // A whole number beyond i64 is refused, not saturated to i64::MAX.
    let o = promptd(&[
        "get",
        "write_tests",
        "--args-json",
        r#"{"target": "src/lib.rs", "max_tests": 1e300}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("9223372036854775807"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("argument `max_tests`: expected an integer from -2^63 to 2^63-1, got 1e+300"),
        "{err}"
    );

    let o = promptd(&["get", "no_such_prompt"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown prompt `no_such_prompt`"));

    let o = promptd(&["get", "code_review", "--arg", "oops"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--arg `oops`: expected KEY=VALUE"));
}

#[test]
fn list_shows_builtins_and_user_prompts() {
    let o = promptd(&["--prompts", "library/prompts", "list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for name in ["code_review", "commit_message", "greet", "enhance_prompt"] {
        assert!(out.contains(name), "{name} missing from:\n{out}");
    }
    let o = promptd(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["data"]["totalCount"].as_u64().unwrap() >= 8);
    assert_eq!(v["metadata"]["contentIncluded"], false);
}

#[test]
fn check_exit_codes() {
    let o = promptd(&["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("0 error(s), 0 warning(s)"));

    let o = promptd(&["--prompts", "check/warnings", "check"]);
    assert_eq!(o.status.code(), Some(0), "warnings only: exit 0");
    assert!(stdout(&o).contains("warning[plain-fallback]"));

    let o = promptd(&["--prompts", "check/errors", "check"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("error[include-cycle]"));
}

/// A default is checked as a supplied value would be: outside its enum, of the wrong type or
/// out of bounds it is an error naming the argument and its line; a templated default is
/// checked when it renders.
#[test]
fn check_refuses_a_default_a_caller_could_not_pass() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("paint.md"),
        "---\ndescription: Paint\narguments:\n  colour:\n    enum: [red, green]\n    default: purple\n  coats:\n    type: integer\n    minimum: 1\n    default: 0\n  day:\n    default: \"{{ today }}\"\n---\nPaint {{ coats }} coats of {{ colour }} on {{ day }}.\n",
    )
    .unwrap();
    let prompts = dir.path().to_str().unwrap();
    let o = promptd(&["--prompts", prompts, "check"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "paint.md:4:1: error[argument-default]: the default of argument `colour` is refused"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "paint.md:7:1: error[argument-default]: the default of argument `coats` is refused"
        ),
        "{out}"
    );
    assert!(
        !out.contains("`day`"),
        "a templated default is checked when it renders: {out}"
    );
    // The same value passed explicitly is refused too.
    let o = promptd(&[
        "--prompts",
        prompts,
        "get",
        "paint",
        "--arg",
        "colour=purple",
    ]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_jinja_typo_is_an_error_on_get_and_check_never_raw_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("greet.md"),
        "---\ndescription: Greet\n---\n{% if name %}yes{% endiff %}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("hello.md"),
        "---\ndescription: Hello\n---\nHello\nthere {{ name }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("report.md"),
        "---\ndescription: Report\n---\nChart {{ .Values.image }} for {{ team }}.\n",
    )
    .unwrap();
    let prompts = dir.path().to_str().unwrap();
    for (name, at) in [("greet", "greet.md:4:"), ("hello", "hello.md:5:")] {
        let o = promptd(&["--prompts", prompts, "get", name, "--arg", "name=Ada"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(
            stdout(&o).is_empty(),
            "no raw template text: {}",
            stdout(&o)
        );
        assert!(err.contains(at) && err.contains("syntax error"), "{err}");
    }
    let o = promptd(&["--prompts", prompts, "check"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("greet.md:4:"), "{out}");
    assert!(out.contains("error[template-syntax]"), "{out}");
    assert!(out.contains("hello.md:5:"), "{out}");
    // A file shown not to be Jinja (a Helm chart's `{{ .Values.image }}`) is still served.
    assert!(
        out.contains("report.md:4:1: warning[plain-fallback]"),
        "{out}"
    );
    let o = promptd(&["--prompts", prompts, "get", "report", "--arg", "team=core"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "Chart {{ .Values.image }} for core.\n");
}

#[test]
fn malformed_config_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join(".ado-mcp-config.json");
    std::fs::write(
        &cfg,
        "{\n  \"project\": \"x\"\n  \"organization\": \"y\"\n}",
    )
    .unwrap();
    let o = promptd(&["--config", cfg.to_str().unwrap(), "list"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}:3:3: malformed JSON", cfg.display())),
        "{err}"
    );
}

#[test]
fn files_that_fail_to_load_are_counted_and_named_by_list_and_wit_get_prompts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ok.md"),
        "---\ndescription: Fine\n---\nFine\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("broken.md"),
        "---\ndescription: [unclosed\n---\nBody\n",
    )
    .unwrap();
    let prompts = dir.path().to_str().unwrap();
    let o = promptd(&["--prompts", prompts, "--no-builtin-prompts", "list"]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 prompt file not loaded: "), "{err}");
    assert!(err.contains("broken.md:3:1"), "{err}");
    assert!(stdout(&o).contains("ok"), "{}", stdout(&o));
    let o = promptd(&[
        "--prompts",
        prompts,
        "--no-builtin-prompts",
        "list",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The listing's partial success: served prompts, and each failed file as a warning and in
    // `metadata.notLoaded`.
    assert_eq!(v["success"], true);
    let names: Vec<&str> = v["data"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"ok") && !names.contains(&"broken"),
        "{names:?}"
    );
    let failed = &v["metadata"]["notLoaded"][0];
    assert!(
        failed["path"].as_str().unwrap().ends_with("broken.md"),
        "{v}"
    );
    assert_eq!(failed["line"], 3);
    assert!(failed["column"].as_u64().unwrap() >= 1);
    assert!(failed["message"].as_str().unwrap().contains("YAML"), "{v}");
    let warning = v["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("broken.md:3:1") && warning.contains("not loaded"),
        "{warning}"
    );
}
