//! Texts for the linearity checks (the `linearity` test and `examples/scan_linearity.rs`): mixed
//! blocks of source, configuration, prose and base64, and the shapes that once made the scan or
//! its explanation superlinear. Fake secrets are assembled from pieces, so that none is written
//! whole here.

/// One block of mixed text, about 24 KB, varied by `n` so that no two blocks are the same.
pub fn block(n: usize) -> String {
    // Fake secrets, assembled so that none is written whole in the source.
    let github = [
        "gh",
        "p_",
        "Zq3Lr2Tv8Kp4Wz",
        "Ny6Hd3JqXb5",
        &format!("{:011}", n),
    ]
    .concat();
    let password = ["Qz7", "Lr2Tv8", &format!("{n:06}")].concat();
    let mut s = String::with_capacity(24 * 1024);
    for i in 0..40 {
        s.push_str(&format!(
            "pub fn handler_{n}_{i}(req: &Request, token: &str) -> Result<Response, Error> {{\n    \
             let key = cache.get(&req.id).ok_or(Error::Missing)?;\n    \
             tracing::debug!(len = token.len(), \"authorised {i}\");\n    \
             Ok(Response::new(format!(\"{{key}}-{{}}\", req.id)))\n}}\n"
        ));
        s.push_str(&format!(
            "  - name: SERVICE_{i}_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: app-{n}\n        key: password\n"
        ));
        s.push_str("Le service répond en moins de 20 ms ; the password is rotated nightly — voir la doc.\n");
    }
    // A base64 blob (an embedded image) and one long line of key=value pairs.
    let blob: String = (0..2048u32)
        .map(|i| {
            let x = (i.wrapping_mul(2_654_435_761).wrapping_add(n as u32)) >> 26;
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[x as usize] as char
        })
        .collect();
    s.push_str(&format!("icon: data:image/png;base64,{blob}\n"));
    for i in 0..200 {
        s.push_str(&format!("opt_{i}=value_{n}_{i}&"));
    }
    s.push('\n');
    s.push_str(&format!("export GITHUB_TOKEN={github}\n"));
    s.push_str(&format!(
        "DATABASE_URL=postgres://app:{password}@db-{n}.internal:5432/app\n"
    ));
    s
}

/// Mixed text of at least `bytes` bytes, from blocks `first`, `first + 1`, ...
pub fn mixed(bytes: usize, first: usize) -> String {
    let mut s = String::with_capacity(bytes + 32 * 1024);
    let mut n = first;
    while s.len() < bytes {
        s.push_str(&block(n));
        n += 1;
    }
    s
}

/// One line of at least `bytes` bytes, without a line break, holding a credential every 60
/// bytes or so: a minified file or a log line, where anything done per finding over its whole
/// line costs the square of the line.
pub fn one_long_line(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 128);
    let mut i = 0u64;
    while s.len() < bytes {
        i += 1;
        let x = i
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        s.push_str(&format!(
            "api_key={x:016x}{i:06}&user=u{i}&page={} ",
            x % 97
        ));
    }
    s
}

/// Short lines of at least `bytes` bytes, nearly each an assignment of a credential.
pub fn many_findings(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 128);
    let mut i = 0u64;
    while s.len() < bytes {
        i += 1;
        let x = i
            .wrapping_mul(2_862_933_555_777_941_757)
            .wrapping_add(3_037_000_493);
        s.push_str(&format!("service_{i}_token = \"{x:016x}{i:08}\"\n"));
    }
    s
}

/// CPU seconds this thread has used: what the scan costs, whatever else the machine runs (wall
/// time on a loaded machine counts the waits for a core too).
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to a local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
