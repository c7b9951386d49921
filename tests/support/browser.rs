//! A real headless Chromium (Debian's package, installed by `scripts/setup`) driven over the
//! DevTools protocol, and the studio's fixture project.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions, Tab};

/// Where Chromium is: `CHROMIUM_BIN`, else Debian's `/usr/bin/chromium`.
pub fn chromium_bin() -> Option<PathBuf> {
    std::env::var_os("CHROMIUM_BIN")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/usr/bin/chromium")))
        .filter(|p| p.is_file())
}

/// Chromium, or a failure that says how to get it.
pub fn require_chromium() -> PathBuf {
    chromium_bin().unwrap_or_else(|| {
        panic!(
            "chromium not found: run scripts/setup (installs Debian's chromium) or set CHROMIUM_BIN"
        )
    })
}

/// A headless Chromium with a fresh profile, none of its background traffic, and a window
/// large enough for the page.
pub fn launch(profile: &Path) -> Browser {
    let flags: Vec<&OsStr> = [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let options = LaunchOptions::default_builder()
        .path(Some(require_chromium()))
        .headless(true)
        .sandbox(false)
        .window_size(Some((1280, 900)))
        .user_data_dir(Some(profile.to_path_buf()))
        .idle_browser_timeout(Duration::from_secs(120))
        .args(flags)
        .build()
        .expect("launch options");
    Browser::new(options).expect("start headless chromium")
}

/// The folder screenshots are saved in (an artifact of the test run).
pub fn screenshot_dir() -> PathBuf {
    let dir = std::env::var_os("PROMPTD_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts"))
        .join("studio");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

/// Saves a PNG of the page as `NAME.png` in [`screenshot_dir`]; returns its path.
pub fn screenshot(tab: &Tab, name: &str) -> PathBuf {
    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .expect("screenshot");
    let path = screenshot_dir().join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    path
}

/// Evaluates `js` in the page and returns its value as JSON (`null` for undefined).
pub fn eval(tab: &Tab, js: &str) -> serde_json::Value {
    let wrapped = format!("JSON.stringify((() => {{ {js} }})() ?? null)");
    let r = tab.evaluate(&wrapped, false).expect("evaluate");
    let text = r
        .value
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "null".into());
    serde_json::from_str(&text).expect("JSON from the page")
}

/// Polls `js` (a function body returning a value) until it returns something truthy; returns
/// it and how long it took. Fails with `what` after `timeout`.
pub fn wait_for(
    tab: &Tab,
    what: &str,
    timeout: Duration,
    js: &str,
) -> (serde_json::Value, Duration) {
    let start = Instant::now();
    loop {
        let v = eval(tab, js);
        let truthy = !matches!(&v, serde_json::Value::Null | serde_json::Value::Bool(false))
            && v != serde_json::json!("")
            && v != serde_json::json!(0);
        if truthy {
            return (v, start.elapsed());
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}; last value {v}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The page's highlighted values: `[text, layer, title]` for each `#messages mark`.
pub fn marks(tab: &Tab) -> serde_json::Value {
    eval(
        tab,
        "return [...document.querySelectorAll('#messages mark')].map(m => [m.textContent, m.dataset.layer, m.title])",
    )
}
