//! A studio served over HTTP from a project folder with a token, and a headless Chromium tab
//! opened on one of its pages ([`super::browser`] drives it).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use headless_chrome::{Browser, Tab};

use super::browser::launch;
use super::mcp::http_server_with_env;

/// A studio and a tab on it. The server, the browser and the runtime live as long as it does.
pub struct Page {
    pub tab: Arc<Tab>,
    /// The server's stderr so far.
    pub log: Arc<Mutex<String>>,
    /// The studio's address (`http://127.0.0.1:PORT`).
    pub base: String,
    _browser: Browser,
    _profile: tempfile::TempDir,
    _server: tokio::process::Child,
    _rt: tokio::runtime::Runtime,
}

impl Page {
    /// Serves `dir` with `token` (and `args` and `env` besides) and opens the page at
    /// `/?token=…&query`, waiting for it to load; the tab waits `timeout` for elements.
    pub fn open(
        rt: tokio::runtime::Runtime,
        dir: &Path,
        token: &str,
        args: &[&str],
        env: &[(&str, &str)],
        query: &str,
        timeout: Duration,
    ) -> Page {
        let mut all = vec!["--auth-token", token];
        all.extend_from_slice(args);
        let (server, url, log) = rt.block_on(http_server_with_env(dir, &all, env));
        let profile = tempfile::tempdir().unwrap();
        let browser = launch(profile.path());
        let tab = browser.new_tab().unwrap();
        tab.set_default_timeout(timeout);
        let base = url.trim_end_matches("/mcp").to_string();
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("&{query}")
        };
        tab.navigate_to(&format!("{base}/?token={token}{query}"))
            .unwrap();
        tab.wait_until_navigated().unwrap();
        Page {
            tab,
            log,
            base,
            _browser: browser,
            _profile: profile,
            _server: server,
            _rt: rt,
        }
    }
}
